"""Memory under a budget: one small request cannot make mcring buffer hundreds of MiB.

Each case reproduces a measurement from the data-plane redesign and holds mcring to it while a
second, well-behaved client keeps working with no error:
  - one 1.6 KB request `get big big ...` (400 keys of a 1,000,000-byte value), read by its client:
    the reply streams through, RSS grows by less than 64 MiB;
  - 2,000 pipelined `get big` that the client never reads: RSS grows by less than 64 MiB;
  - 150 connections each holding half of a 1 MB `set`: RSS grows by less than 32 MiB, and the
    memory is given back once they close;
  - 101 spaces + `get ` + 3,000 bytes and no newline: closed, as memcached closes it.
"""

import socket
import threading
import time
import unittest

from harness import (HOST, SANITIZED, IntegrationCase, Memcached, Mcring, make_tmpdir, parse_stats,
                     proc_rss_kb, remove_tmpdir, requires_proxy, server_line)

BIG = 1000000
BIG_HEADER = b"VALUE big 0 %d\r\n" % BIG
MIB = 1024


class RssSampler(threading.Thread):
    """Samples a process's RSS until stopped; keeps the maximum."""

    def __init__(self, pid, every=0.02):
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.max_kb = 0
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            try:
                self.max_kb = max(self.max_kb, proc_rss_kb(self.pid))
            except (OSError, AssertionError):
                return
            self.stop_ev.wait(self.every)

    def finish(self):
        self.stop_ev.set()
        self.join(5)
        return self.max_kb


class SteadyClient(threading.Thread):
    """A well-behaved client: set/get of small values in a loop until stopped (bounded)."""

    def __init__(self, port, max_requests=200000, limit_s=60.0):
        super().__init__(daemon=True)
        self.port, self.max_requests, self.limit_s = port, max_requests, limit_s
        self.ok = 0
        self.max_wait = 0.0  # the longest a request of it waited for its reply, s
        self.errors = []
        self.stop_ev = threading.Event()

    def run(self):
        deadline = time.monotonic() + self.limit_s
        try:
            # A request that reaches the shared backend connection just behind another client's
            # streamed reply waits for that transfer (400 MB at the reader's speed: seconds, more
            # on a loaded machine): an answer, late, not an error.
            s = socket.create_connection((HOST, self.port), timeout=45)
        except OSError as e:
            self.errors.append("connect: %s" % e)
            return
        buf = b""
        i = 0
        try:
            while not self.stop_ev.is_set() and i < self.max_requests and time.monotonic() < deadline:
                key = b"steady%d" % (i % 50)
                sent = time.monotonic()
                s.sendall(b"set " + key + b" 0 0 5\r\nhello\r\nget " + key + b"\r\n")
                want = b"STORED\r\nVALUE " + key + b" 0 5\r\nhello\r\nEND\r\n"
                while len(buf) < len(want):
                    chunk = s.recv(65536)
                    if not chunk:
                        self.errors.append("closed after %d requests" % self.ok)
                        return
                    buf += chunk
                if buf[:len(want)] != want:
                    self.errors.append("unexpected reply %r" % buf[:200])
                    return
                buf = buf[len(want):]
                self.max_wait = max(self.max_wait, time.monotonic() - sent)
                self.ok += 1
                i += 1
        except OSError as e:
            self.errors.append("%s after %d requests" % (e, self.ok))
        finally:
            s.close()

    def finish(self):
        self.stop_ev.set()
        self.join(30)


