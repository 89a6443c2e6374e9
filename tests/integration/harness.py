"""Integration-test harness for mcring: real memcached backends, an mcring process, raw sockets.

Environment:
  MCRING_BIN     path of the mcring binary (default: <root>/build/mcring)
  MCRING_ROOT    repository root (default: two directories above this file)
  MCRING_TARGET  "mcring" (default) or "direct": the endpoint under test is then one memcached
                 itself, which validates the tests' expectations against real memcached. Tests
                 that only make sense for a proxy skip themselves in that mode (requires_proxy).
  MEMCACHED_BIN  default /usr/bin/memcached
  MCRING_KEEP_TMP=1  keep temp dirs (configs, logs) instead of deleting them

Rules kept here: only loopback addresses; every process started is tracked by PID and ended in
tearDown/atexit (SIGTERM, then SIGKILL after a bounded wait); every loop is bounded in time.
"""

import atexit
import contextlib
import hashlib
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HOST = "127.0.0.1"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("MCRING_ROOT") or os.path.join(HERE, "..", ".."))
MCRING_BIN = os.environ.get("MCRING_BIN") or os.path.join(ROOT, "build", "mcring")
MEMCACHED_BIN = os.environ.get("MEMCACHED_BIN", "/usr/bin/memcached")
TARGET = os.environ.get("MCRING_TARGET", "mcring").strip().lower()
DIRECT = TARGET == "direct"
KEEP_TMP = os.environ.get("MCRING_KEEP_TMP") == "1"
# Set by `make test-asan`: memory-growth bounds (RSS) are checked in the release run only,
# since the sanitizers' shadow memory and quarantine inflate RSS.
SANITIZED = os.environ.get("MCRING_SANITIZED") == "1"

# ------------------------------------------------------------------------------------------------
# Process tracking: every child is registered here and ended at exit whatever happens.

_procs_lock = threading.Lock()
_procs = {}  # pid -> Popen


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when this test process dies, even by SIGKILL (ctest's
    timeout), so no memcached or mcring outlives its test. Spawns happen on the main thread."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _track(proc):
    with _procs_lock:
        _procs[proc.pid] = proc
    return proc


def spawn(cmd, **popen_kw):
    """Starts `cmd` as a tracked child (ended at exit; SIGKILL if this process dies). Used by
    bench/launch.py for the processes the harness has no class for (nutcracker, generators)."""
    return _track(subprocess.Popen(cmd, preexec_fn=_die_with_parent, **popen_kw))


def stop_process(proc, sig=signal.SIGTERM, wait=3.0):
    """Ends one child we started: `sig`, then SIGKILL after `wait` seconds. Returns its exit code."""
    if proc is None:
        return None
    try:
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
    finally:
        with _procs_lock:
            _procs.pop(proc.pid, None)
    return proc.returncode


def _stop_all():
    with _procs_lock:
        procs = list(_procs.values())
    for p in procs:
        stop_process(p, wait=2.0)


atexit.register(_stop_all)


def _on_signal(signum, frame):  # ctest timeout sends SIGTERM: still clean up the children
    _stop_all()
    sys.exit(128 + signum)


for _s in (signal.SIGTERM, signal.SIGHUP):
    try:
        signal.signal(_s, _on_signal)
    except (ValueError, OSError):
        pass


def process_stopped(pid):
    """True once every thread of `pid` is stopped (state T in /proc)."""
    try:
        states = []
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        return bool(states) and all(st in ("T", "t") for st in states)
    except OSError:
        return False


