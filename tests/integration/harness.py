"""Integration-test harness for keyshift: real servers, real clients, no mocks.

Run the test files with Debian's interpreter, /usr/bin/python3 (it has python3-redis; the
`python3` that may come first on PATH does not). Only the standard library and the `redis`
module are used.

What is here:
  * `Server` - a child process (`keyshift serve` or Debian's redis-server 7.0) on a free
    127.0.0.1 port (and, for keyshift, a unix socket in a private temp dir), ready once it
    answers PING (bounded retries), stopped with SIGTERM at the end.
  * `RespConn` - a minimal RESP2/RESP3 client over a raw socket that returns each reply both
    as the exact bytes the server sent and as a decoded value, so tests compare bytes.
  * `split_args` - redis-cli / sdssplitargs quoting, for scripts and inline commands.
  * a tiny test runner: `@test` functions, checks through `eq`/`ok` (a test that checks
    nothing fails), and a last line of the exact form `N passed, M failed`; the exit status
    is non-zero when anything failed.

Environment: KEYSHIFT_BIN (default <repo>/build/keyshift), KEYSHIFT_IT_KEEP=1 keeps the
temp dir with the server logs.
"""

import importlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "127.0.0.1"
READY_TIMEOUT = 15.0  # seconds a server may take to answer its first PING
STOP_TIMEOUT = 15.0   # seconds a server may take to exit after SIGTERM
REPLY_TIMEOUT = 10.0  # seconds to wait for one reply before calling the server stuck

# --------------------------------------------------------------------------------------
# Tools: installed with apt-get only when missing.
# --------------------------------------------------------------------------------------

_APT_FOR_TOOL = {
    "redis-server": "redis-server",
    "redis-cli": "redis-tools",
    "redis-benchmark": "redis-tools",
}


class SetupError(Exception):
    """The environment cannot run the tests (missing tool, server that does not start)."""


def _apt_install(packages):
    if os.geteuid() != 0:
        raise SetupError("missing packages %s and not root: apt-get install -y %s"
                         % (packages, " ".join(packages)))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    rc = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends"] + packages,
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        raise SetupError("apt-get install %s failed (rc=%d)" % (" ".join(packages), rc))


def ensure_tools(tools=("redis-server", "redis-cli", "redis-benchmark")):
    """Makes sure the reference server and the clients exist (apt-get only if missing)."""
    missing = sorted({_APT_FOR_TOOL[t] for t in tools if shutil.which(t) is None})
    if missing:
        _apt_install(missing)
    for t in tools:
        if shutil.which(t) is None:
            raise SetupError("%s still missing after apt-get" % t)


def redis_module():
    """Debian's python3-redis, installed if missing."""
    try:
        return importlib.import_module("redis")
    except ImportError:
        _apt_install(["python3-redis"])
    return importlib.import_module("redis")


def chromium():
    """Debian's chromium (for rendering HTML reports headless), installed if missing."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    _apt_install(["chromium"])
    path = shutil.which("chromium")
    if path is None:
        raise SetupError("chromium still missing after apt-get")
    return path


def keyshift_bin():
    path = os.environ.get("KEYSHIFT_BIN") or os.path.join(REPO, "build", "keyshift")
    path = os.path.abspath(path)
    if not os.access(path, os.X_OK):
        raise SetupError("keyshift binary not found at %s (set KEYSHIFT_BIN)" % path)
    return path


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on right now: one the kernel picks, or
    with KEYSHIFT_IT_PORTS=LOW-HIGH one of that range (to share a host with other runs)."""
    span = os.environ.get("KEYSHIFT_IT_PORTS")
    if span:
        import random
        low, high = (int(x) for x in span.split("-"))
        ports = list(range(low, high + 1))
        random.shuffle(ports)
        for port in ports:
            if port_free(port):
                return port
        raise SetupError("no free port in KEYSHIFT_IT_PORTS=%s" % span)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------
# RESP: encoding, decoding, quoting.
# --------------------------------------------------------------------------------------

class Simple(bytes):
    """+simple string"""


class Err(bytes):
    """-error or !blob error"""


class Double(bytes):
    """,double (kept as text so comparisons are exact)"""


class BigNum(bytes):
    """(big number"""


class Verbatim(bytes):
    """=verbatim string (including its 3-letter format)"""


class Map(list):
    """%map as a list of (key, value) pairs, in server order"""


class Set(list):
    """~set"""


class Push(list):
    """>push"""


