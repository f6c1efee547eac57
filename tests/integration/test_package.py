#!/usr/bin/python3
"""The Debian package: `packaging/build-deb.sh` from the already built binary, its contents
(binary, compressed man pages, conffiles, unit, logrotate, copyright, changelog, md5sums),
lintian without errors, and then on this machine: `apt-get install ./keyshift_*.deb`,
`keyshift --version`, `man -w`, the keyshift user, `systemd-analyze verify` on the installed
unit, the installed `keyshift serve /etc/keyshift/keyshift.conf` run as the keyshift user
(no systemd here: the test makes /run/keyshift as RuntimeDirectory would and listens on
NOTIFY_SOCKET itself) until READY=1, PING over the socket, SIGTERM and STOPPING=1, then
`apt-get remove` (config, the saved dataset and the log stay) and `apt-get purge` (nothing stays).

Installing changes the machine, so that part runs only as root with
KEYSHIFT_PACKAGE_INSTALL_TEST=1 or CI set (a throw-away container), and not when a keyshift
package is installed already. Skips cleanly without dpkg-deb or lintian.
"""

import atexit
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import REPO, Skip, eq, keyshift_bin, ok, run_tests, test  # noqa: E402

WAIT = 30
# Trees the package writes to; what dpkg, apt and man-db keep about packages is theirs.
WATCHED = ("/etc", "/usr/bin", "/usr/share/man", "/usr/share/doc", "/usr/share/lintian",
           "/lib/systemd/system", "/var/lib", "/var/log", "/run")
NOT_OURS = ("/var/lib/dpkg", "/var/lib/apt", "/var/log/apt", "/var/log/dpkg.log",
            "/var/cache", "/etc/ld.so.cache", "/var/lib/man-db", "/etc/passwd", "/etc/group",
            "/etc/shadow", "/etc/gshadow", "/etc/subuid", "/etc/subgid", "/run/utmp")


class Built:
    deb = None
    dir = None


TOOLS = ("dpkg-deb", "dpkg-shlibdeps", "objcopy", "lintian")


def built():
    """The .deb, built once per run into a temp dir (tests share it)."""
    if Built.deb is None:
        Built.dir = tempfile.mkdtemp(prefix="ks-deb-")
        atexit.register(shutil.rmtree, Built.dir, True)
        out = subprocess.run(["bash", os.path.join(REPO, "packaging", "build-deb.sh"),
                              "--binary", keyshift_bin(), "--out", Built.dir],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise AssertionError("build-deb.sh failed:\n" + out.stdout + out.stderr)
        Built.deb = out.stdout.strip().splitlines()[-1]
    return Built.deb


def run(*argv, **kw):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=600, **kw)


@test
def build_deb_names_the_package_after_the_cmake_version_and_the_architecture(h):
    deb = built()
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        version = f.read().split("project(keyshift VERSION ", 1)[1].split()[0]
    arch = run("dpkg", "--print-architecture").stdout.strip()
    eq(os.path.basename(deb), "keyshift_%s-1_%s.deb" % (version, arch), "file name")
    eq(run("dpkg-deb", "-f", deb, "Version").stdout.strip(), version + "-1", "Version")
    depends = run("dpkg-deb", "-f", deb, "Depends").stdout
    ok("adduser" in depends and "libc6" in depends and "libssl3" in depends, depends)


