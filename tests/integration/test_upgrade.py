"""Upgrades without a dropped request, and listeners taken from systemd.

SIGUSR2 makes mcring execute its binary again and hand the new process its listening sockets
(SCM_RIGHTS); the old one stops accepting once the new one says it is ready, finishes what is in
flight, closes each connection at a request boundary and exits. Here: 10 upgrades under pipelined
load from clients that reconnect (0 failed requests, 0 lost replies, a new pid each time, the old
process gone); a broken config at upgrade leaves the old process serving; and a listening socket
passed as fd 3 with LISTEN_FDS/LISTEN_PID (systemd socket activation) is served, not bound anew.

The processes an upgrade creates are not our children: they are found through the pid file and
killed by pid in cleanup."""

import atexit
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest
from unittest import mock

import harness
from harness import (HOST, MCRING_BIN, Conn, IntegrationCase, Memcached, Mcring, make_tmpdir,
                     pool_yaml, remove_tmpdir, requires_proxy, server_line, split_reply, _track,
                     stop_process, _die_with_parent)

GRACE_MS = 5000
UPGRADES = 10
CLIENTS = 3
KEYS_PER_CLIENT = 40
BATCH = 16
MAX_BATCHES = 200000  # per client: a bound on the load loop besides its time limit


# Every pid an upgrade created, for the end of this process too (the harness's SIGKILL-on-parent-
# death does not reach them: they are children of the mcring they replaced).
_upgraded_pids = set()


def _kill_upgraded_at_exit():
    for pid in _upgraded_pids:
        if not pid_gone(pid) and is_mcring(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


atexit.register(_kill_upgraded_at_exit)


def read_pid(path):
    try:
        with open(path) as f:
            text = f.read().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def pid_gone(pid):
    """The process has exited (no such process, or a zombie nobody has reaped yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def is_mcring(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"mcring" in f.read()
    except OSError:
        return False


def wait_for(pred, timeout, step=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class LoadClient(threading.Thread):
    """Pipelines batches of sets and gets over its own keys, each key at most once per batch,
    checking every reply against the value it last stored. When the connection closes, it
    reconnects and resends the requests of the batch whose replies had not arrived: an upgrade
    closes a connection only between complete replies, but a batch written just as the old
    process closed the connection reaches nobody (TCP cannot tell), so those are sent again. Sets
    and gets are idempotent within a batch, so a resent request's expected reply is unchanged."""

    MAX_ATTEMPTS = 5

    def __init__(self, idx, port, stop, deadline):
        super().__init__(daemon=True)
        self.idx, self.port, self.stop, self.deadline = idx, port, stop, deadline
        self.keys = [b"up:%d:%d" % (idx, i) for i in range(KEYS_PER_CLIENT)]
        self.values = {}
        self.version = 0
        self.requests = self.batches = self.reconnects = self.resent = 0
        self.connect_failures = self.partial_replies = self.timeouts = 0
        self.failed = []  # (request, reply, expected)
        self.lost = 0     # requests that got no reply in MAX_ATTEMPTS connections
        self.error = None
        self.conn = None

    def connect(self):
        for _ in range(50):
            try:
                self.conn = Conn(HOST, self.port, timeout=10.0)
                return True
            except OSError:
                self.connect_failures += 1
                time.sleep(0.05)
        return False

    def make_batch(self):
        b = self.batches
        reqs = []
        for j in range(BATCH):
            key = self.keys[(b * BATCH + j) % len(self.keys)]
            if (b + j) % 3 == 0 or key not in self.values:
                self.version += 1
                val = b"%s=%d" % (key, self.version)
                reqs.append((b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val), b"STORED\r\n",
                             (key, val)))
            else:
                val = self.values[key]
                reqs.append((b"get %s\r\n" % key,
                             b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(val), val), None))
        return reqs

    def run_batch(self, reqs):
        pending = list(reqs)
        for attempt in range(self.MAX_ATTEMPTS):
            if self.conn is None and not self.connect():
                break
            if attempt > 0:
                self.resent += len(pending)
            try:
                self.conn.send(b"".join(r[0] for r in pending))
            except OSError:
                pass  # closed under us: the replies below will show EOF
            deadline = time.monotonic() + 30.0  # for this attempt's replies
            while pending:
                r = split_reply(self.conn.buf)
                if r is None:
                    if time.monotonic() >= deadline:
                        self.timeouts += 1
                        break
                    if not self.conn._fill(deadline) and self.conn.eof:
                        break
                    continue
                reply, self.conn.buf = r
                req, expected, store = pending.pop(0)
                self.requests += 1
                if reply != expected:
                    self.failed.append((req, reply, expected))
                elif store:
                    self.values[store[0]] = store[1]
            if not pending:
                return
            # The connection ended before these replies: reconnect and send them again.
            if self.conn.buf:
                self.partial_replies += 1
            self.conn.close()
            self.conn = None
            self.reconnects += 1
        self.lost += len(pending)

    def run(self):
        try:
            while (not self.stop.is_set() and time.monotonic() < self.deadline and
                   self.batches < MAX_BATCHES):
                self.run_batch(self.make_batch())
                self.batches += 1
                # A connection the proxy has closed after our last reply: reconnect before
                # writing the next batch (it would reach nobody).
                if self.conn is not None:
                    try:
                        self.conn.sock.setblocking(False)
                        peek = self.conn.sock.recv(1, socket.MSG_PEEK)
                        if peek == b"":
                            self.conn.close()
                            self.conn = None
                            self.reconnects += 1
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        self.conn.close()
                        self.conn = None
                        self.reconnects += 1
                    if self.conn is not None:
                        self.conn.sock.setblocking(True)
        except Exception as e:  # reported by the test, not lost in the thread
            self.error = repr(e)
        finally:
            if self.conn is not None:
                self.conn.close()


