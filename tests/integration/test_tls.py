#!/usr/bin/python3
"""TLS: keyshift's clients (import, verify, bench) against Debian's redis-server 7.0 started
with tls-port and port 0, and `keyshift serve --tls-port` against redis-cli --tls,
python3-redis (ssl=True) and keyshift's own clients, and replication over TLS with
redis-server 7.0 as primary and as replica (tls-replication yes).

Certificates are made here with openssl: a CA, a server certificate for localhost and
127.0.0.1, a client certificate, and a second CA that signed none of them.

Run: KEYSHIFT_BIN=build/keyshift /usr/bin/python3 tests/integration/test_tls.py [NAME...]
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import repl_helpers  # noqa: E402
from harness import (HOST, Server, SetupError, Skip, eq, free_port, keyshift_bin, ok,  # noqa: E402
                     redis_module, run_tests, test)

_CERTS = {}


def certs(h):
    """The test's PKI, made once per run in the harness's directory."""
    if _CERTS:
        return _CERTS
    if shutil.which("openssl") is None:
        raise Skip("no openssl binary")
    d = h.path("pki")
    os.makedirs(d)

    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)

    for ca in ("ca", "other-ca"):
        run("req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", ca + ".key",
            "-out", ca + ".crt", "-days", "2", "-subj", "/CN=keyshift test " + ca)
    for name, san in (("server", "DNS:localhost,IP:127.0.0.1"), ("client", "DNS:client")):
        run("req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", name + ".key", "-out",
            name + ".csr", "-subj", "/CN=" + name)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\n" % san)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext")
    # A directory of hashed CA certificates, for --cacertdir and tls-ca-cert-dir.
    os.makedirs(os.path.join(d, "cadir"))
    shutil.copy(os.path.join(d, "ca.crt"), os.path.join(d, "cadir", "ca.pem"))
    run("rehash", "cadir")
    for k in ("ca", "other-ca", "server", "client"):
        _CERTS[k + ".crt"] = os.path.join(d, k + ".crt")
        _CERTS[k + ".key"] = os.path.join(d, k + ".key")
    _CERTS["cadir"] = os.path.join(d, "cadir")
    return _CERTS


def tls_ping(port, ca, cert=None, key=None, timeout=5.0):
    """One PING over TLS with Python's ssl module; returns the raw reply."""
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    with socket.create_connection((HOST, port), timeout=timeout) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"PING\r\n")
            return s.recv(100)