class Null:
    """_ (RESP3 null); RESP2 null bulk/array decode to None."""

    def __eq__(self, other):
        return isinstance(other, Null)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "Null"


def encode_command(args):
    """RESP multibulk for a list of str/bytes/int arguments."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode("utf-8", "surrogateescape")
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


_HEX = "0123456789abcdefABCDEF"


def split_args(line):
    """Splits a line as redis-cli and Valkey's sdssplitargs() do: blanks separate words,
    "double quotes" take \\n \\r \\t \\b \\a \\xHH and \\<c> escapes, 'single quotes' only \\',
    and a closing quote must be followed by a blank or the end. Returns a list of bytes, or
    None for unbalanced quotes (what Valkey calls a protocol error for inline requests)."""
    if isinstance(line, bytes):
        line = line.decode("latin-1")
    words = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in " \n\r\t\f\v":
            i += 1
        if i >= n:
            return words
        cur = []
        inq = insq = False
        done = False
        while not done:
            c = line[i] if i < n else None
            if inq:
                if c is None:
                    return None
                if (c == "\\" and i + 3 < n and line[i + 1] == "x" and line[i + 2] in _HEX
                        and line[i + 3] in _HEX):
                    cur.append(chr(int(line[i + 2:i + 4], 16)))
                    i += 3
                elif c == "\\" and i + 1 < n:
                    i += 1
                    cur.append({"n": "\n", "r": "\r", "t": "\t", "b": "\b",
                                "a": "\a"}.get(line[i], line[i]))
                elif c == '"':
                    if i + 1 < n and line[i + 1] not in " \n\r\t\f\v":
                        return None
                    done = True
                else:
                    cur.append(c)
            elif insq:
                if c is None:
                    return None
                if c == "\\" and i + 1 < n and line[i + 1] == "'":
                    i += 1
                    cur.append("'")
                elif c == "'":
                    if i + 1 < n and line[i + 1] not in " \n\r\t\f\v":
                        return None
                    done = True
                else:
                    cur.append(c)
            else:
                if c is None or c in " \n\r\t\f\v":
                    done = True
                elif c == '"':
                    inq = True
                elif c == "'":
                    insq = True
                else:
                    cur.append(c)
            if i < n:
                i += 1
        words.append("".join(cur).encode("latin-1"))


class ConnectionClosed(Exception):
    """The server closed the connection (or reset it) before a whole reply arrived."""


class RespConn:
    """One raw connection. `command(*args)` returns (raw_bytes, value) of one reply."""

    def __init__(self, port=None, path=None, timeout=REPLY_TIMEOUT, host=HOST, source=None):
        """TCP to `host`:`port` (from the local address `source` when given, e.g. 127.0.0.2)
        or the unix socket `path`."""
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(path)
        else:
            self.sock = socket.create_connection(
                (host, port), timeout=timeout,
                source_address=(source, 0) if source is not None else None)
        self.buf = bytearray()
        self.pos = 0
        self.closed = False

    # -- plumbing
    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    @classmethod
    def decode(cls, raw):
        """The decoded value of one complete reply given as bytes."""
        c = cls.__new__(cls)
        c.sock, c.buf, c.pos, c.closed = None, bytearray(raw), 0, True
        return c.read_reply()[1]

    def _fill(self):
        if self.sock is None:
            raise ConnectionClosed("incomplete reply")
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        except socket.timeout:
            raise TimeoutError("no reply within %.0fs" % self.sock.gettimeout())
        if not chunk:
            self.closed = True
            raise ConnectionClosed("connection closed by server")
        self.buf += chunk

    def _line(self):
        while True:
            idx = self.buf.find(b"\r\n", self.pos)
            if idx >= 0:
                line = bytes(self.buf[self.pos:idx])
                self.pos = idx + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + n])
        if self.buf[self.pos + n:self.pos + n + 2] != b"\r\n":
            raise ValueError("bulk not terminated by CRLF")
        self.pos += n + 2
        return data

    def _value(self):
        line = self._line()
        if not line:
            raise ValueError("empty reply line")
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest)
        if t == b"-":
            return Err(rest)
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"!":
            return Err(self._exact(int(rest)))
        if t == b"=":
            return Verbatim(self._exact(int(rest)))
        if t in (b"*", b"~", b">"):
            n = int(rest)
            if n < 0:
                return None
            items = [self._value() for _ in range(n)]
            return {b"*": list, b"~": Set, b">": Push}[t](items)
        if t == b"%":
            return Map((self._value(), self._value()) for _ in range(int(rest)))
        if t == b"|":
            for _ in range(int(rest)):  # attributes: read and drop, the reply follows
                self._value()
                self._value()
            return self._value()
        if t == b"_":
            return Null()
        if t == b",":
            return Double(rest)
        if t == b"#":
            return rest == b"t"
        if t == b"(":
            return BigNum(rest)
        raise ValueError("unknown RESP type %r in %r" % (t, line))

    def read_reply(self):
        """(raw bytes, decoded value) of the next reply."""
        if self.pos > 65536:  # drop consumed bytes, never in the middle of a reply
            del self.buf[:self.pos]
            self.pos = 0
        start = self.pos
        value = self._value()
        raw = bytes(self.buf[start:self.pos])
        return raw, value

    def command(self, *args):
        self.send(encode_command(args))
        return self.read_reply()

    def call(self, *args):
        """Decoded value only."""
        return self.command(*args)[1]

    def read_until_closed(self, timeout):
        """Everything the server sends until it closes the connection, within `timeout`
        seconds. Returns (data, closed)."""
        data = bytes(self.buf[self.pos:])
        self.pos = len(self.buf)
        deadline = time.monotonic() + timeout
        saved = self.sock.gettimeout()
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return data, False
                self.sock.settimeout(left)
                try:
                    chunk = self.sock.recv(1 << 16)
                except socket.timeout:
                    return data, False
                except (ConnectionResetError, BrokenPipeError):
                    self.closed = True
                    return data, True
                if not chunk:
                    self.closed = True
                    return data, True
                data += chunk
        finally:
            self.sock.settimeout(saved)


def render(value):
    """A readable one-line form of a decoded reply (for failure messages)."""
    if isinstance(value, Err):
        return "(error) " + value.decode("latin-1")
    if isinstance(value, Simple):
        return "+" + value.decode("latin-1")
    if isinstance(value, (Double, BigNum)):
        return "(%s) %s" % (type(value).__name__.lower(), value.decode("latin-1"))
    if isinstance(value, bytes):
        return repr(value)
    if isinstance(value, Map):
        return "{" + ", ".join("%s: %s" % (render(k), render(v)) for k, v in value) + "}"
    if isinstance(value, (list, tuple)):
        name = type(value).__name__.lower() if type(value) is not list else ""
        return name + "[" + ", ".join(render(v) for v in value) + "]"
    if value is None:
        return "(nil)"
    return repr(value)


# --------------------------------------------------------------------------------------
# Servers.
# --------------------------------------------------------------------------------------

class Server:
    """A server child process whose output goes to `<workdir>/<name>.log`."""

    def __init__(self, name, argv, port, workdir, unixsocket=None, password=None, env=None):
        self.name = name
        self.env = env
        self.argv = argv
        self.port = port
        self.workdir = workdir
        self.unixsocket = unixsocket
        self.password = password
        self.logpath = os.path.join(workdir, name + ".log")
        self.proc = None
        self.returncode = None

    def start(self):
        self.logfile = open(self.logpath, "ab")
        self.proc = subprocess.Popen(self.argv, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                     stdout=self.logfile, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=self.env)
        return self

    def log(self):
        try:
            with open(self.logpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout=READY_TIMEOUT):
        """Waits for a PING answer (PONG, or NOAUTH when a password is set). Retries are
        bounded by `timeout`; between attempts it waits on the child itself, so a server
        that dies is noticed at once."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SetupError("%s exited with %s during startup; log:\n%s"
                                 % (self.name, self.proc.returncode, self.log()[-3000:]))
            try:
                with RespConn(port=self.port, timeout=2) as c:
                    raw, _ = c.command("PING")
                    if raw in (b"+PONG\r\n",) or raw.startswith(b"-NOAUTH"):
                        return self
                    last = raw
            except (OSError, ConnectionClosed, TimeoutError, ValueError) as e:
                last = e
            try:
                self.proc.wait(timeout=0.02)
            except subprocess.TimeoutExpired:
                pass
        raise SetupError("%s did not answer PING within %.0fs (last: %r); log:\n%s"
                         % (self.name, timeout, last, self.log()[-3000:]))

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Signals the server and waits for it; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.returncode = "killed after %ss" % timeout
                self.logfile.close()
                return self.returncode
        self.returncode = self.proc.returncode
        self.logfile.close()
        return self.returncode

    # -- clients
    def conn(self, unix=False, timeout=REPLY_TIMEOUT):
        if unix:
            return RespConn(path=self.unixsocket, timeout=timeout)
        return RespConn(port=self.port, timeout=timeout)

    def redis(self, unix=False, **kw):
        redis = redis_module()
        kw.setdefault("socket_timeout", REPLY_TIMEOUT)
        if self.password is not None:
            kw.setdefault("password", self.password)
        if unix:
            return redis.Redis(unix_socket_path=self.unixsocket, **kw)
        return redis.Redis(host=HOST, port=self.port, **kw)

    def cli(self, *args, unix=False, check=True):
        """redis-cli against this server; returns stdout without the trailing newline."""
        where = ["-s", self.unixsocket] if unix else ["-h", HOST, "-p", str(self.port)]
        auth = ["--no-auth-warning", "-a", self.password] if self.password else []
        p = subprocess.run(["redis-cli"] + where + auth + [str(a) for a in args],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        out = p.stdout.decode("utf-8", "replace").rstrip("\n")
        if check and p.returncode != 0:
            raise AssertionError("redis-cli %s failed (%d): %s" % (args, p.returncode, out))
        return out


class Harness:
    """Owns the temp dir and every server started through it; `close()` stops them all."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="ks-it-")
        self.servers = []
        self.counter = 0

    def path(self, name):
        return os.path.join(self.tmp, name)

    def _dir(self, name):
        self.counter += 1
        d = os.path.join(self.tmp, "%s-%d" % (name, self.counter))
        os.makedirs(d)
        return d

    def _launch(self, make, attempts=3):
        # A free port can be taken between probing and binding; try a fresh one then.
        last = None
        for _ in range(attempts):
            srv = make(free_port())
            srv.start()
            try:
                srv.wait_ready()
            except SetupError as e:
                srv.stop(signal.SIGKILL)
                last = e
                if "in use" in srv.log():
                    continue
                raise
            self.servers.append(srv)
            return srv
        raise last

    def keyshift(self, *directives, config=None, unixsocket=True, name="keyshift",
                 password=None):
        """Starts `keyshift serve [CONFIG] --port P --bind 127.0.0.1 [--unixsocket S]`
        followed by `directives` (flag words, e.g. "--timeout", "1"). `config` is the
        text of a config file, or a function of the server's work dir returning it."""
        binary = keyshift_bin()
        workdir = self._dir(name)

        def make(port):
            sock = os.path.join(workdir, "keyshift.sock") if unixsocket else None
            argv = [binary, "serve"]
            if config is not None:
                cfg = os.path.join(workdir, "keyshift.conf")
                with open(cfg, "w") as f:
                    f.write(config(workdir) if callable(config) else config)
                argv.append(cfg)
            argv += ["--port", str(port), "--bind", HOST]
            if sock:
                argv += ["--unixsocket", sock]
            argv += [str(d) for d in directives]
            return Server(name, argv, port, workdir, unixsocket=sock, password=password)

        return self._launch(make)

    def redis_server(self, *directives, name="redis-server"):
        """Debian's redis-server 7.0, the reference."""
        ensure_tools(("redis-server",))
        workdir = self._dir(name)

        def make(port):
            argv = ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--enable-debug-command", "yes", "--dir", workdir,
                    "--daemonize", "no", "--logfile", ""]
            argv += [str(d) for d in directives]
            return Server(name, argv, port, workdir)

        return self._launch(make)

    def forget(self, srv):
        if srv in self.servers:
            self.servers.remove(srv)

    def close(self):
        for srv in self.servers:
            srv.stop()
        self.servers = []
        if os.environ.get("KEYSHIFT_IT_KEEP") == "1":
            print("kept %s" % self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------
# Runner.
# --------------------------------------------------------------------------------------

_TESTS = []


class BackgroundWriter:
    """Keeps changing a server from its own thread until stop(): a subclass's connect()
    returns its clients, and step(clients, rnd) makes one change. `count` is the changes
    made; stop() raises what the thread failed with."""

    seed = 7

    def __init__(self):
        import random
        import threading
        self.stop_flag = threading.Event()
        self.count = 0
        self.error = None
        self.rnd = random.Random(self.seed)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            clients = self.connect()
            while not self.stop_flag.is_set():
                self.step(clients, self.rnd)
                self.count += 1
        except Exception as e:  # reported by stop()
            self.error = e

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        if self.error is not None:
            raise AssertionError("the writer failed: %r" % (self.error,))


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def cluster_ports(count):
    """`count` consecutive ports p with p and p + 10000 (the cluster bus) both free."""
    base = 21000 + (os.getpid() * 7) % 20000
    for start in range(base, base + 4000, count):
        ports = list(range(start, start + count))
        if all(port_free(p) and port_free(p + 10000) for p in ports):
            return ports
    raise SetupError("no free range of %d ports for a cluster" % count)


class Cluster:
    """Three redis-server 7.0 primaries in one cluster, every slot assigned."""

    def __init__(self, h, name):
        ensure_tools(("redis-server", "redis-cli"))
        self.nodes = []
        for port in cluster_ports(3):
            h.counter += 1
            workdir = os.path.join(h.tmp, "%s-%d-%d" % (name, port, h.counter))
            os.makedirs(workdir)
            argv = ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                    "--appendonly", "no", "--enable-debug-command", "yes", "--dir", workdir,
                    "--daemonize", "no", "--logfile", "", "--cluster-enabled", "yes",
                    "--cluster-config-file", os.path.join(workdir, "nodes.conf"),
                    "--cluster-node-timeout", "5000"]
            srv = Server("%s-%d" % (name, port), argv, port, workdir).start()
            srv.wait_ready()
            h.servers.append(srv)
            self.nodes.append(srv)
        p = subprocess.run(["redis-cli", "--cluster", "create"] +
                           ["%s:%d" % (HOST, n.port) for n in self.nodes] +
                           ["--cluster-replicas", "0", "--cluster-yes"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if p.returncode != 0:
            raise SetupError("redis-cli --cluster create failed: %s" % p.stdout.decode())
        self.wait_ok()
        self.ids = {n.port: n.cli("CLUSTER", "MYID") for n in self.nodes}

    def wait_ok(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in n.cli("CLUSTER", "INFO") for n in self.nodes):
                # every node must also agree on who serves every slot
                views = {n.cli("CLUSTER", "SLOTS") for n in self.nodes}
                if len(views) == 1:
                    return
            time.sleep(0.05)
        raise SetupError("the cluster did not reach cluster_state:ok")

    def url(self, i=0):
        return "redis://%s:%d" % (HOST, self.nodes[i].port)

    def client(self):
        from redis.cluster import ClusterNode, RedisCluster
        return RedisCluster(startup_nodes=[ClusterNode(HOST, self.nodes[0].port)],
                            socket_timeout=10)

    def dbsize(self):
        return sum(int(n.cli("DBSIZE")) for n in self.nodes)

    def flush(self):
        for n in self.nodes:
            n.cli("FLUSHALL")

    def owner(self, slot):
        """The node serving `slot`."""
        for n in self.nodes:
            if int(n.cli("CLUSTER", "COUNTKEYSINSLOT", slot)) >= 0 and \
                    self._serves(n, slot):
                return n
        raise AssertionError("no node serves slot %d" % slot)

    def _serves(self, n, slot):
        for line in n.cli("CLUSTER", "NODES").splitlines():
            fields = line.split()
            if "myself" not in fields[2]:
                continue
            for r in fields[8:]:
                if r.startswith("["):
                    continue
                lo, _, hi = r.partition("-")
                if int(lo) <= slot <= int(hi or lo):
                    return True
        return False


def cluster(h, name="cluster"):
    """The harness's cluster `name` (made on first use, kept for the run), flushed."""
    if not hasattr(h, "clusters"):
        h.clusters = {}
    if name not in h.clusters:
        h.clusters[name] = Cluster(h, name)
    c = h.clusters[name]
    c.flush()
    return c


class CaptureProxy:
    """A running `keyshift capture`; stop() ends it with SIGTERM and returns its exit code."""

    def __init__(self, h, upstream, out, listen=None, extra=()):
        self.port = None
        if listen is None:
            self.port = free_port()
            listen = "%s:%d" % (HOST, self.port)
        self.listen = listen
        self.out = out
        self.log_path = out + ".log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([keyshift_bin(), "capture", "--listen", listen,
                                      "--upstream", upstream, "--out", out] + list(extra),
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while b"listening on" not in open(self.log_path, "rb").read():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("capture did not start: %r" % open(self.log_path).read())
            time.sleep(0.02)

    def conn(self, **kw):
        if self.port is None:
            return RespConn(path=self.listen[len("unix:"):], **kw)
        return RespConn(port=self.port, **kw)

    def redis(self, **kw):
        r = redis_module()
        if self.port is None:
            return r.Redis(unix_socket_path=self.listen[len("unix:"):], **kw)
        return r.Redis(host=HOST, port=self.port, **kw)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=20)
        self.log.close()
        return rc

    def output(self):
        return open(self.log_path, "rb").read().decode("utf-8", "replace")


