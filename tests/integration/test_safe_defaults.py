"""Safe defaults and careful file handling, as an operator meets them:

- flush_all is refused unless the pool allows it, with memcached -F's replies byte for byte
  (compared with a real `memcached -F`), and reaches no server; allowed, it flushes;
- only regular files up to 4 MiB are read as a config: `-t` on /dev/zero, a directory, a FIFO or
  an oversize file exits 1 at once naming the file, and a reload to one is rejected while the
  old topology keeps serving;
- a unix-socket listen path is removed before bind only when it is a socket;
- the pid and log files are not opened through symlinks;
- `make run`'s script takes mcring and its memcached down with it, even killed by SIGKILL.
(client_connections' cap is in test_abuse; client_request_timeout is unit_dataplane's.)"""

import ctypes
import os
import signal
import socket
import subprocess
import time
import unittest

from harness import (HOST, MCRING_BIN, ROOT, IntegrationCase, Memcached, Mcring, _die_with_parent,
                     _track, free_port, make_tmpdir, parse_stats, port_accepts, remove_tmpdir,
                     requires_proxy, run_mcring, server_line, stop_process)

REFUSED = b"CLIENT_ERROR flush_all not allowed\r\n"
# Each flush_all form, then mn: memcached -F answers the refusal, nothing with noreply (when
# noreply is the last token), ERROR for too many tokens, and refuses before reading the delay.
FLUSH_FORMS = [
    (b"flush_all\r\n", REFUSED),
    (b"flush_all 10\r\n", REFUSED),
    (b"flush_all noreply\r\n", b""),
    (b"flush_all 0 noreply\r\n", b""),
    (b"flush_all abc\r\n", REFUSED),
    (b"flush_all abc noreply\r\n", b""),
    (b"flush_all noreply 10\r\n", REFUSED),
    (b"flush_all 1 2 3\r\n", b"ERROR\r\n"),
]


