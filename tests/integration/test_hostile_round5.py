"""A fifth outside attack, on the features of issue 30 and the upgrade: `watch`, `stats detail`,
route failover for multi-gets, SIGUSR2. Each test failed on the build it was written against
(29a042e).

- Any number of clients could `watch`: each stalled watcher holds a 256 KiB buffer plus 64 KiB of
  output, and every request is formatted into every watcher's buffer under one mutex. 1,000
  watchers that read nothing, then 10,000 gets through another client: mcring's RSS went from
  8 MB to 490 MB. memcached allows 20 watchers (WATCHER_LIMIT) and answers the 21st
  `WATCHER_TOO_MANY log watcher limit reached`, the connection staying an ordinary one.
- A watcher received the requests of every pool with `allow_watch`, not only its own pool's
  (README: "one line per request of the pool's clients"): a client of pool `a` saw
  `key=secret-of-b` for a get sent to pool `b`'s port, so a pool's keys reached anyone allowed
  to watch another pool (one without TLS or authentication, say).
- SIGUSR2, then SIGHUP (or the file watcher) with a config that adds a listener: the old process
  reloaded while the new one was starting, bound the new port first, and the new process failed
  (`upgrade failed: new process N could not start: pool 'beta': cannot listen on ...: Address
  already in use; pid M keeps serving`). The upgrade an operator asked for did not happen.
- `stats detail`: /metrics and /prefixes write a prefix byte outside printable ASCII as `\\xNN`
  but a backslash as itself, so the prefix `\\xff` (four bytes, from a text client) and the
  prefix 0xff (one byte) got the same label: two `mcring_prefix_requests_total` series with the
  same labels, which Prometheus rejects as a duplicate, losing the whole scrape. One client's
  keys broke the monitoring of everything else.
"""
import json
import os
import re
import signal
import socket
import time

import harness as h
from harness import IntegrationCase, requires_proxy
from test_upgrade import _upgraded_pids, is_mcring, pid_gone, read_pid
from test_watch import watcher, wait_for

WATCHER_LIMIT = 20  # memcached's
TOO_MANY = b"WATCHER_TOO_MANY log watcher limit reached\r\n"