@test
def the_package_holds_binary_pages_config_unit_and_documentation(h):
    deb = built()
    listing = run("dpkg-deb", "-c", deb).stdout
    paths = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
    for path in ("/usr/bin/keyshift", "/usr/share/man/man1/keyshift.1.gz",
                 "/usr/share/man/man1/keyshift-serve.1.gz",
                 "/usr/share/man/man5/keyshift-capture.5.gz", "/etc/keyshift/keyshift.conf",
                 "/lib/systemd/system/keyshift.service", "/etc/logrotate.d/keyshift",
                 "/usr/share/doc/keyshift/copyright",
                 "/usr/share/doc/keyshift/changelog.Debian.gz"):
        ok(path in paths, "%s missing from:\n%s" % (path, listing))
    ok(not any(p.endswith((".1", ".5")) for p in paths), "uncompressed man page")
    with tempfile.TemporaryDirectory() as tmp:
        run("dpkg-deb", "-R", deb, tmp)
        with open(os.path.join(tmp, "DEBIAN", "conffiles")) as f:
            eq(f.read().split(), ["/etc/keyshift/keyshift.conf", "/etc/logrotate.d/keyshift"],
               "conffiles")
        check = run("md5sum", "--check", "--strict", os.path.join(tmp, "DEBIAN", "md5sums"),
                    cwd=tmp)
        eq(check.returncode, 0, "md5sums: " + check.stdout + check.stderr)
        with open(os.path.join(tmp, "etc", "keyshift", "keyshift.conf")) as f:
            conf = f.read()
        for line in ("supervised systemd", "unixsocket /run/keyshift/keyshift.sock",
                     "dir /var/lib/keyshift"):
            ok(("\n" + line + "\n") in conf, line)
        test_config = run(keyshift_bin(), "serve", os.path.join(tmp, "etc", "keyshift",
                                                                "keyshift.conf"),
                          "--test-config")
        eq(test_config.returncode, 0, test_config.stdout + test_config.stderr)
        file_type = run("file", "-b", os.path.join(tmp, "usr", "bin", "keyshift")).stdout
        ok("stripped" in file_type and "not stripped" not in file_type, file_type)


@test
def lintian_reports_no_errors(h):
    deb = built()
    out = run("lintian", "--fail-on", "error", deb)
    errors = [line for line in out.stdout.splitlines() if line.startswith("E:")]
    eq(errors, [], "lintian errors")
    eq(out.returncode, 0, out.stdout + out.stderr)


def install_allowed():
    if os.geteuid() != 0:
        raise Skip("installing the package needs root")
    if os.environ.get("KEYSHIFT_PACKAGE_INSTALL_TEST") != "1" and not os.environ.get("CI"):
        raise Skip("set KEYSHIFT_PACKAGE_INSTALL_TEST=1 (or CI) to install it on this machine")
    status = run("dpkg-query", "-W", "-f=${Status}", "keyshift").stdout
    if "installed" in status or "config-files" in status:
        raise Skip("a keyshift package is on this machine already (%s)" % status)


def snapshot():
    """Every path under the watched trees, apart from the package managers' own."""
    found = set()
    for top in WATCHED:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames
                           if not os.path.join(dirpath, d).startswith(NOT_OURS)]
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if not path.startswith(NOT_OURS):
                    found.add(path)
    return found