class Skip(Exception):
    """Raised by a test that cannot run here; counted separately, not as a pass."""


class _Checks:
    count = 0


def test(fn):
    """Registers a test function; it receives the Harness."""
    _TESTS.append(fn)
    return fn


def ok(cond, message="condition is false"):
    _Checks.count += 1
    if not cond:
        raise AssertionError(message)


def eq(actual, expected, what=""):
    _Checks.count += 1
    if actual != expected:
        raise AssertionError("%s\n  expected: %r\n  actual:   %r" % (what, expected, actual))


def read_json_file(path):
    """The JSON object in `path`, or {} while it is missing or half written (a checkpoint
    being replaced)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def wait_for(cond, what, timeout=120):
    """Polls `cond` until it is true; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def run_tests(argv=None):
    """Runs the registered tests (optionally only those whose name contains one of the
    command-line words), prints one line per test and then `N passed, M failed`."""
    argv = sys.argv[1:] if argv is None else argv
    selected = [t for t in _TESTS if not argv or any(a in t.__name__ for a in argv)]
    passed = failed = skipped = 0
    h = None
    try:
        h = Harness()
        for fn in selected:
            _Checks.count = 0
            t0 = time.monotonic()
            try:
                fn(h)
                if _Checks.count == 0:
                    raise AssertionError("test asserted nothing")
            except Skip as e:
                skipped += 1
                print("SKIP %s: %s" % (fn.__name__, e), flush=True)
                continue
            except Exception as e:  # noqa: BLE001 - report every failure, keep going
                failed += 1
                detail = (str(e) if isinstance(e, AssertionError)
                          else traceback.format_exc().rstrip())
                print("FAIL %s\n  %s" % (fn.__name__, detail.replace("\n", "\n  ")),
                      flush=True)
                continue
            passed += 1
            print("PASS %s (%.2fs, %d checks)" % (fn.__name__, time.monotonic() - t0,
                                                  _Checks.count), flush=True)
    except SetupError as e:
        failed += 1
        print("FAIL setup: %s" % e, flush=True)
    finally:
        if h is not None:
            h.close()
    if skipped:
        print("%d skipped" % skipped)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    sys.exit(1 if failed or not passed else 0)


