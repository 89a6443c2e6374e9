"""The process launcher of the benchmark scripts (compare.py, tls_compare.py) and the bench smoke
tests: memcached, mcring, nutcracker and the load generators, on free loopback ports.

It is the integration-test harness's (tests/integration/harness.py) process tracking, not a copy:
every child is started through it, so it is tracked by PID, gets SIGKILL if this process dies
(PR_SET_PDEATHSIG), and is stopped at exit (SIGTERM, then SIGKILL after a bounded wait), on
success, on errors and on Ctrl-C. memcached and mcring are the harness's own Memcached and Mcring
classes; a port taken by someone else between choosing it and binding it is retried on another.

The stampede experiment and the live hot-key run (mcring-bench stampede / hotkeys) start their
own processes, because a pool change is an action inside their measured window (bench/README.md).
"""

import os
import resource
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402  (after the path above)

HOST = harness.HOST
free_port = harness.free_port
port_accepts = harness.port_accepts
CLK_TCK = os.sysconf("SC_CLK_TCK")


def say(message):
    print(message, file=sys.stderr, flush=True)


def find_tool(name, *fallbacks):
    """The path of a program: on $PATH, else the first fallback that exists, else None."""
    for path in [shutil.which(name)] + list(fallbacks):
        if path and os.access(path, os.X_OK):
            return path
    return None


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def thread_ids(pid):
    """The thread ids of a running process ([] once it is gone)."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except OSError:
        return []


def rss_kb(pid):
    return harness.proc_rss_kb(pid)


def children_cpu_seconds():
    """User + system CPU of the children this process has waited for (a generator's, once the
    run that waited for it is over)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def raise_fd_limit(want):
    """Raises RLIMIT_NOFILE to `want` (or the hard limit) for this process and its children."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Server:
    """A started server: its name, port, PID (from a harness object or a tracked Popen)."""

    def __init__(self, name, port, proc, stopper, log_path=None):
        self.name, self.port, self.proc, self.log_path = name, port, proc, log_path
        self._stopper = stopper

    @property
    def pid(self):
        return self.proc.pid

    @property
    def addr(self):
        return "%s:%d" % (HOST, self.port)

    def alive(self):
        return self.proc.poll() is None

    def cpu_seconds(self):
        return cpu_seconds(self.pid)

    def rss_kb(self):
        return rss_kb(self.pid)

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except (OSError, TypeError):
            return "(no log)"

    def stop(self):
        """SIGTERM, then SIGKILL after the harness's grace period; a status other than a clean
        exit or our SIGTERM (e.g. an abort) is worth knowing about."""
        if self.proc.poll() is not None:
            return
        self._stopper()
        rc = self.proc.returncode
        if rc not in (0, -signal.SIGTERM, None):
            say("launch: warning: %s (pid %d) exited with status %s on SIGTERM"
                % (self.name, self.pid, rc))


class _PoolMcring(harness.Mcring):
    """harness.Mcring with the pool body given as text (compare.py measures mcring's defaults:
    the pool says only `listen` and `servers`) and the binary given per instance; other_pools:
    YAML text of more pools (without `listen`), written before the listening one."""

    def __init__(self, binary, pool_body, tmpdir, args, other_pools=""):
        self.binary, self.pool_body, self.other_pools = binary, pool_body, other_pools
        super().__init__([], tmpdir, args=args, pool="pool")

    def write_config(self, port):
        with open(self.config_path, "w") as f:
            f.write("%s%s:\n  listen: %s:%d\n%s" % (self.other_pools, self.pool, HOST, port,
                                                     self.pool_body))

    def start(self, attempts=4):
        saved, harness.MCRING_BIN = harness.MCRING_BIN, self.binary
        try:
            return super().start(attempts)
        finally:
            harness.MCRING_BIN = saved


class Launcher:
    """Starts servers in `work_dir` (configs, logs) and stops them all, newest first, in stop()
    or at exit. announce: print `launch: pid N started: CMD` for each, as the stampede does."""

    def __init__(self, work_dir, announce=True):
        self.work = work_dir
        self.announce = announce
        self.servers = []

    def _started(self, server, argv):
        self.servers.append(server)
        if self.announce:
            say("launch: pid %d started: %s" % (server.pid, " ".join(map(str, argv))))
        return server

    def memcached(self, name, memory_mb=64, extra_args=()):
        """A memcached (-t 1) on a free port, answering `version` (harness.Memcached)."""
        m = harness.Memcached(memory_mb=memory_mb, extra_args=extra_args)
        return self._started(Server(name, m.port, m.proc, m.stop), m.proc.args)

    def mcring(self, name, binary, pool_body, args=(), other_pools=""):
        """mcring with one pool, `listen` on a free port and `pool_body` (YAML lines under the
        pool, indented by two) after it; `-s` a free admin port, `-a 127.0.0.1`; log and config
        in work_dir/name/. other_pools: YAML text of pools without `listen` (e.g. the pools a
        pool with `routes` sends to), written before it."""
        tmp = os.path.join(self.work, name)
        os.makedirs(tmp, exist_ok=True)
        m = _PoolMcring(binary, pool_body, tmp, list(args), other_pools)
        return self._started(Server(name, m.port, m.proc, m.stop, m.log_path), m.proc.args)

    def start(self, name, command, ready=port_accepts, attempts=5, timeout=10.0):
        """Any server: command(port) gives its argv for a free port (writing its config if it
        needs one); it is up when ready(port) is true while it runs. stdout and stderr go to
        work_dir/name.log."""
        log_path = os.path.join(self.work, name + ".log")
        for _ in range(attempts):
            port = free_port()
            argv = command(port)
            with open(log_path, "ab") as log:
                proc = harness.spawn(argv, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT)
            deadline = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < deadline:
                if ready(port):
                    stopper = lambda p=proc: harness.stop_process(p)  # noqa: E731
                    return self._started(Server(name, port, proc, stopper, log_path), argv)
                time.sleep(0.02)
            harness.stop_process(proc, signal.SIGKILL, 1.0)
        raise RuntimeError("%s did not start on a free loopback port; log %s:\n%s"
                           % (name, log_path, Server(name, 0, None, None, log_path).log_tail()))

    def nutcracker(self, name, binary, pool_body):
        """nutcracker (twemproxy) with one pool, as mcring() writes it; `-s` a free stats port."""
        conf = os.path.join(self.work, name + ".yml")

        def command(port):
            with open(conf, "w") as f:
                f.write("pool:\n  listen: %s:%d\n%s" % (HOST, port, pool_body))
            return [binary, "-c", conf, "-s", str(free_port()), "-a", HOST, "-v", "4"]
        return self.start(name, command)

    def stop(self):
        for server in reversed(self.servers):
            server.stop()
        self.servers = []


def run_bounded(argv, timeout, stdout=None, stderr=None, stdin=subprocess.DEVNULL):
    """Runs argv to completion as a tracked child; SIGKILL after `timeout` seconds. Returns its
    exit status (None when killed at the bound)."""
    proc = harness.spawn(argv, stdin=stdin, stdout=stdout, stderr=stderr)
    return wait_bounded([proc], time.monotonic() + timeout)[0]


def wait_bounded(procs, deadline):
    """Waits for tracked children until `deadline` (time.monotonic()); any still running then is
    killed. Returns their exit statuses (None for those killed)."""
    statuses = []
    for proc in procs:
        try:
            statuses.append(proc.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            harness.stop_process(proc, signal.SIGKILL, 1.0)
            statuses.append(None)
        harness.stop_process(proc)  # forgets it (already exited)
    return statuses
