#!/usr/bin/python3
"""keyshift serve under `supervised systemd|auto|no`: the sd_notify messages a real unix
datagram socket named by NOTIFY_SOCKET receives (a path or an '@' abstract name), in
Valkey 8.0.1's order: STATUS while loading, STATUS ready and READY=1 once the socket
answers, STOPPING=1 at SIGTERM and at SHUTDOWN; INFO's process_supervised and CONFIG GET.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import eq, keyshift_bin, ok, run_tests, test, wait_for  # noqa: E402

import redis  # noqa: E402  (python3-redis, /usr/bin/python3)

WAIT = 20  # seconds a message may take to arrive before the test calls it missing


class Supervised:
    """keyshift serve on a unix socket in a temp dir, with a notification socket bound
    where systemd's would be."""

    def __init__(self, supervised, abstract=False, notify=True, extra=()):
        self.dir = tempfile.mkdtemp(prefix="ks-supervised-")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = "keyshift-it-notify-%d" % os.getpid()
            self.listener.bind("\0" + name)
            self.notify_socket = "@" + name
        else:
            self.notify_socket = os.path.join(self.dir, "notify")
            self.listener.bind(self.notify_socket)
        self.listener.settimeout(WAIT)
        self.sock = os.path.join(self.dir, "ks.sock")
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        if notify:
            env["NOTIFY_SOCKET"] = self.notify_socket
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            [keyshift_bin(), "serve", "--port", "0", "--unixsocket", self.sock,
             "--dir", self.dir, "--save", "", "--supervised", supervised, *extra],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def message(self):
        """The next datagram, or None when none came within WAIT seconds."""
        try:
            return self.listener.recv(4096).decode()
        except socket.timeout:
            return None

    def client(self):
        return redis.Redis(unix_socket_path=self.sock, socket_timeout=10)

    def output(self):
        self.log.flush()
        with open(os.path.join(self.dir, "log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.listener.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def serving(s):
    """Waits until the unsupervised server's socket exists (it is listening then)."""
    wait_for(lambda: os.path.exists(s.sock) or s.proc.poll() is not None, "the socket", WAIT)


def ready(s):
    """Reads the start-up messages; the server answers PING once READY=1 came."""
    eq(s.message(), "STATUS=keyshift is loading...\n", "first message")
    eq(s.message(), "STATUS=Ready to accept connections\n", "status once listening")
    eq(s.message(), "READY=1\n", "readiness")
    ok(s.client().ping(), "PING after READY=1")


def reports_systemd(s, configured):
    """INFO names what was detected, CONFIG GET what was configured."""
    eq(s.client().info("server")["process_supervised"], "systemd", "INFO")
    eq(s.client().config_get("supervised"), {"supervised": configured}, "CONFIG GET")


@test
def systemd_mode_notifies_ready_then_stopping_on_sigterm(h):
    with Supervised("systemd") as s:
        ready(s)
        reports_systemd(s, "systemd")
        s.proc.send_signal(signal.SIGTERM)
        eq(s.message(), "STOPPING=1\n", "at SIGTERM")
        eq(s.proc.wait(timeout=WAIT), 0, "exit status")
        ok("Supervised by systemd" in s.output(), s.output())


@test
def an_abstract_notify_socket_and_shutdown_save_report_the_final_save(h):
    with Supervised("systemd", abstract=True) as s:
        ready(s)
        s.client().set("k", "v")
        try:
            s.client().shutdown(save=True)
        except redis.exceptions.ConnectionError:
            pass
        eq(s.message(), "STOPPING=1\n", "at SHUTDOWN")
        eq(s.message(), "STATUS=Saving the final RDB snapshot\n", "before the save")
        eq(s.proc.wait(timeout=WAIT), 0, "exit status")
        ok(os.path.exists(os.path.join(s.dir, "dump.rdb")), "the snapshot was written")


@test
def a_failed_final_save_says_so_and_the_server_stays_up(h):
    with Supervised("systemd") as s:
        ready(s)
        # A directory where the snapshot should go: the save cannot rename onto it.
        os.mkdir(os.path.join(s.dir, "dump.rdb"))
        try:
            s.client().shutdown(save=True)
            ok(False, "SHUTDOWN SAVE succeeded although the save cannot work")
        except redis.exceptions.ResponseError as e:
            ok("Errors trying to SHUTDOWN" in str(e), str(e))
        eq(s.message(), "STOPPING=1\n", "at SHUTDOWN")
        eq(s.message(), "STATUS=Saving the final RDB snapshot\n", "before the save")
        eq(s.message(), "STATUS=Error trying to save the DB, can't exit.\n", "after it failed")
        ok(s.client().ping(), "still serving")


@test
def auto_mode_finds_systemd_through_notify_socket(h):
    with Supervised("auto") as s:
        ready(s)
        reports_systemd(s, "auto")


@test
def no_mode_and_auto_without_notify_socket_send_nothing(h):
    for mode, notify in (("no", True), ("auto", False)):
        with Supervised(mode, notify=notify) as s:
            s.listener.settimeout(0.2)
            serving(s)
            ok(s.client().ping(), mode + ": serving")
            eq(s.message(), None, mode + ": no notification")
            eq(s.client().info("server")["process_supervised"], "no", mode + ": INFO")


@test
def systemd_mode_without_notify_socket_serves_and_logs_why(h):
    with Supervised("systemd", notify=False) as s:
        serving(s)
        ok(s.client().ping(), "serving unsupervised")
        eq(s.client().info("server")["process_supervised"], "no", "INFO")
        ok("NOTIFY_SOCKET not found" in s.output(), s.output())


if __name__ == "__main__":
    run_tests()