def free_port():
    """A loopback TCP port that was free a moment ago (bind port 0). Callers retry on collision."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def port_accepts(port, timeout=0.2):
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def make_tmpdir(prefix="mcring-it-"):
    return tempfile.mkdtemp(prefix=prefix)


def remove_tmpdir(path):
    if path and not KEEP_TMP:
        shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# memcached backends


class Memcached:
    """One real memcached on a free loopback port (of `host`: any 127.0.0.0/8 address works on
    Linux, so several can share a port, as discovered servers do)."""

    def __init__(self, port=None, memory_mb=64, extra_args=(), host=HOST):
        self.host = host
        self.memory_mb = memory_mb
        self.extra_args = list(extra_args)
        self.proc = None
        self.port = None
        self.start(port)

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self, port=None, attempts=8):
        """Starts it on `port` (or a free port; retried on collision) and waits until it answers."""
        last = ""
        for _ in range(attempts):
            p = port or free_port()
            cmd = [MEMCACHED_BIN, "-u", "root", "-l", self.host, "-p", str(p), "-U", "0", "-t", "1",
                   "-m", str(self.memory_mb)] + self.extra_args
            proc = _track(subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, preexec_fn=_die_with_parent))
            if self._wait_ready(proc, p, 5.0, self.host):
                self.proc, self.port = proc, p
                return self
            try:
                last = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
            except Exception:
                last = ""
            stop_process(proc, signal.SIGKILL, 1.0)
            if port:  # a fixed port (restart): wait a little for it to be free again
                time.sleep(0.3)
        raise RuntimeError("memcached did not start (port %s): %s" % (port, last))

    @staticmethod
    def _wait_ready(proc, port, timeout, host=HOST):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                with socket.create_connection((host, port), timeout=0.5) as s:
                    s.settimeout(1.0)
                    s.sendall(b"version\r\n")
                    if s.recv(100).startswith(b"VERSION "):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def restart(self):
        """Starts it again on the same port (after kill())."""
        self.stop()
        return self.start(self.port)

    def kill(self, sig=signal.SIGKILL):
        """kill -9 (or another signal) without waiting for a graceful exit."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass

    def pause(self, timeout=5.0):
        """SIGSTOP, and wait (at most `timeout` s) until every thread is stopped: the signal is
        delivered asynchronously, and a thread already running could still answer a request sent
        right after the kill (seen on a loaded host)."""
        self.proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while not process_stopped(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.002)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc:
            try:
                self.proc.send_signal(signal.SIGCONT)  # a paused one cannot act on SIGTERM
            except ProcessLookupError:
                pass
            stop_process(self.proc)
            try:
                self.proc.stderr.close()
            except Exception:
                pass

    def conn(self, timeout=5.0):
        return Conn(self.host, self.port, timeout=timeout)

    # Direct helpers (one short-lived connection each).
    def get(self, key):
        """The value of key on this backend (bytes), or None."""
        key = key if isinstance(key, bytes) else key.encode()
        with self.conn() as c:
            r = c.request(b"get " + key + b"\r\n")
        vals = parse_values(r)
        return vals[0][1] if vals else None

    def get_many(self, keys, batch=200):
        """{key: value} for the keys this backend holds."""
        out = {}
        keys = [k if isinstance(k, bytes) else k.encode() for k in keys]
        with self.conn(timeout=10) as c:
            for i in range(0, len(keys), batch):
                r = c.request(b"get " + b" ".join(keys[i:i + batch]) + b"\r\n")
                for k, v, _flags, _cas in parse_values(r):
                    out[k] = v
        return out

    def flush(self):
        with self.conn() as c:
            assert c.request(b"flush_all\r\n") == b"OK\r\n"

    def stats(self):
        with self.conn() as c:
            return parse_stats(c.request(b"stats\r\n"))


# ------------------------------------------------------------------------------------------------
# mcring


def server_line(backend_addr, weight=1, name=None):
    s = "%s:%d" % (backend_addr, weight)
    return s + (" " + name if name else "")


def pool_yaml(name, listen_port, servers, hash="fnv1a_64", distribution="ketama", timeout_ms=1000,
              extra=None):
    """One pool in twemproxy YAML. `servers` are already-formatted server lines."""
    lines = ["%s:" % name,
             "  listen: %s:%d" % (HOST, listen_port),
             "  hash: %s" % hash,
             "  distribution: %s" % distribution,
             "  timeout: %d" % timeout_ms]
    for k, v in (extra or {}).items():
        lines.append("  %s: %s" % (k, v))
    lines.append("  servers:")
    lines += ["    - %s" % s for s in servers]
    return "\n".join(lines) + "\n"


