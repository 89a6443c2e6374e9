"""Listeners follow `listen` across reloads now that it is optional: a pool that loses `listen`
(it is only routed to) stops listening, a front pool with routes starts, and a pool that gets
`listen` back listens again, while a pool that kept its listener serves throughout.

The front's data plane is not exercised here (no request is sent to it): only which addresses
accept connections after each reload, and the reload records.
"""
import os
import signal
import time
import unittest

from harness import HOST, IntegrationCase, free_port, parse_reloads, port_accepts

DEADLINE_S = 10.0


class RouteListenersCase(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.start_memcacheds(2)
        self.proxy = self.start_mcring([self.servers[0]])
        self.dump_log_on_failure(self.proxy)
        self.alpha_port = self.proxy.port

    def write(self, text):
        with open(self.proxy.config_path, "w") as f:
            f.write(text)

    def alpha(self):
        return "alpha:\n  listen: %s:%d\n  servers: [%s]\n" % (HOST, self.alpha_port,
                                                             self.servers[0])

    def reload(self, text):
        """Writes the config, SIGHUPs, and returns the new reload record (polled on alpha)."""
        with self.conn(self.alpha_port) as c:
            before = len(parse_reloads(c.request(b"stats reloads\r\n")))
        self.write(text)
        os.kill(self.proxy.pid, signal.SIGHUP)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            with self.conn(self.alpha_port) as c:
                records = parse_reloads(c.request(b"stats reloads\r\n"))
            if len(records) > before:
                return records[-1]
            time.sleep(0.05)
        self.fail("no reload recorded after SIGHUP")

    def wait_port(self, port, accepting):
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            if port_accepts(port) == accepting:
                return True
            time.sleep(0.05)
        return False

    def test_listen_removed_and_restored_by_reload(self):
        beta_port, front_port = free_port(), free_port()
        beta = "beta:\n  listen: %s:%d\n  servers: [%s]\n" % (HOST, beta_port, self.servers[1])
        rec = self.reload(self.alpha() + beta)
        self.assertEqual(rec["result"], "applied", rec)
        self.assertTrue(self.wait_port(beta_port, True), "beta does not listen")

        # beta loses `listen`: only the front's route sends to it now.
        routed = ("beta:\n  servers: [%s]\n" % self.servers[1] +
                  "front:\n  listen: %s:%d\n  routes:\n    - default: beta\n" % (HOST, front_port))
        rec = self.reload(self.alpha() + routed)
        print("reload without beta's listen:", rec)
        self.assertEqual(rec["result"], "applied", rec)
        self.assertIn("listen %s:%d->none" % (HOST, beta_port), rec.get("diff", ""), rec)
        self.assertTrue(self.wait_port(front_port, True), "the front pool does not listen")
        self.assertTrue(self.wait_port(beta_port, False), "beta still listens without `listen`")

        # beta gets `listen` back and the front goes.
        rec = self.reload(self.alpha() + beta)
        print("reload restoring beta's listen:", rec)
        self.assertEqual(rec["result"], "applied", rec)
        self.assertTrue(self.wait_port(beta_port, True), "beta does not listen again")
        self.assertTrue(self.wait_port(front_port, False), "the removed front still listens")

        # alpha kept its listener throughout and still serves.
        with self.conn(self.alpha_port) as c:
            self.assertEqual(c.request(b"set k 0 0 1\r\nv\r\n"), b"STORED\r\n")
            self.assertEqual(c.request(b"get k\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n")
        with self.conn(beta_port) as c:
            self.assertEqual(c.request(b"get k\r\n"), b"END\r\n")

    def test_a_pool_no_route_sends_to_needs_listen(self):
        rec = self.reload(self.alpha() + "beta:\n  servers: [%s]\n" % self.servers[1])
        print("reload of an unreachable pool:", rec)
        self.assertEqual(rec["result"], "failed", rec)
        self.assertIn("pool 'beta' has no listen and no route sends to it", rec.get("error", ""))


if __name__ == "__main__":
    unittest.main()
