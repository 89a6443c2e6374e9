"""Observability end to end: a membership change's predicted and measured cost, per-backend
metrics, and a Prometheus exposition that a real parser (promtool) accepts."""

import json
import os
import shutil
import signal
import subprocess
import time
import unittest

from harness import (Conn, HOST, IntegrationCase, admin_http, cache_aside_load_running,
                     parse_stats, pool_yaml, requires_proxy, run_mcring, set_many_raw, spread_keys)

WARM_KEYS = 20000


@requires_proxy
class ObservabilityTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.start_memcacheds(5)
        self.start_mcring(self.servers[:4], args=["--backend-stats-interval", "1"])

    def _routes(self, config_text, keys):
        path = os.path.join(self.tmp, "route.yml")
        with open(path, "w") as f:
            f.write(config_text)
        r = run_mcring(["route", "-c", path], input_bytes=b"\n".join(keys) + b"\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = {}
        for line in r.stdout.splitlines():
            k, addr = line.split(b"\t")[:2]
            out[k] = addr.decode()
        self.assertEqual(len(out), len(keys))
        return out

    def test_reload_event_prediction_measurement_and_metrics(self):
        keys = spread_keys("obs:", WARM_KEYS)
        with Conn(HOST, self.mc.port, timeout=20) as c:
            set_many_raw(c, [(k, b"v" * 32) for k in keys])
        with open(self.mc.config_path) as f:
            old_text = f.read()
        new_text = pool_yaml(self.mc.pool, self.mc.port, self.servers, self.mc.hash,
                             self.mc.distribution, self.mc.timeout_ms)
        before = self._routes(old_text, keys)
        after = self._routes(new_text, keys)
        actually_moved = sum(1 for k in keys if before[k] != after[k]) / len(keys)

        # Steady get load (bounded in time and count) while the reload happens.
        with cache_aside_load_running(self.mc.port, keys, 7) as counts:
            time.sleep(4)  # a baseline
            with open(self.mc.config_path, "w") as f:
                f.write(new_text)
            os.kill(self.mc.pid, signal.SIGHUP)
            time.sleep(6)  # the spike
        self.assertEqual(counts["errors"], 0)
        self.assertGreater(counts["gets"], 1000)

        status, body = admin_http(self.mc.admin_port, path="/events")
        self.assertEqual(status, 200)
        events = json.loads(body)
        self.assertEqual(len(events), 1, body)
        e = events[0]
        self.assertEqual((e["servers_before"], e["servers_after"]), (4, 5))
        self.assertEqual(e["added"], [self.backends[4].addr])
        predicted = e["prediction"]["moved_fraction"]
        print("predicted moved %.4f, actually moved %.4f (of %d warmed keys), modula %.4f"
              % (predicted, actually_moved, len(keys), e["prediction"]["modula_moved_fraction"]))
        print("measurement:", e["measurement"])
        print("verdict:", e["verdict"])
        self.assertLess(abs(predicted - actually_moved), 0.02)
        self.assertAlmostEqual(e["prediction"]["modula_moved_fraction"], 0.8, delta=0.01)
        m = e["measurement"]
        self.assertTrue(m["baseline_valid"], m)
        self.assertGreater(m["peak_miss_ratio"], m["baseline_miss_ratio"])

        # The same event on the client port.
        with Conn(HOST, self.mc.port) as c:
            reply = c.request(b"stats events\r\n")
        self.assertIn(b"STAT event:1 ", reply)
        self.assertIn(b"servers=4->5", reply)

        # Per-backend key counts: every server holds items and saw distinct keys.
        time.sleep(1.5)  # one more backend-stats poll round
        with Conn(HOST, self.mc.port) as c:
            backends = parse_stats(c.request(b"stats backends\r\n"))
        for b in self.backends:
            prefix = "%s:%s:" % (self.mc.pool, b.addr)
            self.assertGreater(int(backends[prefix + "distinct_keys"]), 0, prefix)
            self.assertGreater(int(backends[prefix + "curr_items"]), 0, prefix)
        total_keys = sum(float(v) for k, v in backends.items() if k.endswith(":distinct_keys"))
        # Each warmed key was routed to its old owner, and a moved key to its new one as well.
        expected = WARM_KEYS * (1 + actually_moved)
        self.assertLess(abs(total_keys - expected) / expected, 0.1)

        status, metrics = admin_http(self.mc.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        self.assertIn(b"mcring_backend_distinct_keys{", metrics)
        self.assertIn(b"mcring_backend_curr_items{", metrics)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.fail("promtool not installed (packaging/deps.sh installs Debian's prometheus)")
        check = subprocess.run([promtool, "check", "metrics"], input=metrics,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout.decode(errors="replace"))


@requires_proxy
class CommandCountersTest(IntegrationCase):
    """One of each command: what each adds to the worker counters (`stats`) and to the
    per-backend ones (`stats backends`, summed over the pool), as the README's metric table says:
    mg counts with the gets, ms with the sets, gat/gats as gets and touches."""

    WORKER = ("cmd_get", "cmd_set", "cmd_delete", "cmd_touch", "cmd_meta", "cmd_other")
    BACKEND = ("get_keys", "stores", "deletes", "other_commands")

    def counts(self, c):
        worker = parse_stats(c.request(b"stats\r\n"))
        backends = parse_stats(c.request(b"stats backends\r\n"))
        # Under memcached's names `stats` shows the servers' counts; mcring's are prefixed.
        out = {k: int(worker.get("mcring_" + k, worker.get(k))) for k in self.WORKER}
        for k in self.BACKEND:
            out[k] = sum(int(v) for name, v in backends.items() if name.endswith(":" + k))
        return out

    def test_each_command_counts_where_documented(self):
        cl = self.cluster()
        c = self.conn(cl)
        before = self.counts(c)
        script = [
            (b"set k1 0 0 1\r\na\r\n", b"STORED\r\n"),
            (b"add k2 0 0 1\r\nb\r\n", b"STORED\r\n"),
            (b"replace k1 0 0 1\r\nc\r\n", b"STORED\r\n"),
            (b"append k1 0 0 1\r\nd\r\n", b"STORED\r\n"),
            (b"prepend k1 0 0 1\r\ne\r\n", b"STORED\r\n"),
            (b"cas k1 0 0 1 1\r\nf\r\n", b"EXISTS\r\n"),
            (b"set n 0 0 1\r\n5\r\n", b"STORED\r\n"),
            (b"delete k2\r\n", b"DELETED\r\n"),
            (b"incr n 2\r\n", b"7\r\n"),
            (b"decr n 1\r\n", b"6\r\n"),
            (b"touch k1 0\r\n", b"TOUCHED\r\n"),
            (b"get k1 k3\r\n", b"VALUE k1 0 3\r\necd\r\nEND\r\n"),
            (b"gets k3\r\n", b"END\r\n"),
            (b"gat 0 k3\r\n", b"END\r\n"),
            (b"gats 0 k3 k4\r\n", b"END\r\n"),
            (b"mg k1 v\r\n", b"VA 3\r\necd\r\n"),
            (b"ms k4 1\r\nx\r\n", b"HD\r\n"),
            (b"md k4\r\n", b"HD\r\n"),
            (b"ma n\r\n", b"HD\r\n"),
            (b"mn\r\n", b"MN\r\n"),
        ]
        for req, want in script:
            self.assertEqual(c.request(req), want, req)
        after = self.counts(c)
        delta = {k: after[k] - before[k] for k in after}
        self.assertEqual(delta, {
            "cmd_get": 6,      # keys of get (2), gets, gat, gats (2)
            "cmd_set": 8,      # set add replace append prepend cas set, and ms
            "cmd_delete": 2,   # delete, md
            "cmd_touch": 3,    # touch, gat, gats
            "cmd_meta": 4,     # mg ms md ma (mn is answered by mcring)
            "cmd_other": 4,    # incr decr, mg ma
            "get_keys": 7,     # the 6 retrieval keys and mg's
            "stores": 8,
            "deletes": 2,
            "other_commands": 4,  # incr decr touch ma
        })


if __name__ == "__main__":
    unittest.main()