class Mcring:
    """mcring running one pool whose servers are given as YAML server lines."""

    def __init__(self, servers, tmpdir, hash="fnv1a_64", distribution="ketama", timeout_ms=1000,
                 extra=None, args=(), pool="alpha", config_path=None, nofile=None):
        self.tmpdir = tmpdir
        self.nofile = nofile  # RLIMIT_NOFILE (soft and hard) for the process, None: inherited
        self.pool = pool
        self.servers = servers
        self.hash, self.distribution, self.timeout_ms, self.extra = hash, distribution, timeout_ms, extra
        self.args = list(args)
        self.proc = None
        self.port = None
        # config_path: put the config elsewhere (e.g. a directory of its own, so that the log
        # file's writes are not events in the watched directory; or a kubelet-style symlink).
        self.config_path = config_path or os.path.join(tmpdir, "mcring.yml")
        self.admin_port = None
        self.log_path = os.path.join(tmpdir, "mcring.log")
        self._log = None
        self.start()

    def write_config(self, port):
        with open(self.config_path, "w") as f:
            f.write(pool_yaml(self.pool, port, self.servers, self.hash, self.distribution,
                              self.timeout_ms, self.extra))

    def start(self, attempts=4):
        if not os.access(MCRING_BIN, os.X_OK):
            raise unittest.SkipTest("mcring binary not found at %s (set MCRING_BIN, or "
                                    "MCRING_TARGET=direct to test memcached itself)" % MCRING_BIN)
        for _ in range(attempts):
            port = free_port()
            self.write_config(port)
            self._log = open(self.log_path, "ab")
            # A free admin/stats port too: the default (22222) would collide between instances.
            admin_port = free_port()
            cmd = [MCRING_BIN, "-c", self.config_path, "-s", str(admin_port), "-a", HOST]
            proc = _track(subprocess.Popen(cmd + self.args,
                                           stdin=subprocess.DEVNULL, stdout=self._log,
                                           stderr=subprocess.STDOUT, cwd=self.tmpdir,
                                           preexec_fn=self._preexec))
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline and proc.poll() is None:
                if port_accepts(port):
                    explicit = any(a in ("-s", "--stats-port") or a.startswith("--stats-port=")
                                   for a in self.args)
                    # The admin endpoint too, when it is ours: tests read it right after start.
                    while (not explicit and not port_accepts(admin_port) and
                           time.monotonic() < deadline and proc.poll() is None):
                        time.sleep(0.02)
                    if not explicit and not port_accepts(admin_port):
                        break
                    self.proc, self.port = proc, port
                    self.admin_port = None if explicit else admin_port
                    return self
                time.sleep(0.02)
            stop_process(proc, signal.SIGKILL, 1.0)
            self._log.close()
        raise RuntimeError("mcring did not start listening; log:\n" + self.log_tail())

    def _preexec(self):
        _die_with_parent()
        if self.nofile is not None:
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stats(self, arg=b""):
        """`stats` or `stats <arg>` on the data port, parsed (name -> value string)."""
        return proxy_stats(self.port, arg)

    def stop(self):
        rc = stop_process(self.proc) if self.proc else None
        if self._log:
            self._log.close()
            self._log = None
        return rc

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
            return data[-n:].decode(errors="replace")
        except OSError:
            return "(no log)"


def run_mcring(args, input_bytes=None, timeout=30):
    """Runs an mcring subcommand (route, -t) to completion; returns CompletedProcess."""
    if not os.access(MCRING_BIN, os.X_OK):
        raise unittest.SkipTest("mcring binary not found at %s" % MCRING_BIN)
    return subprocess.run([MCRING_BIN] + list(args), input=input_bytes, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout)


# ------------------------------------------------------------------------------------------------
# Cluster: backends + the endpoint under test