class TlsServer(Server):
    """A server listening on a TLS port only (port 0): ready once PING over TLS answers."""

    def __init__(self, *args, tls_port, ca, cert, key, **kw):
        super().__init__(*args, **kw)
        self.tls_port = tls_port
        self.ca, self.cert, self.key = ca, cert, key

    def wait_ready(self, timeout=20.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SetupError("%s exited with %s during startup; log:\n%s"
                                 % (self.name, self.proc.returncode, self.log()[-3000:]))
            try:
                raw = tls_ping(self.tls_port, self.ca, self.cert, self.key, timeout=2)
                if raw.startswith(b"+PONG") or raw.startswith(b"-NOAUTH"):
                    return self
                last = raw
            except (OSError, ssl.SSLError) as e:
                last = e
            time.sleep(0.05)
        raise SetupError("%s did not answer PING over TLS (last: %r); log:\n%s"
                         % (self.name, last, self.log()[-3000:]))

    def url(self, db=None):
        return "rediss://%s:%d%s" % (HOST, self.tls_port, "" if db is None else "/%d" % db)

    def redis(self, **kw):
        redis = redis_module()
        kw.setdefault("ssl_certfile", self.cert)
        kw.setdefault("ssl_keyfile", self.key)
        return redis.Redis(host=HOST, port=self.tls_port, ssl=True, ssl_ca_certs=self.ca,
                           socket_timeout=30, **kw)

    def cli(self, *args, cert=True, check=True):
        argv = ["redis-cli", "-h", HOST, "-p", str(self.tls_port), "--tls", "--cacert", self.ca]
        if cert:
            argv += ["--cert", self.cert, "--key", self.key]
        p = subprocess.run(argv + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        out = p.stdout.decode("utf-8", "replace").rstrip("\n")
        if check and p.returncode != 0:
            raise AssertionError("redis-cli %s failed (%d): %s" % (args, p.returncode, out))
        return out


def start_tls(h, kind, *directives, plain_port=False, name=None):
    """redis-server 7.0 or keyshift serve with tls-port (and port 0 unless plain_port)."""
    c = certs(h)
    name = name or kind
    h.counter += 1
    workdir = h.path("%s-%d" % (name, h.counter))
    os.makedirs(workdir)
    for _ in range(3):
        tls_port = free_port()
        port = free_port() if plain_port else 0
        tls = ["--tls-port", str(tls_port), "--tls-cert-file", c["server.crt"],
               "--tls-key-file", c["server.key"], "--tls-ca-cert-file", c["ca.crt"]]
        if kind == "redis":
            argv = ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
                    "--logfile", ""] + tls
        else:
            argv = [keyshift_bin(), "serve", "--port", str(port), "--bind", HOST, "--save", "",
                    "--dir", workdir] + tls
        argv += [str(d) for d in directives]
        srv = TlsServer(name, argv, port, workdir, tls_port=tls_port, ca=c["ca.crt"],
                        cert=c["client.crt"], key=c["client.key"])
        srv.start()
        try:
            srv.wait_ready()
        except SetupError:
            srv.stop()
            if "in use" in srv.log():
                continue
            raise
        h.servers.append(srv)
        return srv
    raise SetupError("no free port for %s" % name)


def keyshift(*args, timeout=120):
    p = subprocess.run([keyshift_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def client_flags(h, cert=True, ca="ca.crt"):
    c = certs(h)
    flags = ["--cacert", c[ca]]
    if cert:
        flags += ["--cert", c["client.crt"], "--key", c["client.key"]]
    return flags


def fill(r, n=3000):
    """A mixed dataset: strings with and without TTLs, a hash, a list, a set, a zset."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set("s:%d" % i, "v%d" % i * 5)
    for i in range(0, n, 10):
        p.pexpire("s:%d" % i, 3600 * 1000)
    p.hset("h", mapping={"f%d" % i: i for i in range(200)})
    p.rpush("l", *range(500))
    p.sadd("set", *range(300))
    p.zadd("z", {"m%d" % i: i / 3 for i in range(300)})
    p.set("big", "x" * (2 << 20))
    p.execute()


@test
def redis_server_over_tls_is_an_import_source_and_target_and_both_sides_of_verify(h):
    src = start_tls(h, "redis", name="redis-src")
    dst = start_tls(h, "redis", name="redis-dst")
    fill(src.redis())
    rc, out, err = keyshift("import", src.url(), "--to", dst.url(), "--no-checkpoint",
                            "--verify", "--format", "json", *client_flags(h))
    eq(rc, 0, "import over TLS: %s%s" % (out, err))
    doc = json.loads(out)
    eq(doc["keys"]["written"], 3005, "keys written: %s" % out)
    ok(doc["verify"]["ran"] and doc["verify"]["equal"], "import --verify over TLS: %s" % out)
    rc, out, err = keyshift("verify", "data", src.url(), dst.url(), "--rounds", "1",
                            *client_flags(h))
    eq(rc, 0, "verify data over TLS: %s%s" % (out, err))
    eq(src.cli("debug", "digest"), dst.cli("debug", "digest"), "digests agree")
    # --tls turns redis:// into TLS as redis-cli's flag does; --cacertdir reads a hashed dir.
    plain_url = "redis://%s:%d" % (HOST, dst.tls_port)
    c = certs(h)
    rc, out, err = keyshift("verify", "data", src.url(), plain_url, "--tls", "--cacertdir",
                            c["cadir"], "--cert", c["client.crt"], "--key", c["client.key"],
                            "--rounds", "1")
    eq(rc, 0, "verify with --tls and --cacertdir: %s%s" % (out, err))
    dst.redis().set("only-here", "1")
    rc, out, err = keyshift("verify", "data", src.url(), dst.url(), "--rounds", "1",
                            *client_flags(h))
    eq(rc, 1, "a difference is found over TLS too: %s%s" % (out, err))
    ok("only-here" in out, out)


@test
def a_wrong_ca_or_name_fails_with_the_endpoint_and_openssls_reason(h):
    src = start_tls(h, "redis", name="redis-ca")
    rc, out, err = keyshift("verify", "data", src.url(), src.url(), "--rounds", "1",
                            *client_flags(h, ca="other-ca.crt"))
    eq(rc, 2, "wrong CA: %s%s" % (out, err))
    ok("127.0.0.1:%d" % src.tls_port in err and "certificate verify failed" in err, err)
    rc, out, err = keyshift("import", src.url(), "--to", src.url(), "--dry-run",
                            "--no-checkpoint", *client_flags(h, ca="other-ca.crt"))
    ok(rc != 0 and "certificate verify failed" in out + err, "import, wrong CA: %s%s"
       % (out, err))
    rc, out, err = keyshift("verify", "data", src.url(), src.url(), "--rounds", "1",
                            "--sni", "cache.example", *client_flags(h))
    eq(rc, 2, "a name the certificate lacks: %s%s" % (out, err))
    ok("hostname mismatch" in err, err)
    rc, out, err = keyshift("verify", "data", src.url(), src.url(), "--rounds", "1",
                            "--sni", "cache.example", "--insecure", *client_flags(h))
    eq(rc, 0, "--insecure skips the check: %s%s" % (out, err))


@test
def a_server_requiring_client_certificates_refuses_a_client_without_one(h):
    src = start_tls(h, "redis", "--tls-auth-clients", "yes", name="redis-auth")
    rc, out, err = keyshift("verify", "data", src.url(), src.url(), "--rounds", "1",
                            *client_flags(h, cert=False))
    eq(rc, 2, "no client certificate: %s%s" % (out, err))
    ok("127.0.0.1:%d" % src.tls_port in err and "client certificate" in err, err)
    rc, out, err = keyshift("verify", "data", src.url(), src.url(), "--rounds", "1",
                            *client_flags(h))
    eq(rc, 0, "with --cert and --key: %s%s" % (out, err))


@test
def keyshift_serve_answers_redis_cli_python_redis_and_keyshift_clients_over_tls(h):
    ks = start_tls(h, "keyshift", name="ks-tls")
    eq(ks.cli("ping"), "PONG", "redis-cli --tls")
    eq(ks.cli("set", "greeting", "hello"), "OK", "SET")
    eq(ks.cli("get", "greeting"), "hello", "GET")
    r = ks.redis()
    fill(r)
    eq(len(r.get("big")), 2 << 20, "a 2 MiB value crosses many TLS records")
    p = r.pipeline(transaction=False)
    for i in range(3000):
        p.get("s:%d" % i)
    got = p.execute()
    eq(got[7], b"v7v7v7v7v7", "pipelined replies in order")
    eq(r.dbsize(), 3006, "DBSIZE")
    eq(ks.cli("config", "get", "tls-port"), "tls-port\n%d" % ks.tls_port, "CONFIG GET tls-port")
    eq(ks.cli("config", "get", "port"), "port\n0", "no plain port")
    # keyshift's own clients: import from it into a redis-server over TLS, verify both ways.
    dst = start_tls(h, "redis", name="redis-from-ks")
    rc, out, err = keyshift("import", ks.url(), "--to", dst.url(), "--no-checkpoint", "--mode", "scan",
                            *client_flags(h))
    eq(rc, 0, "import from keyshift serve over TLS: %s%s" % (out, err))
    rc, out, err = keyshift("verify", "data", ks.url(), dst.url(), "--rounds", "1",
                            *client_flags(h))
    eq(rc, 0, "verify keyshift serve against redis-server over TLS: %s%s" % (out, err))
    rc, out, err = keyshift("bench", "-u", ks.url(), "-t", "set,get", "-n", "20000", "-c", "4",
                            "-P", "16", "-q", *client_flags(h))
    eq(rc, 0, "keyshift bench over TLS: %s%s" % (out, err))
    ok("SET" in out and "GET" in out, out)


@test
def tls_auth_clients_is_enforced_and_changes_with_config_set(h):
    c = certs(h)
    ks = start_tls(h, "keyshift", name="ks-auth")  # tls-auth-clients yes by default
    redis = redis_module()

    def bare():
        return redis.Redis(host=HOST, port=ks.tls_port, ssl=True, ssl_ca_certs=c["ca.crt"],
                           socket_timeout=10)

    try:
        bare().ping()
        raise AssertionError("a client without a certificate was served")
    except (redis.exceptions.ConnectionError, ssl.SSLError):
        pass
    ok(ks.redis().ping(), "a client with a certificate is served")
    eq(ks.cli("config", "set", "tls-auth-clients", "optional"), "OK", "CONFIG SET optional")
    ok(bare().ping(), "optional: no certificate is fine")
    ok(ks.redis().ping(), "optional: a certificate is fine too")
    # A certificate from a CA the server does not trust is refused even when optional.
    try:
        r = redis.Redis(host=HOST, port=ks.tls_port, ssl=True, ssl_ca_certs=c["ca.crt"],
                        ssl_certfile=c["other-ca.crt"], ssl_keyfile=c["other-ca.key"],
                        socket_timeout=10)
        r.ping()
        raise AssertionError("an untrusted client certificate was accepted")
    except (redis.exceptions.ConnectionError, ssl.SSLError):
        pass
    eq(ks.cli("config", "set", "tls-auth-clients", "no"), "OK", "CONFIG SET no")
    ok(bare().ping(), "no: served without a certificate")
    eq(ks.cli("config", "get", "tls-auth-clients"), "tls-auth-clients\nno", "CONFIG GET")


@test
def a_plain_client_on_the_tls_port_is_dropped_without_disturbing_the_server(h):
    ks = start_tls(h, "keyshift", plain_port=True, name="ks-plain")
    c = certs(h)
    # One client stuck in its handshake (connected, says nothing) must not hold up others.
    stuck = socket.create_connection((HOST, ks.tls_port), timeout=5)
    partial = socket.create_connection((HOST, ks.tls_port), timeout=5)
    partial.sendall(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello, then nothing
    with socket.create_connection((HOST, ks.tls_port), timeout=10) as s:
        s.sendall(b"PING\r\n")
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        ok(b"PONG" not in data, "a plain PING on the TLS port got %r" % data)
    eq(tls_ping(ks.tls_port, c["ca.crt"], c["client.crt"], c["client.key"]), b"+PONG\r\n",
       "TLS clients are still served")
    eq(ks.conn().call("PING"), b"PONG", "plain clients on the plain port too")
    stuck.close()
    partial.close()
    # redis-cli --tls against the plain port fails cleanly and the server stays up.
    p = subprocess.run(["redis-cli", "-p", str(ks.port), "--tls", "--cacert", c["ca.crt"],
                        "ping"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    ok(b"PONG" not in p.stdout, "TLS on the plain port: %r" % p.stdout)
    eq(ks.conn().call("PING"), b"PONG", "still up")
    ok(ks.alive(), "the server is alive")


@test
def a_tls_client_over_maxclients_is_told_why_after_its_handshake(h):
    c = certs(h)
    ks = start_tls(h, "keyshift", "--maxclients", "1", name="ks-maxclients")
    ctx = ssl.create_default_context(cafile=c["ca.crt"])
    ctx.load_cert_chain(c["client.crt"], c["client.key"])

    def served(sock):
        sock.sendall(b"PING\r\n")
        return sock.recv(100)

    # The readiness probe's connection may not be closed on the server's side yet: the one
    # slot is taken once a client is answered PONG.
    first = None
    for _ in range(100):
        first = ctx.wrap_socket(socket.create_connection((HOST, ks.tls_port), timeout=10),
                                server_hostname="localhost")
        if served(first) == b"+PONG\r\n":
            break
        first.close()
        first = None
    ok(first is not None, "a first client was served")
    try:
        eq(ks.cli("ping", check=False), "ERR max number of clients reached",
           "redis-cli --tls reads Valkey's error through TLS")
        eq(served(first), b"+PONG\r\n", "the first client is still served")
        stats = first
        stats.sendall(b"INFO stats\r\n")
        info = b""
        while b"rejected_connections:" not in info or not info.endswith(b"\r\n\r\n"):
            chunk = stats.recv(65536)
            if not chunk:
                break
            info += chunk
        ok(b"rejected_connections:" in info and b"rejected_connections:0\r\n" not in info,
           info.decode())
    finally:
        first.close()


@test
def config_set_of_tls_settings_rebuilds_the_context_or_fails_as_valkey(h):
    c = certs(h)
    ks = start_tls(h, "keyshift", plain_port=True, name="ks-config")
    out = ks.cli("config", "set", "tls-cert-file", h.path("missing.crt"), check=False)
    eq(out, "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to "
       "update TLS configuration. Check server logs.", "a missing certificate")
    eq(ks.cli("config", "get", "tls-cert-file"), "tls-cert-file\n%s" % c["server.crt"],
       "the old value stays")
    ok("Failed to load certificate" in ks.log(), "the reason is logged:\n%s" % ks.log()[-2000:])
    eq(ks.cli("config", "set", "tls-protocols", "TLSv1.2"), "OK", "tls-protocols")
    ctx = ssl.create_default_context(cafile=c["ca.crt"])
    ctx.load_cert_chain(c["client.crt"], c["client.key"])
    with socket.create_connection((HOST, ks.tls_port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            eq(s.version(), "TLSv1.2", "the new context is used by new connections")
    out = ks.cli("config", "set", "tls-protocols", "SSLv3", check=False)
    ok(out.startswith("ERR CONFIG SET failed (possibly related to argument 'tls-protocols')"),
       out)
    new_port = free_port()
    eq(ks.cli("config", "set", "tls-port", str(new_port)), "OK", "move the TLS listener")
    eq(tls_ping(new_port, c["ca.crt"], c["client.crt"], c["client.key"]), b"+PONG\r\n",
       "served on the new TLS port")
    try:
        tls_ping(ks.tls_port, c["ca.crt"], c["client.crt"], c["client.key"], timeout=3)
        raise AssertionError("the old TLS port still answers")
    except (OSError, ssl.SSLError):
        pass


@test
def serve_refuses_to_start_with_an_unusable_tls_configuration(h):
    c = certs(h)
    cases = [
        (["--tls-port", str(free_port())], "No tls-cert-file configured!"),
        (["--tls-port", str(free_port()), "--tls-cert-file", c["server.crt"], "--tls-key-file",
          c["server.key"]], "Either tls-ca-cert-file or tls-ca-cert-dir must be specified"),
        (["--tls-port", str(free_port()), "--tls-cert-file", c["server.crt"], "--tls-key-file",
          c["client.key"], "--tls-auth-clients", "no"], "Failed to load private key"),
    ]
    for extra, why in cases:
        p = subprocess.run([keyshift_bin(), "serve", "--port", "0", "--save", ""] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode("utf-8", "replace")
        ok(p.returncode != 0, "started with %s:\n%s" % (extra, out))
        ok(why in out and "Failed to configure TLS" in out, "%s:\n%s" % (why, out))


@test
def keyshift_replicates_from_a_tls_primary_and_serves_a_tls_replica(h):
    # tls-replication yes on both ends: keyshift as the replica of redis-server 7.0's TLS
    # port (its client certificate is its tls-cert-file, as in Valkey), then redis-server
    # 7.0 as the replica of keyshift's TLS port, by disk-based and by diskless full sync.
    # Each ends with equal DEBUG DIGEST under a running writer.
    c = certs(h)
    source = start_tls(h, "redis", "--enable-debug-command", "yes", plain_port=True,
                       name="tls-primary")
    repl_helpers.fill(source, 3000)
    replica = start_tls(h, "keyshift", "--enable-debug-command", "yes", "--tls-replication",
                        "yes", "--replicaof", HOST, source.tls_port, plain_port=True,
                        name="ks-tls-replica")
    repl_helpers.sync_under_writes(source, replica, "keyshift replica of a TLS primary")
    eq(repl_helpers.info(source)["connected_slaves"], 1, "the TLS link is the only replica")
    for diskless in ("no", "yes"):
        primary = start_tls(h, "keyshift", "--enable-debug-command", "yes",
                            "--repl-diskless-sync", diskless,
                            "--repl-diskless-sync-delay", "0", plain_port=True,
                            name="ks-tls-primary-" + diskless)
        repl_helpers.fill(primary, 3000)
        follower = start_tls(h, "redis", "--enable-debug-command", "yes",
                             "--tls-replication", "yes", "--replicaof", HOST,
                             primary.tls_port, "--tls-client-cert-file", c["client.crt"],
                             "--tls-client-key-file", c["client.key"], plain_port=True,
                             name="redis-tls-replica-" + diskless)
        what = "redis-server 7.0 replica of keyshift over TLS, diskless %s" % diskless
        repl_helpers.sync_under_writes(primary, follower, what)
        eq(repl_helpers.info(primary)["connected_slaves"], 1, what)


if __name__ == "__main__":
    run_tests()
