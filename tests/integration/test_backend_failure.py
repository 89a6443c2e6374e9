"""A backend that is killed, refuses, or stops answering: only the requests routed to it get
SERVER_ERROR, within a bounded time; everything else keeps working; the proxy recovers.
Run with `unavailable_reads: error`, so that reads fail as writes do; test_unavailable_reads has
the default (reads of its keys are misses)."""

import signal
import threading
import time
import unittest

from harness import IntegrationCase, parse_values, requires_proxy, set_many_raw, spread_keys

TIMEOUT_MS = 1000
ERROR_READS = {"unavailable_reads": "error"}
BOUND = 4.0  # seconds: a failed request must be answered well within this (timeout is 1 s)


@requires_proxy
class BackendFailureTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.cl = self.cluster(n_backends=3, timeout_ms=TIMEOUT_MS, extra=ERROR_READS)
        self.c = self.conn(self.cl, timeout=15)
        self.keys = spread_keys("bf:", 120)
        set_many_raw(self.c, {k: b"val-" + k for k in self.keys})
        owners = self.cl.owner_map(self.keys)
        self.assertEqual(sorted(owners), sorted(self.keys))
        self.by_backend = {i: [k for k in self.keys if owners[k] == [i]] for i in range(3)}
        self.assertTrue(all(len(v) > 5 for v in self.by_backend.values()), self.by_backend)

    def assert_proxy_alive(self):
        self.assertIsNone(self.cl.proxy.proc.poll(), "mcring exited (rc=%s)" % self.cl.proxy.proc.returncode)

    def timed(self, conn, req, timeout=10.0):
        t0 = time.monotonic()
        reply = conn.request(req, timeout=timeout)
        return reply, time.monotonic() - t0

    def assert_server_error(self, conn, req):
        reply, dt = self.timed(conn, req)
        self.assertTrue(reply.startswith(b"SERVER_ERROR ") and reply.endswith(b"\r\n")
                        and reply.count(b"\r\n") == 1, "%r -> %r" % (req, reply[:200]))
        self.assertLess(dt, BOUND, "%r took %.2f s" % (req, dt))

    def assert_live(self, conn, key):
        reply, dt = self.timed(conn, b"get " + key + b"\r\n")
        self.assertEqual(reply, b"VALUE %s 0 %d\r\nval-%s\r\nEND\r\n" % (key, len(key) + 4, key))
        self.assertLess(dt, BOUND)

    def test_killed_backend(self):
        dead = 1
        self.cl.backends[dead].kill()
        for k in self.by_backend[dead][:10]:
            self.assert_server_error(self.c, b"get " + k + b"\r\n")
            self.assertTrue(self.c.alive(), "connection unusable after SERVER_ERROR")
        for req in (b"set %s 0 0 1\r\nx\r\n", b"delete %s\r\n", b"incr %s 1\r\n", b"touch %s 0\r\n",
                    b"mg %s v\r\n", b"ms %s 1\r\nx\r\n", b"gets %s\r\n"):
            self.assert_server_error(self.c, req % self.by_backend[dead][0])
        for i in (0, 2):
            for k in self.by_backend[i][:10]:
                self.assert_live(self.c, k)
        self.assert_proxy_alive()

    def test_killed_backend_pipelined(self):
        # Requests to the dead backend and to live ones in one write: every one answered, in order.
        self.cl.backends[2].kill()
        ks = [self.by_backend[i % 3][i // 3] for i in range(30)]
        self.c.send(b"".join(b"get %s\r\n" % k for k in ks) + b"mn\r\n")
        replies = self.c.read_replies(len(ks) + 1, timeout=15)
        self.assertEqual(len(replies), len(ks) + 1, replies[-3:])
        for k, r in zip(ks, replies):
            if k in self.by_backend[2]:
                self.assertTrue(r.startswith(b"SERVER_ERROR "), (k, r))
            else:
                self.assertEqual(r, b"VALUE %s 0 %d\r\nval-%s\r\nEND\r\n" % (k, len(k) + 4, k))
        self.assertEqual(replies[-1], b"MN\r\n")

    def test_multiget_spanning_dead_backend(self):
        dead = 0
        self.cl.backends[dead].kill()
        ks = [k for i in range(3) for k in self.by_backend[i][:15]]
        reply, dt = self.timed(self.c, b"get " + b" ".join(ks) + b"\r\n")
        self.assertLess(dt, BOUND, "multi-get over a dead backend took %.2f s" % dt)
        if reply.startswith(b"SERVER_ERROR"):
            self.assertEqual(reply.count(b"\r\n"), 1, reply[:200])
        else:
            live = [k for k in ks if k not in self.by_backend[dead]]
            if reply.endswith(b"END\r\n"):
                # Otherwise: every live backend's values, right and in the client's order, then END.
                self.assertEqual([(k, v) for k, v, _, _ in parse_values(reply)],
                                 [(k, b"val-" + k) for k in live])
            else:
                # Or some live values, then a SERVER_ERROR line ending the reply.
                self.assertTrue(reply.endswith(b"\r\n") and b"SERVER_ERROR" in reply, reply[-200:])
                vals = parse_values(reply[:reply.rindex(b"SERVER_ERROR")] + b"END\r\n")
                got = [k for k, *_ in vals]
                self.assertEqual(got, [k for k in live if k in set(got)])
                for k, v, _, _ in vals:
                    self.assertEqual(v, b"val-" + k)
        self.assertTrue(self.c.alive())
        for i in (1, 2):
            for k in self.by_backend[i][:5]:
                self.assert_live(self.c, k)
        self.assert_proxy_alive()

    def test_paused_backend_times_out(self):
        slow = 2
        self.cl.backends[slow].pause()
        try:
            # While a request to the paused backend waits, other clients are not held up.
            result = {}

            def waiter():
                with self.cl.conn(timeout=15) as c2:
                    result["reply"], result["dt"] = self.timed(c2, b"get %s\r\n" % self.by_backend[slow][0])

            t = threading.Thread(target=waiter, daemon=True)
            t.start()
            time.sleep(0.1)
            for k in self.by_backend[0][:5] + self.by_backend[1][:5]:
                reply, dt = self.timed(self.c, b"get " + k + b"\r\n")
                self.assertTrue(reply.startswith(b"VALUE "), reply)
                self.assertLess(dt, 0.8, "live key held up %.2f s by a paused backend" % dt)
            t.join(timeout=15)
            self.assertFalse(t.is_alive(), "request to the paused backend never answered")
            self.assertTrue(result["reply"].startswith(b"SERVER_ERROR "), result["reply"])
            self.assertLess(result["dt"], BOUND)
            self.assertGreater(result["dt"], 0.5, "answered before the 1 s timeout could expire")
            self.assert_server_error(self.c, b"get %s\r\n" % self.by_backend[slow][1])
        finally:
            self.cl.backends[slow].resume()
        self.assert_recovers(slow)

    def assert_recovers(self, idx, within=15.0):
        k = self.by_backend[idx][3]
        deadline = time.monotonic() + within
        last = None
        while time.monotonic() < deadline:
            last = self.c.request(b"set %s 0 0 2\r\nok\r\n" % k, timeout=5)
            if last == b"STORED\r\n":
                break
            time.sleep(0.2)
        self.assertEqual(last, b"STORED\r\n", "backend %d not used again within %.0f s" % (idx, within))
        self.assertEqual(self.c.request(b"get %s\r\n" % k), b"VALUE %s 0 2\r\nok\r\nEND\r\n" % k)
        self.assertEqual(self.cl.backends[idx].get(k), b"ok")

    def test_stalled_proxy_is_not_a_backend_timeout(self):
        """mcring itself not scheduled for longer than the timeout (a loaded host, a paused VM)
        while the backend's reply waits in its socket: on waking, the reply is there, so the
        request succeeds. Regression: the timer and the readable socket fired in the same loop
        iteration and the timer won."""
        b = 1
        key = self.by_backend[b][0]
        self.assert_live(self.c, key)             # connected, nothing in flight
        self.cl.backends[b].pause()
        self.c.send(b"get " + key + b"\r\n")
        time.sleep(0.2)                           # mcring forwarded it and armed the timeout
        proxy = self.cl.proxy.proc
        proxy.send_signal(signal.SIGSTOP)
        try:
            self.cl.backends[b].resume()          # the reply lands in mcring's socket
            time.sleep(TIMEOUT_MS / 1000 + 0.5)   # longer than the timeout
        finally:
            proxy.send_signal(signal.SIGCONT)
        reply = self.c.read_reply(timeout=BOUND)
        self.assertEqual(reply, b"VALUE %s 0 %d\r\nval-%s\r\nEND\r\n" % (key, len(key) + 4, key))
        self.assert_live(self.c, key)
        self.assert_proxy_alive()

    def test_restarted_backend_is_used_again(self):
        idx = 1
        self.cl.backends[idx].kill()
        self.assert_server_error(self.c, b"get %s\r\n" % self.by_backend[idx][0])
        self.cl.backends[idx].restart()
        self.assert_recovers(idx)
        # Its old data is gone (fresh memcached): a miss, not an error.
        self.assertEqual(self.c.request(b"get %s\r\n" % self.by_backend[idx][0]), b"END\r\n")
        self.assert_proxy_alive()

    def test_all_backends_dead(self):
        for bk in self.cl.backends:
            bk.kill()
        for k in self.keys[:10]:
            self.assert_server_error(self.c, b"get " + k + b"\r\n")
        reply, dt = self.timed(self.c, b"get " + b" ".join(self.keys[:30]) + b"\r\n")
        self.assertLess(dt, BOUND)
        self.assertTrue(reply.startswith(b"SERVER_ERROR") or reply == b"END\r\n", reply[:200])
        self.assertTrue(self.c.alive())
        self.assertTrue(self.c.request(b"version\r\n").startswith(b"VERSION "))
        self.assert_proxy_alive()


@requires_proxy
class RefusedBackendTest(IntegrationCase):

    def test_configured_backend_not_listening(self):
        cl = self.cluster(n_backends=2, dead_backends=1, timeout_ms=TIMEOUT_MS, extra=ERROR_READS)
        c = self.conn(cl, timeout=15)
        keys = spread_keys("rf:", 90)
        replies = {}
        for k in keys:
            t0 = time.monotonic()
            replies[k] = c.request(b"set %s 0 0 1\r\nx\r\n" % k)
            self.assertLess(time.monotonic() - t0, BOUND)
        owners = cl.owner_map(keys)
        refused = [k for k in keys if k not in owners]
        self.assertGreater(len(refused), 5, "no key routed to the refusing backend")
        for k in keys:
            if k in owners:
                self.assertEqual(replies[k], b"STORED\r\n", k)
                self.assertEqual(c.request(b"get %s\r\n" % k), b"VALUE %s 0 1\r\nx\r\nEND\r\n" % k)
            else:
                self.assertTrue(replies[k].startswith(b"SERVER_ERROR "), (k, replies[k]))
                self.assertTrue(c.request(b"get %s\r\n" % k).startswith(b"SERVER_ERROR "))
        self.assertTrue(c.alive())
        self.assertIsNone(cl.proxy.proc.poll())


if __name__ == "__main__":
    unittest.main()