def wait_until(pred, timeout=5.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


@requires_proxy
class FlushAllTest(IntegrationCase):
    def test_refused_by_default_as_memcached_F(self):
        ref = Memcached(extra_args=("-F",))
        self.addCleanup(ref.stop)
        cl = self.cluster(n_backends=2)
        keys = [b"fk%d" % i for i in range(20)]
        with cl.conn() as c, self.conn(ref.port) as r:
            for k in keys:
                self.assertEqual(c.request(b"set %s 0 0 1\r\nv\r\n" % k), b"STORED\r\n")
            for line, want in FLUSH_FORMS:
                for conn, who in ((r, "memcached -F"), (c, "mcring")):
                    conn.send(line + b"mn\r\n")
                    got = conn.recv_until(lambda b: b.endswith(b"MN\r\n"), timeout=5)
                    self.assertEqual(got, want + b"MN\r\n", "%s: %r" % (who, line))
            # Every key is still on its backend: nothing reached a server.
            held = sum(len(b.get_many(keys)) for b in cl.backends)
            self.assertEqual(held, len(keys))
            for b in cl.backends:
                with b.conn() as bc:
                    self.assertEqual(parse_stats(bc.request(b"stats\r\n"))["cmd_flush"], "0")
            st = parse_stats(c.request(b"stats\r\n"))
            # memcached counts every refused flush_all in cmd_flush (not the ERROR one); mcring's own
            # count is mcring_cmd_flush (stats' cmd_flush is the servers' sum: 0 here).
            self.assertEqual(st["mcring_cmd_flush"], "7")
            self.assertEqual(st["cmd_flush"], "0")
            self.assertEqual(st["cmd_flush_refused"], "7")
            self.assertEqual(parse_stats(r.request(b"stats\r\n"))["cmd_flush"], "7")

    def test_allowed_flushes_every_server(self):
        cl = self.cluster(n_backends=2, extra={"allow_flush_all": "true"})
        keys = [b"fa%d" % i for i in range(20)]
        with cl.conn() as c:
            for k in keys:
                self.assertEqual(c.request(b"set %s 0 0 1\r\nv\r\n" % k), b"STORED\r\n")
            self.assertEqual(c.request(b"flush_all\r\n"), b"OK\r\n")
            self.assertEqual(sum(len(b.get_many(keys)) for b in cl.backends), 0)
            self.assertEqual(parse_stats(c.request(b"stats\r\n"))["cmd_flush_refused"], "0")


@requires_proxy
class ConfigFileTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)

    def check_refused(self, path, what):
        start = time.monotonic()
        res = run_mcring(["-t", "-c", path], timeout=10)
        took = time.monotonic() - start
        err = res.stderr.decode(errors="replace")
        self.assertEqual(res.returncode, 1, err)
        self.assertLess(took, 1.0, "mcring -t -c %s took %.2f s" % (path, took))
        self.assertIn("%s: cannot read config file: %s" % (path, what), err)
        self.assertIn("configuration file '%s' syntax is invalid" % path, err)

    def test_check_mode_refuses_what_is_not_a_small_regular_file(self):
        self.check_refused("/dev/zero", "it is a character device, not a regular file")
        self.check_refused(self.tmp, "it is a directory, not a regular file")
        fifo = os.path.join(self.tmp, "fifo.yml")
        os.mkfifo(fifo)
        self.check_refused(fifo, "it is a FIFO, not a regular file")
        big = os.path.join(self.tmp, "big.yml")
        with open(big, "wb") as f:
            f.write(b"#" * (4 * 1024 * 1024 + 1))
        self.check_refused(big, "it has 4194305 bytes, larger than the 4 MiB a config file may have")

    def test_startup_refuses_dev_zero(self):
        start = time.monotonic()
        res = subprocess.run([MCRING_BIN, "-c", "/dev/zero", "-s", "0"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10,
                             preexec_fn=_die_with_parent)
        self.assertEqual(res.returncode, 1)
        self.assertLess(time.monotonic() - start, 1.0)
        self.assertIn(b"/dev/zero: cannot read config file: it is a character device", res.stdout)

    def test_reload_to_fifo_or_oversize_file_is_rejected(self):
        backend = Memcached()
        self.addCleanup(backend.stop)
        proxy = Mcring([server_line(backend.addr)], self.tmp)
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        c = self.conn(proxy.port)
        self.assertEqual(c.request(b"set rk 0 0 2\r\nok\r\n"), b"STORED\r\n")
        failures = 0
        for make, what in ((lambda p: os.mkfifo(p), "it is a FIFO"),
                           (lambda p: write_file(p, b"#" * (5 << 20)), "larger than the 4 MiB")):
            os.unlink(proxy.config_path)
            make(proxy.config_path)
            proxy.proc.send_signal(signal.SIGHUP)
            stats = {}

            def rejected():
                stats.update(parse_stats(c.request(b"stats\r\n")))
                return int(stats["reload_failures"]) > failures
            self.assertTrue(wait_until(rejected), "reload not rejected: %r" % stats)
            failures = int(stats["reload_failures"])
            # stats writes the error as one token (spaces as _), as memcached_exporter needs
            self.assertIn(what.replace(" ", "_"), stats.get("reload_last_error", ""))
            self.assertEqual(stats["config_generation"], "1")
            # The old topology keeps serving, on the same and on new connections.
            self.assertEqual(c.request(b"get rk\r\n"), b"VALUE rk 0 2\r\nok\r\nEND\r\n")
            with proxy_conn(proxy) as c2:
                self.assertEqual(c2.request(b"get rk\r\n"), b"VALUE rk 0 2\r\nok\r\nEND\r\n")
        self.assertIsNone(proxy.proc.poll())


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read_file(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def proxy_conn(proxy):
    from harness import Conn
    return Conn(HOST, proxy.port, timeout=5)


def start_failing(args, timeout=10):
    """Runs mcring expecting it to refuse to start: (exit code, output)."""
    res = subprocess.run([MCRING_BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=timeout, preexec_fn=_die_with_parent)
    return res.returncode, res.stdout.decode(errors="replace")


@requires_proxy
class FilesTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backend = Memcached()
        self.addCleanup(self.backend.stop)

    def config(self, listen):
        path = os.path.join(self.tmp, "m.yml")
        with open(path, "w") as f:
            f.write("u:\n  listen: %s\n  servers:\n    - %s\n" % (listen, server_line(self.backend.addr)))
        return path

    def test_unix_listen_path_removed_only_when_a_socket(self):
        path = os.path.join(self.tmp, "mc.sock")
        with open(path, "w") as f:
            f.write("precious\n")
        rc, out = start_failing(["-c", self.config(path), "-s", "0"])
        self.assertEqual(rc, 1, out)
        self.assertIn("cannot listen on %s: a regular file is there, not a socket" % path, out)
        with open(path) as f:
            self.assertEqual(f.read(), "precious\n")
        # A socket left by an earlier run is replaced, and mcring serves on it.
        os.unlink(path)
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(path)
        stale.close()
        proc = _track(subprocess.Popen([MCRING_BIN, "-c", self.config(path), "-s", "0"],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent))
        self.addCleanup(stop_process, proc)

        def serves():
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(2)
                    s.connect(path)
                    s.sendall(b"version\r\n")
                    return s.recv(100).startswith(b"VERSION ")
            except OSError:
                return False
        self.assertTrue(wait_until(lambda: proc.poll() is None and serves()))
        self.assertEqual(stop_process(proc), 0)
        self.assertFalse(os.path.exists(path), "its own socket is removed at exit")

    def test_pid_and_log_files_not_followed_through_symlinks(self):
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        link = os.path.join(self.tmp, "link")
        os.symlink(victim, link)
        conf = self.config("%s:%d" % (HOST, free_port()))
        rc, out = start_failing(["-c", conf, "-s", "0", "-p", link])
        self.assertEqual(rc, 1, out)
        self.assertIn("pid file '%s' is a symbolic link" % link, out)
        rc, out = start_failing(["-c", conf, "-s", "0", "-o", link])
        self.assertEqual(rc, 1, out)
        self.assertIn("log file '%s' is a symbolic link" % link, out)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertTrue(os.path.islink(link))
        # A plain pid file: written with the pid once serving, removed at exit.
        pid_path = os.path.join(self.tmp, "mcring.pid")
        log_path = os.path.join(self.tmp, "mcring.log")
        port = free_port()
        proc = _track(subprocess.Popen(
            [MCRING_BIN, "-c", self.config("%s:%d" % (HOST, port)), "-s", "0", "-p", pid_path,
             "-o", log_path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent))
        self.addCleanup(stop_process, proc)
        self.assertTrue(wait_until(lambda: port_accepts(port) and os.path.exists(pid_path)
                                   and read_file(pid_path) == "%d\n" % proc.pid))
        self.assertEqual(stop_process(proc), 0)
        self.assertFalse(os.path.exists(pid_path))
        with open(log_path) as f:
            self.assertIn("mcring started", f.read())


PR_SET_CHILD_SUBREAPER = 36


def answers(port):
    try:
        with socket.create_connection((HOST, port), timeout=1) as s:
            s.settimeout(1)
            s.sendall(b"version\r\n")
            return s.recv(100).startswith(b"VERSION ")
    except OSError:
        return False


@requires_proxy
class RunLocalTest(IntegrationCase):
    """packaging/run-local.sh killed with SIGKILL: its trap cannot run, the parent-death signal
    still stops mcring and the memcached servers it started."""

    def test_sigkill_of_the_script_stops_what_it_started(self):
        if subprocess.run(["setpriv", "--pdeathsig", "TERM", "true"]).returncode != 0:
            raise unittest.SkipTest("setpriv --pdeathsig unavailable")
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        # Orphans of the script become this process's children: their exit can be awaited.
        self.assertEqual(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0)
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        ports = [free_port() for _ in range(2)]
        listen = free_port()
        conf = os.path.join(tmp, "run.yml")
        with open(conf, "w") as f:
            f.write("run:\n  listen: %s:%d\n  servers:\n" % (HOST, listen) +
                    "".join("    - %s:%d:1\n" % (HOST, p) for p in ports))
        env = dict(os.environ, MCRING_BIN=MCRING_BIN, MCRING_RUN_CONFIG=conf,
                   MCRING_RUN_PORTS=" ".join(map(str, ports)))
        script = _track(subprocess.Popen(["bash", os.path.join(ROOT, "packaging", "run-local.sh")],
                                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent))
        started = []
        self.addCleanup(self._end, started)
        self.addCleanup(stop_process, script, signal.SIGKILL)
        self.addCleanup(script.stdout.close)
        deadline = time.monotonic() + 10
        mcring_pid = None
        while mcring_pid is None and time.monotonic() < deadline:
            line = script.stdout.readline().decode()
            if not line:
                break
            if "(pid " in line:
                started.append(int(line.rsplit("(pid ", 1)[1].rstrip(")\n")))
            if line.startswith("mcring pid "):
                mcring_pid = int(line.split()[2])
                started.append(mcring_pid)
        self.assertIsNotNone(mcring_pid, "the script did not start mcring")
        self.assertEqual(len(started), 3)
        # Everyone serving first: memcached loses a SIGTERM that arrives while it starts up.
        for port in ports + [listen]:
            self.assertTrue(wait_until(lambda: answers(port), timeout=10), "%d not serving" % port)
        script.kill()
        script.wait(5)
        # Reparented to us, each exits on its parent-death signal; reap and await it by PID.
        gone = {}
        deadline = time.monotonic() + 10
        while len(gone) < len(started) and time.monotonic() < deadline:
            for pid in started:
                if pid not in gone:
                    try:
                        done, status = os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:  # not ours to reap: gone only if it no longer is
                        done, status = (pid, None) if not os.path.exists("/proc/%d" % pid) else (0, 0)
                    if done == pid:
                        gone[pid] = status
            time.sleep(0.02)
        for pid in gone:
            started.remove(pid)  # reaped: the cleanup must not signal that pid again
        self.assertEqual(started, [], "still running after the script died")
        # mcring stopped gracefully on SIGTERM: exit 0.
        self.assertEqual(gone[mcring_pid], 0)

    @staticmethod
    def _end(pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


if __name__ == "__main__":
    unittest.main()
