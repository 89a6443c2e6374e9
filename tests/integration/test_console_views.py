"""The console's page and the views it reads, without a browser (test_console.py drives one):
GET / is one self-contained response with its Content-Security-Policy; /backends and /timeline
report known traffic; POST /whatif/<pool> answers what `mcring plan` would, needs no token,
checks Host and Origin as a reload does, and changes nothing; the route views (`stats routes`,
/routes, mcring_route_*) answer for a config without routes. Runs under the sanitizers too.
"""

import http.client
import json
import os
import re
import time
import unittest

from harness import (HOST, Conn, IntegrationCase, pool_yaml, requires_proxy, run_mcring,
                     set_many_raw, spread_keys)

TOKEN = "console-admin-token-0123456789abcdef"


def request(port, method, path, headers=None, body=b""):
    """(status, headers dict with lower-case names, body); Host is the endpoint unless given
    (None: no Host at all)."""
    headers = dict(headers or {})
    c = http.client.HTTPConnection(HOST, port, timeout=5)
    try:
        c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        host = headers.pop("Host", "%s:%d" % (HOST, port))
        if host is not None:
            c.putheader("Host", host)
        for k, v in headers.items():
            c.putheader(k, v)
        c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


@requires_proxy
class ConsoleEndpointsTest(IntegrationCase):
    """The console's page and views without a browser: what they answer, and who may ask."""

    def setUp(self):
        super().setUp()
        self.start_memcacheds(3, named=True)
        token = os.path.join(self.tmp, "admin-token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(token, 0o600)
        self.start_mcring(self.servers, args=["--admin-token-file", token])

    def test_page_is_self_contained(self):
        port = self.mc.admin_port
        status, headers, body = request(port, "GET", "/")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "text/html; charset=utf-8")
        self.assertIn("connect-src 'self'", headers["content-security-policy"])
        self.assertIn("frame-ancestors 'none'", headers["content-security-policy"])
        page = body.decode()
        self.assertIn("<style>", page)
        self.assertIn("<script>", page)
        # Nothing loaded from elsewhere, nothing loaded from here either: one response.
        self.assertIsNone(re.search(r"""(src|href)=["'](?!data:|/)""", page), "external reference")
        self.assertNotIn("<script src", page)
        self.assertNotIn('rel="stylesheet"', page)
        self.assertLess(len(body), 64 * 1024)
        self.assertEqual(request(port, "GET", "/", {"Host": "evil.example:%d" % port})[0], 421)

    def test_views_the_page_reads(self):
        port = self.mc.admin_port
        status, _, body = request(port, "GET", "/backends")
        self.assertEqual(status, 200)
        pool = json.loads(body)["pools"][0]
        self.assertEqual(pool["name"], self.mc.pool)
        self.assertEqual(pool["distribution"], "ketama")
        self.assertEqual([s["name"] for s in pool["servers"]], ["mc0", "mc1", "mc2"])
        self.assertEqual({s["state"] for s in pool["servers"]}, {"up"})
        self.assertEqual({s["weight"] for s in pool["servers"]}, {1})
        self.assertAlmostEqual(sum(s["ownership"] for s in pool["servers"]), 1.0, places=6)
        # The monitor's first sample (a second after start) only sets its starting totals:
        # send the lookups once the timeline has begun.
        for _ in range(50):
            if json.loads(request(port, "GET", "/timeline")[2])["pools"][0]["lookups"]:
                break
            time.sleep(0.1)
        keys = spread_keys("views:", 300)
        with Conn(HOST, self.mc.port, timeout=10) as c:
            set_many_raw(c, [(k, b"v") for k in keys])
            c.send(b"".join(b"get " + k + b"\r\n" for k in keys))
            c.read_replies(len(keys))
        status, _, body = request(port, "GET", "/backends")
        servers = json.loads(body)["pools"][0]["servers"]
        self.assertEqual(sum(s["counters"]["get_hits"] for s in servers), len(keys))
        self.assertGreater(min(s["distinct_keys"] for s in servers), 0)
        # The per-second timeline shows the lookups within a few seconds (the monitor samples
        # once a second).
        for _ in range(50):
            status, _, body = request(port, "GET", "/timeline")
            t = json.loads(body)
            if sum(t["pools"][0]["lookups"]) >= len(keys):
                break
            time.sleep(0.1)
        self.assertEqual(t["pools"][0]["name"], self.mc.pool)
        self.assertEqual(sum(t["pools"][0]["lookups"]), len(keys))
        self.assertEqual(sum(t["pools"][0]["misses"]), 0)
        self.assertLessEqual(t["pools"][0]["first_second"] + len(t["pools"][0]["lookups"]) - 1,
                             t["now_second"])

    def test_whatif_computes_without_token_and_changes_nothing(self):
        port = self.mc.admin_port
        status, _, before = request(port, "GET", "/stats")
        listing = "\n".join(self.servers[:2]).encode()
        path = "/whatif/" + self.mc.pool
        status, _, body = request(port, "POST", path, {"Origin": "http://%s:%d" % (HOST, port)},
                                  listing)
        self.assertEqual(status, 200, body)
        plan = json.loads(body)
        self.assertEqual(plan["name"], self.mc.pool)
        gone = self.backends[2].addr
        self.assertEqual({c["from"] for c in plan["plan"]["matrix"] if c["moved"]}, {gone})
        share = next(o for o in plan["plan"]["ownership"] if o["server"] == gone)
        self.assertAlmostEqual(share["moved_out"], plan["plan"]["moved"], places=9)
        # Nothing changed: no reload, same generation and servers.
        status, _, after = request(port, "GET", "/stats")
        self.assertEqual(json.loads(before)["config_generation"],
                         json.loads(after)["config_generation"])
        self.assertEqual(json.loads(after)["reloads"], 0)
        self.assertEqual(len(json.loads(request(port, "GET", "/backends")[2])["pools"][0]
                             ["servers"]), 3)
        # Refused as a reload would be for Host and Origin; the token is not asked for.
        for headers, want in (({"Host": "evil.example:%d" % port}, 421), ({"Host": None}, 421),
                              ({"Origin": "http://evil.example"}, 403)):
            self.assertEqual(request(port, "POST", path, headers, listing)[0], want, headers)
        self.assertEqual(request(port, "GET", path)[0], 405)
        self.assertEqual(request(port, "POST", "/reload")[0], 401)  # the reload still needs it
        status, _, body = request(port, "POST", path, {}, b"not a server")
        self.assertEqual(status, 400)
        self.assertIn("line 1", json.loads(body)["error"])
        self.assertEqual(request(port, "POST", "/whatif/nope", {}, listing)[0], 404)

    def test_route_views_without_routes(self):
        """A pool without routes: `stats routes` lists none (END, not ERROR), GET /routes lists
        no listener, /metrics has the mcring_route_* families and no sample. (Routes in the
        config fill them: the integrator's routes tests.)"""
        port = self.mc.admin_port
        with Conn(HOST, self.mc.port, timeout=5) as c:
            self.assertEqual(c.request(b"stats routes\r\n"), b"END\r\n")
        status, headers, body = request(port, "GET", "/routes")
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body), {"listeners": []})
        status, _, metrics = request(port, "GET", "/metrics")
        self.assertEqual(status, 200)
        text = metrics.decode()
        for family in ("requests", "errors", "rate_limited", "failovers", "shadow_sent",
                       "shadow_dropped", "shadow_compared", "shadow_agreed"):
            self.assertIn("# TYPE mcring_route_%s_total counter\n" % family, text)
        self.assertIn("# TYPE mcring_route_shadow_agreement gauge\n", text)
        self.assertNotIn("mcring_route_requests_total{", text)


