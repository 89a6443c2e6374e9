"""Topology identity (issue 29): proxies that place a pool's keys alike report the same
`mcring_topology_info` hash in /metrics (and `stats`), a different one once either changes
placement, and the same again when it changes back; a change of anything else (a timeout) leaves
the hash as it was."""

import json
import os
import re
import signal
import time
import unittest

from harness import IntegrationCase, Mcring, admin_http, requires_proxy, server_line

TOPOLOGY_LINE = re.compile(r'^mcring_topology_info\{pool="([^"]*)",hash="([0-9a-f]{16})"\} 1$')


@requires_proxy
class TopologyIdentityTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.start_memcacheds(4)
        # Two proxies, each with a directory of its own (config file and log), over the same
        # first three servers.
        self.proxies = []
        for name in ("a", "b"):
            d = os.path.join(self.tmp, name)
            os.makedirs(d)
            p = Mcring(self.servers[:3], d)
            self.addCleanup(p.stop)
            self.dump_log_on_failure(p)
            self.proxies.append(p)

    def topology(self, proxy):
        """pool -> hash from the proxy's /metrics."""
        status, body = admin_http(proxy.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        found = {}
        for line in body.decode().splitlines():
            m = TOPOLOGY_LINE.match(line)
            if m:
                found[m.group(1)] = m.group(2)
        return found

    def reload(self, proxy, servers=None, timeout_ms=None):
        """Rewrites the proxy's config with other servers or timeout, SIGHUPs it, and waits for
        the new generation to be in force."""
        before = int(proxy.stats()["config_generation"])
        if servers is not None:
            proxy.servers = servers
        if timeout_ms is not None:
            proxy.timeout_ms = timeout_ms
        proxy.write_config(proxy.port)
        os.kill(proxy.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if int(proxy.stats()["config_generation"]) > before:
                return
            time.sleep(0.05)
        self.fail("reload not in force after 10 s; log:\n" + proxy.log_tail())

    def hashes(self, label):
        a, b = (self.topology(p) for p in self.proxies)
        print("%-32s a=%s b=%s" % (label, a.get("alpha"), b.get("alpha")))
        self.assertIn("alpha", a, "no mcring_topology_info series for pool alpha")
        self.assertIn("alpha", b, "no mcring_topology_info series for pool alpha")
        return a["alpha"], b["alpha"]

    def test_same_ring_same_hash_and_changes_follow_placement(self):
        a0, b0 = self.hashes("same servers")
        self.assertEqual(a0, b0)
        # `stats` carries the same hash.
        self.assertEqual(self.proxies[0].stats().get("pool:alpha:topology_hash"), a0)

        self.reload(self.proxies[1], servers=self.servers[:4])
        a1, b1 = self.hashes("b: a server added")
        self.assertEqual(a1, a0)
        self.assertNotEqual(b1, a1)
        # The membership event of that reload carries the ideal share (1 of 4) and a warning
        # exactly when it predicted more than twice that.
        status, body = admin_http(self.proxies[1].admin_port, path="/events")
        self.assertEqual(status, 200)
        prediction = json.loads(body)[-1]["prediction"]
        print("b's event: moved %.4f, ideal %.4f, warning %r" % (
            prediction["moved_fraction"], prediction["ideal_moved_fraction"],
            prediction["warning"]))
        self.assertAlmostEqual(prediction["ideal_moved_fraction"], 0.25, places=6)
        self.assertEqual(prediction["warning"] is not None,
                         prediction["moved_fraction"] > 0.5)

        self.reload(self.proxies[1], servers=self.servers[:3])
        a2, b2 = self.hashes("b: back to the same servers")
        self.assertEqual((a2, b2), (a0, a0))

        weighted = self.servers[:2] + [server_line(self.backends[2].addr, 2)]
        self.reload(self.proxies[0], servers=weighted)
        a3, b3 = self.hashes("a: a weight changed")
        self.assertNotEqual(a3, b3)
        self.reload(self.proxies[0], servers=self.servers[:3])

        self.reload(self.proxies[0], timeout_ms=250)
        a4, b4 = self.hashes("a: only the timeout changed")
        self.assertEqual((a4, b4), (a0, a0))


if __name__ == "__main__":
    unittest.main()