class Cluster:
    """N memcached backends behind mcring, or (MCRING_TARGET=direct) one memcached as endpoint.

    In direct mode `backends` holds just that one memcached, so "which backend holds key" and
    "flush empties every backend" stay meaningful.
    """

    def __init__(self, n_backends=3, names=None, hash="fnv1a_64", distribution="ketama",
                 timeout_ms=1000, extra=None, dead_backends=0, force_direct=None, args=()):
        self.direct = DIRECT if force_direct is None else force_direct
        self.tmpdir = make_tmpdir()
        self.backends = []
        self.dead_ports = []
        self.proxy = None
        try:
            if self.direct:
                self.backends = [Memcached()]
                self.port = self.backends[0].port
            else:
                self.backends = [Memcached() for _ in range(n_backends)]
                servers = [server_line(b.addr, 1, names[i] if names else None)
                           for i, b in enumerate(self.backends)]
                for _ in range(dead_backends):  # configured, nothing listening: refused
                    p = free_port()
                    self.dead_ports.append(p)
                    servers.append(server_line("%s:%d" % (HOST, p)))
                self.proxy = Mcring(servers, self.tmpdir, hash=hash, distribution=distribution,
                                    timeout_ms=timeout_ms, extra=extra, args=args)
                self.port = self.proxy.port
        except BaseException:
            self.close()
            raise

    @property
    def endpoint_pid(self):
        return self.backends[0].pid if self.direct else self.proxy.pid

    def conn(self, timeout=5.0):
        return Conn(HOST, self.port, timeout=timeout)

    def owners(self, key):
        """Indexes of the backends that hold `key` (asked directly)."""
        return [i for i, b in enumerate(self.backends) if b.get(key) is not None]

    def owner_map(self, keys):
        """{key(bytes): [backend indexes holding it]} asked directly, in batches."""
        out = {}
        for i, b in enumerate(self.backends):
            for k in b.get_many(keys):
                out.setdefault(k, []).append(i)
        return out

    def flush_backends(self):
        for b in self.backends:
            if b.proc and b.proc.poll() is None:
                b.flush()

    def log_tail(self):
        return self.proxy.log_tail() if self.proxy else "(direct mode: no mcring log)"

    def close(self):
        if self.proxy:
            self.proxy.stop()
        for b in self.backends:
            b.stop()
        remove_tmpdir(self.tmpdir)


# ------------------------------------------------------------------------------------------------
# Raw-socket client