@requires_proxy
class UpgradeTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir("mcring-upgrade-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = [Memcached(), Memcached()]
        for m in self.backends:
            self.addCleanup(m.stop)
        confdir = os.path.join(self.tmp, "conf")
        os.mkdir(confdir)
        self.pid_file = os.path.join(self.tmp, "mcring.pid")
        self.seen_pids = set()
        self.addCleanup(self.kill_upgraded)
        self.proxy = Mcring([server_line(m.addr) for m in self.backends], self.tmp,
                            args=["--threads", "2", "--shutdown-grace", str(GRACE_MS),
                                  "-p", self.pid_file],
                            config_path=os.path.join(confdir, "mcring.yml"))
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        self.assertTrue(wait_for(lambda: read_pid(self.pid_file) == self.proxy.pid, 5))
        self.seen_pids.add(self.proxy.pid)

    def kill_upgraded(self):
        """The processes upgrades started, found by pid (pid file and every pid seen)."""
        pids = set(self.seen_pids)
        p = read_pid(self.pid_file)
        if p:
            pids.add(p)
        for pid in pids:
            if pid != self.proxy.pid and not pid_gone(pid) and is_mcring(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for pid in pids:
            wait_for(lambda: pid_gone(pid), 5)

    def old_exited(self, pid):
        if pid == self.proxy.pid:
            return self.proxy.proc.poll() is not None
        return pid_gone(pid)

    def log_text(self):
        with open(self.proxy.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def upgrade(self):
        """SIGUSR2 to the process in the pid file; returns (old, new, s to ready, s to old exit)."""
        old = read_pid(self.pid_file)
        self.assertIsNotNone(old)
        t0 = time.monotonic()
        os.kill(old, signal.SIGUSR2)
        new = wait_for(lambda: (lambda p: p if p and p != old else None)(read_pid(self.pid_file)),
                       30)
        self.assertTrue(new, "no new pid in the pid file 30 s after SIGUSR2\n" + self.log_text()[-3000:])
        self.seen_pids.add(new)
        _upgraded_pids.add(new)
        t_ready = time.monotonic() - t0
        self.assertTrue(wait_for(lambda: self.old_exited(old), GRACE_MS / 1000 + 10),
                        "old process %d still running after the grace period" % old)
        t_exit = time.monotonic() - t0
        self.assertFalse(pid_gone(new), "the new process %d is not running" % new)
        return old, new, t_ready, t_exit

    def test_ten_upgrades_under_pipelined_load_lose_nothing(self):
        stop = threading.Event()
        clients = [LoadClient(i, self.proxy.port, stop, time.monotonic() + 180)
                   for i in range(CLIENTS)]
        for c in clients:
            c.start()
        try:
            def progressed(since):
                return all(c.batches >= s + 3 for c, s in zip(clients, since))
            self.assertTrue(wait_for(lambda: progressed([0] * CLIENTS), 20), "load did not start")
            timings = []
            for _ in range(UPGRADES):
                before = [c.batches for c in clients]
                old, new, t_ready, t_exit = self.upgrade()
                timings.append((t_ready, t_exit))
                self.assertNotEqual(old, new)
                # Under load across every upgrade: each client goes on after it.
                self.assertTrue(wait_for(lambda: progressed(before), 20),
                                "a client made no progress after upgrade %d" % len(timings))
        finally:
            stop.set()
            for c in clients:
                c.join(30)
        for c in clients:
            self.assertFalse(c.is_alive(), "client %d did not finish" % c.idx)
            self.assertIsNone(c.error, c.error)
        total = sum(c.requests for c in clients)
        failed = [f for c in clients for f in c.failed]
        lost = sum(c.lost for c in clients)
        print("\n  upgrades: %d; requests: %d in %d batches of %d from %d clients; reconnects: %d; "
              "requests resent: %d; connect failures: %d; partial replies at a close: %d; "
              "replies waited for in vain (30 s): %d; failed: %d; lost: %d"
              % (UPGRADES, total, sum(c.batches for c in clients), BATCH, CLIENTS,
                 sum(c.reconnects for c in clients), sum(c.resent for c in clients),
                 sum(c.connect_failures for c in clients),
                 sum(c.partial_replies for c in clients), sum(c.timeouts for c in clients),
                 len(failed), lost))
        print("  per upgrade: SIGUSR2 -> new pid ready %.3f s avg (max %.3f); -> old exited "
              "%.3f s avg (max %.3f)"
              % (sum(t[0] for t in timings) / len(timings), max(t[0] for t in timings),
                 sum(t[1] for t in timings) / len(timings), max(t[1] for t in timings)))
        self.assertEqual(failed[:5], [], "requests with a wrong reply")
        self.assertEqual(lost, 0, "requests never answered")
        self.assertEqual(sum(c.partial_replies for c in clients), 0,
                         "a connection closed in the middle of a reply")
        self.assertEqual(sum(c.connect_failures for c in clients), 0,
                         "connections refused during an upgrade")
        self.assertEqual(sum(c.timeouts for c in clients), 0, "replies that never came")
        self.assertEqual(len(self.seen_pids), UPGRADES + 1)
        self.assertIn("upgrade", self.log_text())

    def test_broken_config_at_upgrade_keeps_the_old_process_serving(self):
        c = self.conn(self.proxy.port)
        self.assertEqual(c.request(b"set bk 0 0 2\r\nok\r\n"), b"STORED\r\n")
        with open(self.proxy.config_path) as f:
            good = f.read()
        with open(self.proxy.config_path, "w") as f:
            f.write("alpha:\n  listen: [unclosed\n  servers: {\n")
        os.kill(self.proxy.pid, signal.SIGUSR2)
        self.assertTrue(wait_for(lambda: "upgrade failed" in self.log_text(), 30),
                        "no 'upgrade failed' line in the log:\n" + self.log_text()[-3000:])
        line = [l for l in self.log_text().splitlines() if "upgrade failed" in l][-1]
        print("\n  log: " + line)
        self.assertIn("YAML", line, "the reason (the new process's config error) is not in it")
        self.assertEqual(read_pid(self.pid_file), self.proxy.pid)
        self.assertIsNone(self.proxy.proc.poll())
        self.assertEqual(c.request(b"get bk\r\n"), b"VALUE bk 0 2\r\nok\r\nEND\r\n")
        c2 = self.conn(self.proxy.port)
        self.assertEqual(c2.request(b"get bk\r\n"), b"VALUE bk 0 2\r\nok\r\nEND\r\n")
        # Fixed: the next upgrade goes through (the failed one left nothing half done).
        with open(self.proxy.config_path, "w") as f:
            f.write(good)
        old, new, _, _ = self.upgrade()
        self.assertEqual(old, self.proxy.pid)
        c3 = self.conn(self.proxy.port)
        self.assertEqual(c3.request(b"get bk\r\n"), b"VALUE bk 0 2\r\nok\r\nEND\r\n")

    def test_replaced_binary_runs_and_a_second_sigusr2_is_ignored(self):
        # mcring started from a copy of the binary; the file at that path is then replaced (a
        # rename, as a package upgrade does) by a "new binary" that fails: a script that sleeps,
        # then exits 3. The upgrade runs it (the path, not the old inode), is in progress while
        # it sleeps (a second SIGUSR2 then is ignored), and fails when it exits: the old process
        # keeps serving. With the real binary back at the path, the next SIGUSR2 goes through.
        d = os.path.join(self.tmp, "copy")
        os.mkdir(d)
        binary = os.path.join(d, "mcring")
        shutil.copy2(MCRING_BIN, binary)
        pid_file = os.path.join(d, "mcring.pid")
        with mock.patch.object(harness, "MCRING_BIN", binary):
            proxy = Mcring([server_line(m.addr) for m in self.backends], d,
                           args=["--threads", "1", "-p", pid_file])
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        self.assertTrue(wait_for(lambda: read_pid(pid_file) == proxy.pid, 5))

        def log():
            with open(proxy.log_path, "rb") as f:
                return f.read().decode(errors="replace")

        c = self.conn(proxy.port)
        self.assertEqual(c.request(b"set sg 0 0 2\r\nok\r\n"), b"STORED\r\n")
        staged = binary + ".new"
        with open(staged, "w") as f:
            f.write("#!/bin/sh\nsleep 3\nexit 3\n")
        os.chmod(staged, 0o755)
        os.replace(staged, binary)
        os.kill(proxy.pid, signal.SIGUSR2)
        self.assertTrue(wait_for(lambda: "upgrade: started" in log(), 10), log()[-3000:])
        os.kill(proxy.pid, signal.SIGUSR2)
        self.assertTrue(wait_for(lambda: "SIGUSR2 ignored, an upgrade is in progress" in log(), 10),
                        log()[-3000:])
        self.assertTrue(wait_for(lambda: "upgrade failed" in log(), 20), log()[-3000:])
        lines = [l for l in log().splitlines() if "upgrade" in l or "SIGUSR2" in l]
        print("\n  " + "\n  ".join(lines))
        self.assertIn("exited with status 3 before it was ready", lines[-1])
        self.assertEqual(log().count("upgrade: started"), 1, "the second SIGUSR2 started one")
        self.assertEqual(read_pid(pid_file), proxy.pid)
        self.assertIsNone(proxy.proc.poll())
        self.assertEqual(c.request(b"get sg\r\n"), b"VALUE sg 0 2\r\nok\r\nEND\r\n")
        # The real binary back at the path: this upgrade goes through.
        shutil.copy2(MCRING_BIN, staged)
        os.replace(staged, binary)
        os.kill(proxy.pid, signal.SIGUSR2)
        new = wait_for(lambda: (lambda p: p if p and p != proxy.pid else None)(read_pid(pid_file)),
                       30)
        self.assertTrue(new, log()[-3000:])
        self.seen_pids.add(new)  # killed by kill_upgraded
        _upgraded_pids.add(new)
        self.assertTrue(wait_for(lambda: proxy.proc.poll() is not None, GRACE_MS / 1000 + 10))
        c2 = self.conn(proxy.port)
        self.assertEqual(c2.request(b"get sg\r\n"), b"VALUE sg 0 2\r\nok\r\nEND\r\n")


@requires_proxy
class SocketActivationTest(IntegrationCase):

    def test_listener_passed_as_fd_3_is_served(self):
        tmp = make_tmpdir("mcring-sockact-")
        self.addCleanup(remove_tmpdir, tmp)
        m = Memcached()
        self.addCleanup(m.stop)
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(lsock.close)
        lsock.bind((HOST, 0))
        lsock.listen(64)
        port = lsock.getsockname()[1]
        # A second socket nobody configured: logged and closed.
        spare = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(spare.close)
        spare.bind((HOST, 0))
        spare.listen(1)
        config = os.path.join(tmp, "mcring.yml")
        with open(config, "w") as f:
            f.write(pool_yaml("alpha", port, [server_line(m.addr)]))
        # systemd's readiness socket (Type=notify): mcring says READY=1 and its pid there.
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(notify.close)
        notify_path = os.path.join(tmp, "notify.sock")
        notify.bind(notify_path)
        log_path = os.path.join(tmp, "mcring.log")
        log = open(log_path, "wb")
        self.addCleanup(log.close)

        def preexec():
            _die_with_parent()
            # Via descriptors above 100, so neither socket's own number is overwritten first.
            high = [fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, 100) for s in (lsock, spare)]
            for fd, target in zip(high, (3, 4)):
                os.dup2(fd, target)  # inheritable: kept across exec
                os.close(fd)

        # LISTEN_PID must be the pid that runs mcring: the shell's, which exec keeps.
        proc = _track(subprocess.Popen(
            ["/bin/sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=2 exec "$@"', "sh", MCRING_BIN,
             "-c", config, "-s", "0", "--threads", "1"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=tmp,
            env=dict(os.environ, NOTIFY_SOCKET=notify_path), close_fds=False, preexec_fn=preexec))
        self.addCleanup(stop_process, proc)

        def log_text():
            with open(log_path, "rb") as f:
                return f.read().decode(errors="replace")

        self.assertTrue(wait_for(lambda: "mcring started" in log_text() or proc.poll() is not None,
                                 15))
        self.assertIsNone(proc.poll(), "mcring exited:\n" + log_text())
        ino = os.fstat(lsock.fileno()).st_ino
        self.assertEqual(os.stat("/proc/%d/fd/3" % proc.pid).st_ino, ino,
                         "fd 3 of mcring is not the socket passed")
        self.assertFalse(os.path.exists("/proc/%d/fd/4" % proc.pid),
                         "the unused inherited fd 4 was not closed")
        lsock.close()  # only mcring's copy is left: requests are served on it
        c = self.conn(port)
        self.assertEqual(c.request(b"set sa 0 0 1\r\nx\r\n"), b"STORED\r\n")
        self.assertEqual(c.request(b"get sa\r\n"), b"VALUE sa 0 1\r\nx\r\nEND\r\n")
        self.assertEqual(m.get("sa"), b"x")
        text = log_text()
        print("\n  " + "\n  ".join(l for l in text.splitlines() if "systemd" in l or "inherit" in l))
        self.assertIn("listening on 127.0.0.1:%d inherited from systemd" % port, text)
        notify.settimeout(5)
        self.assertEqual(notify.recv(256), b"READY=1\nMAINPID=%d" % proc.pid)
        self.assertIn("127.0.0.1:%d (fd 4, from systemd) matches no listen address" %
                      spare.getsockname()[1], text)


if __name__ == "__main__":
    unittest.main()
