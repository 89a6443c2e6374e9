"""client_idle_timeout: mcring closes a client connection that sends no request for the
pool's timeout while it has nothing in flight and no reply unwritten, as memcached's
`-o idle_timeout` does.

An idle client and a slowloris (a partial line, one byte at a time) are closed, not before the
timeout; a client that keeps sending, and one waiting longer than the timeout for a reply from a
stopped (SIGSTOP) server, are not. A reload that sets the timeout applies to connections already
open. `client_idle_closed` counts exactly the connections it closed."""

import os
import signal
import threading
import time
import unittest

from harness import (IntegrationCase, Memcached, Mcring, make_tmpdir, parse_reloads, parse_stats,
                     pool_yaml, remove_tmpdir, requires_proxy, server_line)

TIMEOUT_MS = 1000
QUIET_S = 2.5 * TIMEOUT_MS / 1000  # how long the clients that must stay are watched
HANG_S = 15.0                      # generous hang detection for an expected close


@requires_proxy
class IdleTimeoutTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir("mcring-idle-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backend = Memcached()
        self.addCleanup(self.backend.stop)

    def start_proxy(self, idle_timeout_ms):
        # timeout 0: mcring waits for a stopped server forever, so only the idle rule can close.
        proxy = Mcring([server_line(self.backend.addr)], self.tmp, timeout_ms=0,
                       extra={"client_idle_timeout": idle_timeout_ms})
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        return proxy

    def idle_closed(self, proxy):
        with self.conn(proxy.port) as c:
            return int(parse_stats(c.request(b"stats\r\n"))["client_idle_closed"])

    def test_idle_and_slowloris_clients_are_closed_active_ones_stay(self):
        proxy = self.start_proxy(TIMEOUT_MS)
        idle = self.conn(proxy.port)
        opened = time.monotonic()
        slow = self.conn(proxy.port)
        active = self.conn(proxy.port)

        slow_state = {"sent": 0, "closed": False}

        def slowloris():
            # "get k" and never the end of the line: a request that never completes is idle.
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline:
                try:
                    slow.send(b"get k"[slow_state["sent"] % 5:][:1])
                except OSError:
                    slow_state["closed"] = True
                    return
                slow_state["sent"] += 1
                time.sleep(0.1)

        loris = threading.Thread(target=slowloris, daemon=True)
        loris.start()

        # The active client sends a request every 0.1 s for 2.5 timeouts: never idle.
        replies = 0
        deadline = time.monotonic() + QUIET_S
        while time.monotonic() < deadline:
            self.assertEqual(active.request(b"mn\r\n", timeout=HANG_S), b"MN\r\n")
            replies += 1
            time.sleep(0.1)
        self.assertGreater(replies, 10)

        data, closed = idle.wait_closed(timeout=HANG_S)
        waited = time.monotonic() - opened
        self.assertTrue(closed, "an idle client was not closed")
        self.assertEqual(data, b"", "nothing is sent to a client closed for idleness")
        self.assertGreaterEqual(waited, TIMEOUT_MS / 1000 - 0.05, "closed before the timeout")

        _, slow_closed = slow.wait_closed(timeout=HANG_S)
        loris.join(HANG_S)
        self.assertTrue(slow_closed or slow_state["closed"], "the slowloris client was not closed")
        self.assertGreater(slow_state["sent"], 5, "the slowloris client sent a few bytes first")

        self.assertTrue(active.alive(), "the active client was closed")
        self.assertEqual(self.idle_closed(proxy), 2)

    def test_waiting_for_a_reply_is_not_idle(self):
        proxy = self.start_proxy(TIMEOUT_MS)
        c = self.conn(proxy.port, timeout=HANG_S)
        self.assertEqual(c.request(b"set k 5 0 2\r\nhi\r\n"), b"STORED\r\n")
        self.backend.pause()
        resumed = False
        try:
            c.send(b"get k\r\n")
            time.sleep(QUIET_S)  # 2.5 timeouts with the get in flight
            self.backend.resume()
            resumed = True
            self.assertEqual(c.read_reply(timeout=HANG_S), b"VALUE k 5 2\r\nhi\r\nEND\r\n")
        finally:
            if not resumed:
                self.backend.resume()
        self.assertTrue(c.alive())
        self.assertEqual(self.idle_closed(proxy), 0)

    def test_reload_sets_the_timeout_for_open_connections(self):
        proxy = self.start_proxy(0)
        c = self.conn(proxy.port)
        time.sleep(QUIET_S)
        self.assertTrue(c.alive(), "closed with client_idle_timeout 0")

        with open(proxy.config_path, "w") as f:
            f.write(pool_yaml(proxy.pool, proxy.port, proxy.servers, proxy.hash,
                              proxy.distribution, proxy.timeout_ms,
                              {"client_idle_timeout": TIMEOUT_MS}))
        os.kill(proxy.pid, signal.SIGHUP)
        deadline = time.monotonic() + HANG_S
        records = []
        while not records and time.monotonic() < deadline:
            time.sleep(0.05)
            with self.conn(proxy.port) as s:
                records = parse_reloads(s.request(b"stats reloads\r\n"))
        self.assertTrue(records, "no reload recorded after SIGHUP")
        self.assertEqual(records[-1]["result"], "applied", records[-1])
        self.assertIn("client_idle_timeout", records[-1].get("diff", ""), records[-1])

        _, closed = c.wait_closed(timeout=HANG_S)
        self.assertTrue(closed, "the reloaded timeout did not reach an open connection")
        self.assertEqual(self.idle_closed(proxy), 1)


if __name__ == "__main__":
    unittest.main()