@requires_proxy
class WatcherLimitTest(IntegrationCase):
    def test_twenty_first_watcher_refused_as_memcached_does(self):
        cl = self.cluster(n_backends=1, extra={"allow_watch": "true", "log_keys": "plain"})
        socks = []
        try:
            for _ in range(WATCHER_LIMIT):
                s, got = watcher(cl.port)
                socks.append(s)
                self.assertEqual(got, b"OK\r\n")
            # The 21st: refused, and the connection goes on serving requests.
            extra = self.conn(cl)
            replies = extra.requests(b"watch proxyreqs\r\nset k 0 0 1\r\nv\r\nget k\r\n", 3)
            print("\n%d watchers attached; the next `watch`: %r" % (len(socks), replies[0]))
            self.assertEqual(replies, [TOO_MANY, b"STORED\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n"])
            # A watcher that leaves makes room (its detach is awaited, bounded).
            socks.pop().close()

            def attached():
                s, got = watcher(cl.port)
                if got == b"OK\r\n":
                    return s
                s.close()
                return None
            s = wait_for(attached, timeout=5.0, step=0.05)
            self.assertIsNotNone(s)
            socks.append(s)
            # The remaining watchers still get the stream.
            self.assertEqual(extra.request(b"get k\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n")
            socks[0].settimeout(5)
            got = b""
            deadline = time.monotonic() + 5
            while b"cmd=get" not in got and time.monotonic() < deadline:
                got += socks[0].recv(65536)
            self.assertIn(b"key=k", got)
        finally:
            for s in socks:
                s.close()


class TwoWatchedPools(h.Mcring):
    """Pools `a` (this port) and `b` (bport), both with allow_watch, on the same memcached."""

    def write_config(self, port):
        if not hasattr(self, "bport"):
            self.bport = h.free_port()
        pool = ("%s:\n  listen: %s:%d\n  allow_watch: true\n  log_keys: plain\n"
                "  servers:\n    - %s\n")
        with open(self.config_path, "w") as f:
            f.write(pool % ("a", h.HOST, port, self.servers[0])
                    + pool % ("b", h.HOST, self.bport, self.servers[0]))


@requires_proxy
class WatchOnePoolTest(IntegrationCase):
    def test_watcher_sees_only_its_own_pools_requests(self):
        self.start_memcacheds(1)
        mc = TwoWatchedPools(self.servers, self.tmp)
        self.addCleanup(mc.stop)
        self.dump_log_on_failure(mc)
        wsock, ok = watcher(mc.port)
        self.addCleanup(wsock.close)
        self.assertEqual(ok, b"OK\r\n")
        with h.Conn(h.HOST, mc.bport) as cb, h.Conn(h.HOST, mc.port) as ca:
            self.assertEqual(cb.request(b"get secret-of-b\r\n"), b"END\r\n")
            self.assertEqual(ca.request(b"get key-of-a\r\n"), b"END\r\n")
        # Pool a's line comes after pool b's, were b's sent at all: read until a's is seen.
        wsock.settimeout(5)
        got = b""
        deadline = time.monotonic() + 5
        while b"key-of-a" not in got and time.monotonic() < deadline:
            got += wsock.recv(65536)
        print("\nwatcher of pool a received: %r" % got)
        self.assertIn(b"key=key-of-a", got)
        self.assertNotIn(b"secret-of-b", got)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return f.read().split()
    except OSError:
        return []


@requires_proxy
class UpgradeWithReloadTest(IntegrationCase):
    def test_sighup_right_after_sigusr2_does_not_fail_the_upgrade(self):
        self.start_memcacheds(1)
        pid_file = os.path.join(self.tmp, "mcring.pid")
        mc = h.Mcring(self.servers, self.tmp, args=["--shutdown-grace", "3000", "-p", pid_file])
        self.addCleanup(mc.stop)
        self.dump_log_on_failure(mc)
        self.assertTrue(wait_for(lambda: read_pid(pid_file) == mc.pid, 5))
        old = mc.pid
        beta = h.free_port()
        with open(mc.config_path) as f:
            base = f.read()
        tmp = mc.config_path + ".new"
        with open(tmp, "w") as f:
            f.write(base + "beta:\n  listen: %s:%d\n  servers:\n    - %s\n"
                    % (h.HOST, beta, self.servers[0]))
        os.replace(tmp, mc.config_path)
        os.kill(old, signal.SIGUSR2)
        # SIGHUP once the old process has started the new one (SIGHUP and SIGUSR2 pending
        # together would be delivered SIGHUP first: the order this test is not about).
        self.assertTrue(wait_for(lambda: children(old), 5, step=0.0005), "no new process")
        os.kill(old, signal.SIGHUP)
        new = wait_for(lambda: (lambda p: p if p and p != old else None)(read_pid(pid_file)), 10)
        if new:
            _upgraded_pids.add(new)
            self.addCleanup(lambda: is_mcring(new) and not pid_gone(new)
                            and os.kill(new, signal.SIGKILL))
        with open(mc.log_path, errors="replace") as f:
            lines = [l for l in f.read().splitlines() if "upgrade" in l or "reload" in l]
        print("\nSIGUSR2 then SIGHUP (config adds pool beta):\n  " + "\n  ".join(lines[-6:]))
        self.assertIsNotNone(new, "the upgrade failed")
        self.assertTrue(wait_for(lambda: mc.proc.poll() is not None, 10), "old still running")
        with h.Conn(h.HOST, beta) as c:  # served by the new process
            self.assertTrue(c.request(b"version\r\n").startswith(b"VERSION "))


@requires_proxy
class PrefixLabelTest(IntegrationCase):
    def test_backslash_prefix_and_binary_prefix_are_distinct_series(self):
        cl = self.cluster(n_backends=1)
        c = self.conn(cl)
        self.assertEqual(c.request(b"stats detail on\r\n"), b"OK\r\n")
        for key in (b"\\xff:1", b"\xff:1", b"\\xff:2"):  # literal backslash-x-f-f, then byte 0xff
            self.assertEqual(c.request(b"set " + key + b" 0 0 1\r\nv\r\n"), b"STORED\r\n")
        status, metrics = h.admin_http(cl.proxy.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        series = [l.rsplit(b" ", 1)[0] for l in metrics.splitlines()
                  if l.startswith(b"mcring_prefix_requests_total{")]
        print("\nprefix series: %r" % series)
        self.assertEqual(len(series), 2, series)
        self.assertEqual(len(set(series)), 2, "duplicate series: %r" % series)
        status, body = h.admin_http(cl.proxy.admin_port, path="/prefixes")
        top = json.loads(body)["pools"]["alpha"]["top"]
        shown = sorted((t["prefix"], t["set"]) for t in top)
        print("/prefixes: %r" % shown)
        self.assertEqual(shown, [("\\x5cxff", 2), ("\\xff", 1)])