@requires_proxy
class MemoryBudgetTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        self.mc = Memcached(memory_mb=256, extra_args=("-I", "2m"))
        self.addCleanup(self.mc.stop)
        self.proxy = Mcring([server_line(self.mc.addr)], self.tmp, timeout_ms=5000)
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        with socket.create_connection((HOST, self.proxy.port), timeout=10) as s:
            s.sendall(b"set big 0 0 %d\r\n" % BIG + b"x" * BIG + b"\r\n")
            self.assertEqual(s.recv(100), b"STORED\r\n")
        time.sleep(0.2)  # let the allocator settle after the store before the baseline
        self.base_kb = proc_rss_kb(self.proxy.pid)

    def stats(self):
        return self.proxy.stats()

    def assert_growth_below(self, max_kb, limit_mib, what):
        growth = max_kb - self.base_kb
        print("%s: RSS %d KiB -> max %d KiB (growth %.1f MiB, limit %d MiB)"
              % (what, self.base_kb, max_kb, growth / 1024.0, limit_mib))
        if not SANITIZED:  # ASan's shadow memory and quarantine make RSS meaningless
            self.assertLess(growth, limit_mib * MIB, what)

    def test_400_key_get_of_a_1mb_value_streams(self):
        request = b"get" + b" big" * 400 + b"\r\n"
        self.assertLess(len(request), 1700)
        sampler, steady = RssSampler(self.proxy.pid), SteadyClient(self.proxy.port)
        sampler.start()
        steady.start()
        expected = 400 * (len(BIG_HEADER) + BIG + 2) + len(b"END\r\n")
        total, tail = 0, b""
        with socket.create_connection((HOST, self.proxy.port), timeout=30) as s:
            s.sendall(request)
            buf = bytearray(1 << 20)
            deadline = time.monotonic() + 60
            while total < expected and time.monotonic() < deadline:
                n = s.recv_into(buf)
                if n == 0:
                    break
                if total == 0:
                    self.assertTrue(bytes(buf[:len(BIG_HEADER)]) == BIG_HEADER, bytes(buf[:80]))
                total += n
                tail = (tail + bytes(buf[:n]))[-16:]
        max_kb = sampler.finish()
        steady.finish()
        print("400-key get: the steady client's longest wait %.2f s (%d requests)"
              % (steady.max_wait, steady.ok))
        self.assertEqual(total, expected, "the whole reply, every VALUE then END")
        self.assertTrue(tail.endswith(b"\r\nEND\r\n"), tail)
        self.assertEqual(steady.errors, [])
        self.assertGreater(steady.ok, 0)
        self.assert_growth_below(max_kb, 64, "400-key get of a 1 MB value")

    def test_unread_pipelined_gets_of_a_1mb_value(self):
        sampler, steady = RssSampler(self.proxy.pid), SteadyClient(self.proxy.port)
        sampler.start()
        steady.start()
        s = socket.create_connection((HOST, self.proxy.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.settimeout(2.0)
        try:
            s.sendall(b"get big\r\n" * 2000)
        except OSError:
            pass  # mcring stopped reading us, or closed us: both are fine
        # mcring either stops reading this client or closes it; meanwhile the other is served.
        ok_before = steady.ok
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and steady.ok < ok_before + 200:
            time.sleep(0.05)
        time.sleep(1.0)  # what it buffers for the non-reader has had time to pile up
        max_kb = sampler.finish()
        s.close()
        steady.finish()
        self.assertEqual(steady.errors, [])
        self.assertGreater(steady.ok, ok_before, "the second client is served meanwhile")
        self.assert_growth_below(max_kb, 64, "2,000 unread pipelined get big")

    def test_half_sent_sets_hold_little_and_give_it_back(self):
        sampler, steady = RssSampler(self.proxy.pid), SteadyClient(self.proxy.port)
        sampler.start()
        steady.start()
        socks = []
        try:
            for i in range(150):
                s = socket.create_connection((HOST, self.proxy.port), timeout=10)
                s.setblocking(False)
                socks.append(s)
                data = b"set half%d 0 0 1000000\r\n" % i + b"y" * 500000
                sent = 0
                deadline = time.monotonic() + 0.5
                while sent < len(data) and time.monotonic() < deadline:
                    try:
                        sent += s.send(data[sent:])
                    except BlockingIOError:
                        time.sleep(0.005)  # mcring is not reading this one (budget): move on
            time.sleep(1.0)
            max_kb = sampler.finish()
            self.assert_growth_below(max_kb, 32, "150 half-sent 1 MB sets")
            self.assertEqual(steady.errors, [])
        finally:
            for s in socks:
                s.close()
        # Once they are gone, the memory is given back (within a few MiB of the baseline).
        deadline = time.monotonic() + 10
        now_kb = proc_rss_kb(self.proxy.pid)
        while time.monotonic() < deadline and now_kb - self.base_kb > 8 * MIB:
            time.sleep(0.1)
            now_kb = proc_rss_kb(self.proxy.pid)
        steady.finish()
        self.assertEqual(steady.errors, [])
        print("after close: RSS %d KiB (baseline %d KiB)" % (now_kb, self.base_kb))
        if not SANITIZED:
            self.assertLess(now_kb - self.base_kb, 8 * MIB, "memory given back after close")

    def test_many_unread_clients_stay_within_the_pool_budget(self):
        # Each of 30 clients asks for 12 MB and reads nothing: under its own 16 MiB limit, but
        # 360 MB together. The pool's buffer_limit (restarted at 4m here) holds them back.
        self.proxy.stop()
        self.proxy = Mcring([server_line(self.mc.addr)], self.tmp, timeout_ms=5000,
                            extra={"buffer_limit": "4m"}, args=["--threads", "1"])
        self.dump_log_on_failure(self.proxy)
        time.sleep(0.2)
        self.base_kb = proc_rss_kb(self.proxy.pid)
        sampler, steady = RssSampler(self.proxy.pid), SteadyClient(self.proxy.port)
        sampler.start()
        steady.start()
        socks = []
        try:
            for _ in range(30):
                s = socket.create_connection((HOST, self.proxy.port), timeout=10)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
                s.sendall(b"get" + b" big" * 12 + b"\r\n")
                socks.append(s)
            time.sleep(3.0)  # the pauses, and the 1 s closes of clients that read nothing
            max_kb = sampler.finish()
            closed = int(self.stats()["client_slow_closed"])
        finally:
            for s in socks:
                s.close()
        steady.finish()
        self.assertEqual(steady.errors, [])
        self.assertGreater(closed, 0, "clients that read nothing while others waited are closed")
        self.assert_growth_below(max_kb, 64, "30 unread 12 MB gets, buffer_limit 4m")

    def test_101_spaces_then_a_long_get_is_closed_like_memcached(self):
        line = b" " * 101 + b"get " + b"a" * 3000
        for port, who in ((self.mc.port, "memcached"), (self.proxy.port, "mcring")):
            with socket.create_connection((HOST, port), timeout=5) as s:
                s.sendall(line)
                s.settimeout(5)
                got = b""
                try:
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                except ConnectionResetError:
                    pass
                except socket.timeout:
                    self.fail("%s kept the connection open" % who)
                self.assertNotIn(b"VALUE", got, who)


if __name__ == "__main__":
    unittest.main()
