#!/usr/bin/python3
"""Limits at scale: 10,000 clients at once against maxclients, and tcp-keepalive on the
server's sockets. (The smaller limits are tested where they live: maxclients 2,
proto-max-bulk-len, client-query-buffer-limit and timeout in test_serve.py, the normal and
pubsub output limits in test_config_safety.py, the replica's in test_repl_primary.py.)

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_limits.py [NAME...]
"""

import os
import re
import resource
import selectors
import socket
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import HOST, Skip, eq, ok, run_tests, test  # noqa: E402

CLIENTS = 10000
EXTRA = 20
CLOSE_WAIT = 60.0  # upper bound for reading a refused client's reply; never a timing check
REFUSED = b"-ERR max number of clients reached\r\n"


def raise_nofile(need):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < need:
        raise Skip("RLIMIT_NOFILE hard limit %d < %d: cannot open %d clients"
                   % (hard, need, CLIENTS))
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))


def read_all(socks):
    """Each socket's bytes until it closes (or CLOSE_WAIT passes), read together."""
    sel = selectors.DefaultSelector()
    got = {s: b"" for s in socks}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    open_left = len(socks)
    while open_left:
        events = sel.select(CLOSE_WAIT)
        if not events:
            break
        for key, _ in events:
            data = key.fileobj.recv(4096)
            if data:
                got[key.fileobj] += data
            else:
                sel.unregister(key.fileobj)
                open_left -= 1
    return [got[s] for s in socks]


def ping(s):
    s.setblocking(True)
    s.settimeout(CLOSE_WAIT)
    s.sendall(b"PING\r\n")
    return s.recv(64)


@test
def ten_thousand_clients_fit_maxclients_and_the_excess_get_valkeys_error(h):
    raise_nofile(CLIENTS + EXTRA + 200)
    srv = h.keyshift("--maxclients", str(CLIENTS), unixsocket=False, name="ks-10k")
    eq(srv.cli("config", "get", "maxclients"), "maxclients\n%d" % CLIENTS,
       "maxclients kept (the server raised its descriptor limit)")
    clients = []
    try:
        for _ in range(CLIENTS):
            s = socket.create_connection((HOST, srv.port), timeout=CLOSE_WAIT)
            clients.append(s)
        # Every one of them is a client once it was answered; ask the last and the first.
        eq(ping(clients[-1]), b"+PONG\r\n", "the 10,000th client is served")
        eq(ping(clients[0]), b"+PONG\r\n", "the first client is served")
        m = re.search(r"connected_clients:(\d+)", srv.cli("info", "clients", check=False))
        # redis-cli is refused too while all 10,000 are connected.
        ok(m is None, "redis-cli as client 10,001 is refused")
        excess = [socket.create_connection((HOST, srv.port), timeout=CLOSE_WAIT)
                  for _ in range(EXTRA)]
        replies = read_all(excess)
        eq(replies, [REFUSED] * EXTRA, "each excess client gets Valkey's error and is closed")
        for s in excess:
            s.close()
        eq(ping(clients[CLIENTS // 2]), b"+PONG\r\n", "a client in the middle is still served")
        clients.pop().close()
        clients.pop().close()
    finally:
        for s in clients[1:]:
            s.close()
    # One slot is kept by clients[0]; redis-cli gets in once the others left.
    out = ""
    for _ in range(200):
        out = srv.cli("info", "clients", check=False)
        if "connected_clients:" in out:
            break
    ok("connected_clients:" in out, "a new client is served once the others left: %s" % out)
    eq(ping(clients[0]), b"+PONG\r\n", "the first client still works")
    clients[0].close()


@test
def tcp_keepalive_is_set_on_accepted_sockets_and_0_turns_it_off(h):
    for value, want in (("300", True), ("0", False)):
        srv = h.keyshift("--tcp-keepalive", value, unixsocket=False, name="ks-ka-%s" % value)
        with socket.create_connection((HOST, srv.port), timeout=CLOSE_WAIT) as s:
            eq(ping(s), b"+PONG\r\n", "a client")
            local_port = s.getsockname()[1]
            out = subprocess.run(["ss", "-tnoH", "state", "established",
                                  "( sport = :%d and dport = :%d )" % (srv.port, local_port)],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=30).stdout.decode()
            ok(out.strip() != "", "ss sees the server's side of the connection")
            eq("keepalive" in out, want,
               "tcp-keepalive %s: the server's socket %s a keepalive timer: %s"
               % (value, "has" if want else "has no", out.strip()))
        srv.stop()
        h.forget(srv)


if __name__ == "__main__":
    run_tests()