class NotifyListener:
    """A datagram socket where systemd's notification socket would be, writable by the
    keyshift user."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ks-notify-")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        os.chmod(self.path, 0o777)
        self.sock.settimeout(WAIT)

    def until(self, wanted):
        """The messages received up to and including `wanted`."""
        seen = []
        while wanted not in seen:
            try:
                seen.append(self.sock.recv(4096).decode())
            except socket.timeout:
                raise AssertionError("no %r from keyshift serve; got %r" % (wanted, seen))
        return seen

    def close(self):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def serve_installed():
    """The installed server with the packaged config, as the unit runs it (User=keyshift,
    RuntimeDirectory=keyshift), until READY=1; PING, a write, SIGTERM, STOPPING=1."""
    os.makedirs("/run/keyshift", exist_ok=True)
    user = pwd.getpwnam("keyshift")
    os.chown("/run/keyshift", user.pw_uid, user.pw_gid)
    listener = NotifyListener()
    env = dict(os.environ, NOTIFY_SOCKET=listener.path)
    proc = subprocess.Popen(["setpriv", "--reuid=keyshift", "--regid=keyshift", "--init-groups",
                             "/usr/bin/keyshift", "serve", "/etc/keyshift/keyshift.conf"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        seen = listener.until("READY=1\n")
        eq(seen[0], "STATUS=keyshift is loading...\n", "first message")
        ping = run("redis-cli", "-s", "/run/keyshift/keyshift.sock", "PING")
        eq(ping.stdout.strip(), "PONG", "PING over the packaged socket: " + ping.stderr)
        eq(run("redis-cli", "-s", "/run/keyshift/keyshift.sock", "SET", "k", "v").stdout.strip(),
           "OK", "SET")
        eq(oct(os.stat("/run/keyshift/keyshift.sock").st_mode & 0o777), "0o770", "socket mode")
        proc.send_signal(signal.SIGTERM)
        listener.until("STOPPING=1\n")
        eq(proc.wait(timeout=WAIT), 0, "exit status")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        listener.close()
        # systemd removes the RuntimeDirectory when the service stops.
        shutil.rmtree("/run/keyshift", ignore_errors=True)
    eq(os.stat("/var/lib/keyshift/dump.rdb").st_uid, user.pw_uid, "dataset owner")
    with open("/var/log/keyshift/keyshift.log") as f:
        log = f.read()
    ok("Supervised by systemd" in log and "Ready to accept connections unix" in log, log)


@test
def installed_it_serves_the_packaged_config_and_purge_leaves_nothing(h):
    deb = built()
    install_allowed()
    before = snapshot()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        out = run("apt-get", "install", "-y", "-q", "--no-install-recommends",
                  os.path.abspath(deb), env=env)
        eq(out.returncode, 0, "apt-get install: " + out.stdout + out.stderr)
        eq(run("keyshift", "--version").stdout.split(), ["keyshift",
           run("dpkg-deb", "-f", deb, "Version").stdout.strip().rsplit("-", 1)[0]],
           "keyshift --version")
        eq(run("man", "-w", "keyshift").stdout.strip(), "/usr/share/man/man1/keyshift.1.gz",
           "man -w keyshift")
        eq(run("man", "-w", "keyshift-serve").stdout.strip(),
           "/usr/share/man/man1/keyshift-serve.1.gz", "man -w keyshift-serve")
        user = pwd.getpwnam("keyshift")
        ok(user.pw_uid < 1000 and user.pw_dir == "/var/lib/keyshift", str(user))
        eq(os.stat("/var/lib/keyshift").st_uid, user.pw_uid, "data directory owner")
        if shutil.which("systemd-analyze"):
            verify = run("systemd-analyze", "verify", "/lib/systemd/system/keyshift.service")
            eq(verify.returncode, 0, "systemd-analyze verify: " + verify.stdout + verify.stderr)
        serve_installed()

        out = run("apt-get", "remove", "-y", "-q", "keyshift", env=env)
        eq(out.returncode, 0, "apt-get remove: " + out.stdout + out.stderr)
        left = sorted(snapshot() - before)
        kept = ("/etc/keyshift", "/etc/logrotate.d/keyshift", "/var/lib/keyshift",
                "/var/log/keyshift", "/etc/systemd/system", "/var/lib/systemd/deb-systemd-helper")
        eq([p for p in left if not p.startswith(kept)], [], "left after remove")
        ok("/etc/keyshift/keyshift.conf" in left and "/var/lib/keyshift/dump.rdb" in left,
           "config and the dataset stay after remove: %r" % left)
        ok(not os.path.exists("/usr/bin/keyshift"), "binary removed")

        out = run("apt-get", "purge", "-y", "-q", "keyshift", env=env)
        eq(out.returncode, 0, "apt-get purge: " + out.stdout + out.stderr)
        eq(sorted(snapshot() - before), [], "left after purge")
        eq(run("getent", "passwd", "keyshift").returncode, 2, "keyshift user removed")
    finally:
        run("apt-get", "purge", "-y", "-q", "keyshift", env=env)


if __name__ == "__main__":
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        # Every test needs the package: skip the file as a whole (and pass, for ctest).
        print("SKIP all: %s not installed (apt-get install dpkg-dev lintian)" % ", ".join(missing))
        print("0 passed, 0 failed")
        sys.exit(0)
    run_tests()