ERROR_PREFIXES = (b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")


def split_reply(buf):
    """Splits one whole memcached text-protocol reply off the front of buf.

    Returns (reply, rest), or None when buf holds no whole reply yet. Knows the framing of
    VALUE...END, STAT...END, VA <n> (meta value) and single lines; an error line ends a
    VALUE/STAT sequence.
    """
    pos = 0
    multi = False
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        line = buf[pos:eol]
        nxt = eol + 2
        if line.startswith(b"VALUE "):
            parts = line.split(b" ")
            try:
                n = int(parts[3])
            except (IndexError, ValueError):
                return buf[:nxt], buf[nxt:]  # malformed: give it back as one line
            if len(buf) < nxt + n + 2:
                return None
            pos = nxt + n + 2
            multi = True
            continue
        if line.startswith(b"VA "):
            parts = line.split(b" ")
            try:
                n = int(parts[1])
            except (IndexError, ValueError):
                return buf[:nxt], buf[nxt:]
            if len(buf) < nxt + n + 2:
                return None
            return buf[:nxt + n + 2], buf[nxt + n + 2:]
        if line.startswith(b"STAT ") or line.startswith(b"ITEM "):
            pos = nxt
            multi = True
            continue
        if multi and not (line == b"END" or line.startswith(ERROR_PREFIXES)):
            pos = nxt  # unexpected line inside a sequence: keep it, keep going
            continue
        return buf[:nxt], buf[nxt:]


def split_all(buf):
    """All whole replies in buf, and the leftover bytes."""
    out = []
    while True:
        r = split_reply(buf)
        if r is None:
            return out, buf
        out.append(r[0])
        buf = r[1]


class Conn:
    """A raw client connection; every read is bounded by a deadline, nothing can hang."""

    def __init__(self, host, port, timeout=5.0):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        """Reads once (until deadline). False on EOF or timeout."""
        if self.eof:
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        self.sock.settimeout(min(left, 1.0))
        try:
            d = self.sock.recv(1 << 20)
        except socket.timeout:
            return True  # keep trying until the deadline
        except (ConnectionResetError, BrokenPipeError):
            self.eof = True
            return False
        if not d:
            self.eof = True
            return False
        self.buf += d
        return True

    def recv_until(self, pred, timeout=None):
        """Reads until pred(buffer) is true, EOF, or timeout. Returns and consumes the buffer."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not pred(self.buf):
            if not self._fill(deadline) and (self.eof or time.monotonic() >= deadline):
                break
        out, self.buf = self.buf, b""
        return out

    def recv_exact(self, n, timeout=None):
        """Reads n bytes (fewer on EOF/timeout); returns them, keeping any extra buffered."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while len(self.buf) < n:
            if not self._fill(deadline) and (self.eof or time.monotonic() >= deadline):
                break
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_replies(self, n, timeout=None):
        """Reads n whole replies. On timeout/EOF returns the ones complete plus the partial bytes
        as a last element, so a comparison shows exactly what arrived."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        out = []
        while len(out) < n:
            r = split_reply(self.buf)
            if r is not None:
                out.append(r[0])
                self.buf = r[1]
                continue
            if not self._fill(deadline) and (self.eof or time.monotonic() >= deadline):
                if self.buf:
                    out.append(self.buf)
                    self.buf = b""
                break
        return out

    def read_reply(self, timeout=None):
        r = self.read_replies(1, timeout)
        return r[0] if r else b""

    def request(self, data, timeout=None):
        """Sends data and returns exactly one reply."""
        self.send(data)
        return self.read_reply(timeout)

    def requests(self, data, n, timeout=None):
        self.send(data)
        return self.read_replies(n, timeout)

    def silence(self, duration=0.3):
        """Bytes that arrive within `duration` (expected b"" after a noreply request)."""
        deadline = time.monotonic() + duration
        while self._fill(deadline) and time.monotonic() < deadline:
            pass
        out, self.buf = self.buf, b""
        return out

    def wait_closed(self, timeout=5.0):
        """Reads until the peer closes (returns (bytes, True)) or timeout (bytes, False)."""
        data = self.recv_until(lambda b: False, timeout)
        return data, self.eof

    def alive(self):
        """The connection still answers (a cheap mn round trip)."""
        try:
            return self.request(b"mn\r\n", timeout=3.0) == b"MN\r\n"
        except OSError:
            return False


# ------------------------------------------------------------------------------------------------
# Parsing helpers

_VALUE_RE = re.compile(rb"VALUE (\S+) (\d+) (\d+)(?: (\d+))?\r\n")


def parse_values(reply):
    """[(key, value, flags, cas or None)] from a VALUE...END reply; raises on bad framing."""
    out = []
    pos = 0
    while True:
        if reply.startswith(b"END\r\n", pos):
            assert pos + 5 == len(reply), "bytes after END: %r" % reply[pos:pos + 80]
            return out
        m = _VALUE_RE.match(reply, pos)
        if not m:
            raise AssertionError("bad retrieval reply at %d: %r" % (pos, reply[pos:pos + 120]))
        n = int(m.group(3))
        start = m.end()
        if reply[start + n:start + n + 2] != b"\r\n":
            raise AssertionError("bad data block terminator: %r" % reply[start:start + n + 2][-20:])
        cas = int(m.group(4)) if m.group(4) is not None else None
        out.append((m.group(1), reply[start:start + n], int(m.group(2)), cas))
        pos = start + n + 2


def parse_stats(reply):
    """{name: value} from STAT lines; asserts the reply ends with END."""
    assert reply.endswith(b"END\r\n"), "stats reply does not end with END: %r" % reply[-80:]
    out = {}
    for line in reply[:-5].split(b"\r\n"):
        if not line:
            continue
        assert line.startswith(b"STAT "), "not a STAT line: %r" % line
        parts = line.split(b" ", 2)
        out[parts[1].decode()] = parts[2].decode() if len(parts) > 2 else ""
    return out


def proxy_stats(port, arg=b""):
    """`stats` or `stats <arg>` on a new connection to port, parsed (name -> value string)."""
    with Conn(HOST, port) as c:
        return parse_stats(c.request(b"stats" + (b" " + arg if arg else b"") + b"\r\n"))


def b(s):
    return s if isinstance(s, bytes) else s.encode()


def spread_keys(prefix, n):
    """n distinct keys that hash well apart. Sequential keys ("k1", "k2", ...) sit close together
    under fnv1a (whose last bytes move few bits), so a ketama ring puts runs of them on one
    server; tests that need keys on every backend use these."""
    prefix = b(prefix)
    return [prefix + hashlib.md5(b"%d" % i).hexdigest()[:10].encode() for i in range(n)]


def set_cmd(key, value, flags=0, exptime=0, cmd=b"set", noreply=False):
    key, value = b(key), b(value)
    return b"%s %s %d %d %d%s\r\n%s\r\n" % (cmd, key, flags, exptime, len(value),
                                           b" noreply" if noreply else b"", value)


def set_many_raw(conn, items, batch=500, timeout=20):
    """Sets {key: value} through conn, pipelined in batches; asserts every reply is STORED."""
    items = list(items.items()) if isinstance(items, dict) else list(items)
    for i in range(0, len(items), batch):
        chunk = items[i:i + batch]
        conn.send(b"".join(set_cmd(k, v) for k, v in chunk))
        replies = conn.read_replies(len(chunk), timeout)
        bad = [(chunk[j][0], r) for j, r in enumerate(replies) if r != b"STORED\r\n"]
        assert len(replies) == len(chunk) and not bad, \
            "set failed: %d/%d replies, first bad: %r" % (len(replies), len(chunk), bad[:3])


def cache_aside_load(port, keys, stop, counts, seed, value=b"v" * 32, limit_s=30):
    """Steady reads of random keys in pipelined batches of 50 until `stop` is set (or limit_s
    passed), cache-aside: a miss is set again, as an application would. Counts gets, hits and
    errors (any other reply) into `counts`. Run it in a thread."""
    rnd = random.Random(seed)
    deadline = time.monotonic() + limit_s
    with Conn(HOST, port, timeout=10) as c:
        while not stop.is_set() and time.monotonic() < deadline:
            batch = [rnd.choice(keys) for _ in range(50)]
            c.send(b"".join(b"get " + k + b"\r\n" for k in batch))
            misses = []
            for k, r in zip(batch, c.read_replies(len(batch))):
                counts["gets"] += 1
                if r.startswith(b"VALUE"):
                    counts["hits"] += 1
                elif r == b"END\r\n":
                    misses.append(k)
                else:
                    counts["errors"] += 1
            if misses:
                set_many_raw(c, [(k, value) for k in misses])
            time.sleep(0.005)


@contextlib.contextmanager
def cache_aside_load_running(port, keys, seed):
    """cache_aside_load in a thread for the body of the with-block; yields its counts. On exit it
    is stopped and joined, and fails if it did not stop."""
    stop = threading.Event()
    counts = {"gets": 0, "hits": 0, "errors": 0}
    t = threading.Thread(target=cache_aside_load, args=(port, keys, stop, counts, seed))
    t.start()
    try:
        yield counts
    finally:
        stop.set()
        t.join(40)
    assert not t.is_alive(), "the cache-aside load did not stop"


# ------------------------------------------------------------------------------------------------
# Process resources, reload history, admin HTTP (reload / chaos / abuse tests)


def proc_fd_count(pid):
    """Open file descriptors of a process (entries of /proc/PID/fd)."""
    return len(os.listdir("/proc/%d/fd" % pid))


def proc_rss_kb(pid):
    """Resident set size of a process in KiB (VmRSS of /proc/PID/status)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


_RELOAD_FIELD_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_reloads(reply):
    """[{id, time, source, result, generation, diff, error}] from a `stats reloads` reply, oldest
    first (ints for id/time/generation; quoted strings unquoted)."""
    assert reply.endswith(b"END\r\n"), "stats reloads reply does not end with END: %r" % reply[-120:]
    out = []
    for line in reply[:-5].decode(errors="replace").split("\r\n"):
        if not line:
            continue
        m = re.match(r"STAT reload:(\d+) (.*)$", line)
        assert m, "not a reload line: %r" % line
        rec = {"id": int(m.group(1))}
        for k, v in _RELOAD_FIELD_RE.findall(m.group(2)):
            if v.startswith('"') and v.endswith('"') and len(v) >= 2:
                v = v[1:-1]
            rec[k] = int(v) if k in ("time", "generation") and v.isdigit() else v
        out.append(rec)
    return out


def admin_http(port, method="GET", path="/stats", timeout=5.0):
    """One HTTP/1.0-style request to mcring's admin endpoint: (status, body bytes)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.settimeout(timeout)
        # Host with the port, as HTTP clients send it: POST /reload refuses another Host.
        s.sendall(("%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
                   % (method, path, HOST, port)).encode())
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                d = s.recv(1 << 16)
            except socket.timeout:
                break
            if not d:
                break
            data += d
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d+)", head)
    return (int(m.group(1)) if m else 0), body


class ConfigDir:
    """A watched config directory, written the ways editors, tools and the kubelet write it.

    `path` (DIR/mcring.yml) is a plain file ("file" layout), gone ("missing"), or the kubelet's
    ConfigMap projection ("symlink"): DIR/mcring.yml -> ..data/mcring.yml, ..data -> ..<ts>/,
    where ..<ts>/ holds the files. Keep mcring's log elsewhere: every write in a watched
    directory is an inotify event."""

    def __init__(self, root, name="conf"):
        self.dir = os.path.join(root, name)
        os.mkdir(self.dir)
        # Temporary files are written here (same file system, not watched) and renamed in, so
        # one update is one burst of events however slow the write: a temporary file in the
        # watched directory that takes longer than the debounce to write is a reload of its own.
        self.staging = os.path.join(root, name + ".staging")
        os.mkdir(self.staging)
        self.path = os.path.join(self.dir, "mcring.yml")
        self.layout = "missing"
        self.ts_dir = None
        self.n = 0

    def write_inplace(self, text):
        """An editor that truncates and rewrites the file in place (plain-file layout)."""
        assert self.layout in ("file", "missing"), self.layout
        with open(self.path, "w") as f:
            f.write(text)
        self.layout = "file"

    def write_rename(self, text, tmp_in_dir=False):
        """A temporary file renamed over the config (atomic replace). tmp_in_dir: write it in
        the watched directory itself, as many editors do (then a slow write can be seen)."""
        self.n += 1
        tmp = os.path.join(self.dir if tmp_in_dir else self.staging, ".mcring.yml.%d.tmp" % self.n)
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.path)
        self.layout = "file"

    def k8s_swap(self, text, extra_files=None):
        """The kubelet's AtomicWriter, step by step: a new timestamped directory holding every
        key of the ConfigMap, a `..data_tmp` symlink to it renamed over `..data`, the
        user-visible symlink `mcring.yml -> ..data/mcring.yml` created when missing, then the old
        timestamped directory removed."""
        self.n += 1
        ts = "..2026_01_01_00_00_00.%09d" % self.n
        os.mkdir(os.path.join(self.dir, ts))
        files = {"mcring.yml": text}
        files.update(extra_files or {})
        for name, body in files.items():
            with open(os.path.join(self.dir, ts, name), "w") as f:
                f.write(body)
        tmp_link = os.path.join(self.dir, "..data_tmp")
        os.symlink(ts, tmp_link)
        os.rename(tmp_link, os.path.join(self.dir, "..data"))
        for name in files:
            visible = os.path.join(self.dir, name)
            if name != "mcring.yml" or self.layout != "symlink":
                if not os.path.islink(visible):
                    link = os.path.join(self.dir, "." + name + ".link")
                    os.symlink(os.path.join("..data", name), link)
                    os.rename(link, visible)
        old, self.ts_dir = self.ts_dir, ts
        if old:
            shutil.rmtree(os.path.join(self.dir, old))
        self.layout = "symlink"

    def write_natural(self, text):
        """How this layout is updated: a kubelet swap for the projection, a rename otherwise."""
        if self.layout == "symlink":
            self.k8s_swap(text)
        else:
            self.write_rename(text)

    def delete(self):
        os.unlink(self.path)
        self.layout = "missing"


# ------------------------------------------------------------------------------------------------
# Base test case

requires_proxy = unittest.skipIf(DIRECT, "proxy-specific (MCRING_TARGET=direct)")


class IntegrationCase(unittest.TestCase):
    """Owns clusters and connections it opened; closes them all in tearDown even on failure,
    and prints mcring's log tail when a test failed."""

    maxDiff = 4000

    def setUp(self):
        self._clusters = []
        self._conns = []

    def failed(self):
        """True in tearDown when this test failed or errored (Python 3.11 unittest internals)."""
        outcome = getattr(self, "_outcome", None)
        if outcome is None:
            return False
        if not getattr(outcome, "success", True):
            return True
        res = getattr(outcome, "result", None)
        return any(t is self for t, _ in (getattr(res, "failures", []) + getattr(res, "errors", [])))

    def dump_log(self, cl):
        if cl.proxy:
            sys.stderr.write("\n--- mcring log tail (%s) ---\n%s\n--- end log ---\n"
                             % (self.id(), cl.log_tail()))

    def tearDown(self):
        failed = self.failed()
        for c in self._conns:
            c.close()
        for cl in self._clusters:
            if failed:
                self.dump_log(cl)
            cl.close()

    def start_memcacheds(self, n, named=False):
        """A scratch directory (self.tmp) and n real memcached (self.backends; their server lines,
        named mc0, mc1, ... if `named`, in self.servers), all removed after the test."""
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = []
        for _ in range(n):
            b = Memcached()
            self.addCleanup(b.stop)
            self.backends.append(b)
        self.servers = [server_line(b.addr, 1, "mc%d" % i if named else None)
                        for i, b in enumerate(self.backends)]

    def start_mcring(self, servers, **kw):
        """self.mc: an mcring in self.tmp serving `servers` (Mcring's keywords), stopped after
        the test (before the memcacheds of start_memcacheds)."""
        self.mc = Mcring(servers, self.tmp, **kw)
        self.addCleanup(self.mc.stop)
        return self.mc

    def dump_log_on_failure(self, proxy):
        """For an Mcring started outside a Cluster: print its log tail if the test fails."""
        def dump():
            if self.failed():
                sys.stderr.write("\n--- mcring log tail (%s) ---\n%s\n--- end log ---\n"
                                 % (self.id(), proxy.log_tail()))
        self.addCleanup(dump)

    def cluster(self, *args, **kw):
        cl = Cluster(*args, **kw)
        self._clusters.append(cl)
        return cl

    def conn(self, cluster_or_port, timeout=5.0):
        if isinstance(cluster_or_port, int):
            c = Conn(HOST, cluster_or_port, timeout)
        else:
            c = cluster_or_port.conn(timeout)
        self._conns.append(c)
        return c

    def reference(self):
        """A fresh memcached to compare replies with (as a 1-backend direct cluster)."""
        return self.cluster(force_direct=True)


class SharedClusterCase(IntegrationCase):
    """One cluster for the whole class (set CLUSTER_ARGS); each test starts with empty backends."""

    CLUSTER_ARGS = {}
    REFERENCE = False  # also keep a separate plain memcached as self.ref, flushed per test

    @classmethod
    def setUpClass(cls):
        cls.shared = Cluster(**cls.CLUSTER_ARGS)
        cls.addClassCleanup(cls.shared.close)
        cls.shared_ref = None
        if cls.REFERENCE:
            cls.shared_ref = Cluster(force_direct=True)
            cls.addClassCleanup(cls.shared_ref.close)

    def setUp(self):
        super().setUp()
        self.cl = self.shared
        self.ref = self.shared_ref
        self.cl.flush_backends()
        if self.ref:
            self.ref.flush_backends()

    def tearDown(self):
        failed = self.failed()
        super().tearDown()
        if failed:
            self.dump_log(self.cl)