@requires_proxy
class WhatIfReplicasTest(IntegrationCase):
    """With replicas: 2 the what-if also answers the replica sets, exactly as `mcring plan`."""

    def setUp(self):
        super().setUp()
        self.start_memcacheds(3, named=True)
        self.start_mcring(self.servers, extra={"replicas": 2})

    def test_whatif_replica_sets_match_plan(self):
        listing = self.servers + ["127.0.0.1:1:1 mc3"]
        status, _, body = request(self.mc.admin_port, "POST", "/whatif/" + self.mc.pool, {},
                                  "\n".join(listing).encode())
        self.assertEqual(status, 200, body)
        answer = json.loads(body)
        files = []
        for name, servers in (("old.yml", self.servers), ("new.yml", listing)):
            files.append(os.path.join(self.tmp, name))
            with open(files[-1], "w") as f:
                f.write(pool_yaml(self.mc.pool, self.mc.port, servers, self.mc.hash,
                                  self.mc.distribution, self.mc.timeout_ms, {"replicas": 2}))
        r = run_mcring(["plan"] + files + ["--json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        plan = json.loads(r.stdout)["pools"][0]
        for side in ("plan", "modula"):
            self.assertEqual(answer[side], plan[side], side)
        sets = answer["plan"]["replica_sets"]
        self.assertEqual((sets["replicas_before"], sets["replicas_after"], sets["method"]),
                         (2, 2, "exact"))
        # 3 -> 4 servers: the new one joins about 2/4 of the sets and every set keeps a copy.
        self.assertGreater(sets["changed"], 0.3)
        self.assertEqual(sets["none_kept"], 0)


if __name__ == "__main__":
    unittest.main()