# --------------------------------------------------------------------------------------
# Capture files (keyshift-capture(5)), read independently of keyshift.
# --------------------------------------------------------------------------------------

MAGIC = b"KSCAPTR\x00"
KINDS = {1: "open", 2: "close", 3: "request", 4: "reply", 5: "drop"}


def read_capture(path):
    """An independent reader of keyshift-capture(5): (header dict, events, complete)."""
    data = open(path, "rb").read()
    ok(data[:8] == MAGIC, "magic")
    version, hlen = struct.unpack_from("<II", data, 8)
    eq(version, 1, "format version")
    pos = 16
    body = data[pos:pos + hlen]
    (count,) = struct.unpack_from("<I", body, 0)
    header = {}
    p = 4
    for _ in range(count):
        (n,) = struct.unpack_from("<I", body, p)
        k = body[p + 4:p + 4 + n].decode()
        p += 4 + n
        (n,) = struct.unpack_from("<I", body, p)
        header.setdefault(k, body[p + 4:p + 4 + n].decode("utf-8", "replace"))
        p += 4 + n
    pos += hlen + 8
    events = []
    complete = False
    while pos + 4 <= len(data):
        (blen,) = struct.unpack_from("<I", data, pos)
        if pos + 4 + blen + 8 > len(data):
            break
        b = data[pos + 4:pos + 4 + blen]
        pos += 4 + blen + 8
        if b[0] == 0xFF:
            complete = True
            break
        kind, flags, conn, start, end, batch, db, resp = struct.unpack_from("<BHQqqQIB", b, 0)
        q = 40
        strings = []
        for _ in range(4):
            (n,) = struct.unpack_from("<I", b, q)
            strings.append(b[q + 4:q + 4 + n])
            q += 4 + n
        eq(q, blen, "strings fill the record body")
        events.append({"kind": KINDS[kind], "flags": flags, "conn": conn, "start": start,
                       "end": end, "batch": batch, "db": db, "resp": resp,
                       "peer": strings[0].decode(), "name": strings[1].decode(),
                       "lib": strings[2].decode(), "bytes": strings[3]})
    return header, events, complete
