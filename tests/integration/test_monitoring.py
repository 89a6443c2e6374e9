"""The operations assets of packaging/monitoring against a live mcring.

- every metric the Grafana dashboard and the alert rules name is one that a running mcring's
  /metrics exports (mcring with real memcached backends, after traffic and a membership change,
  so the per-backend and per-event families have samples);
- `promtool check rules` and `promtool test rules` (the main alerts against recorded series) and
  `promtool check config` on the scrape example pass; every alert has a severity and a runbook;
- the Kubernetes scrape paths agree with the Deployment: its prometheus.io annotations name the
  admin port, and the ServiceMonitor's Service selects the Deployment's pods on that port.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import unittest

import yaml

from harness import (HOST, ROOT, Conn, IntegrationCase, admin_http, pool_yaml, requires_proxy,
                     set_many_raw, spread_keys)

MONITORING = os.path.join(ROOT, "packaging", "monitoring")
KUBERNETES = os.path.join(ROOT, "packaging", "kubernetes")
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
# Series a query may name that mcring does not export: Prometheus's own per-target series.
PROMETHEUS_SERIES = {"up"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset"}


def dashboard_queries():
    dash = json.load(open(os.path.join(MONITORING, "grafana-dashboard.json")))
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dash["panels"]):
        for t in p.get("targets", []):
            out.append(("panel %r" % p["title"], t["expr"]))
    for a in dash.get("annotations", {}).get("list", []):
        if "expr" in a:
            out.append(("annotation %r" % a["name"], a["expr"]))
    for v in dash["templating"]["list"]:
        q = v.get("query")
        if isinstance(q, dict):
            out.append(("variable %r" % v["name"], q["query"]))
    return dash, out


def alert_rules():
    doc = yaml.safe_load(open(os.path.join(MONITORING, "alerts.yml")))
    return [r for g in doc["groups"] for r in g["rules"]]


def series_names(expr):
    """The metric names a PromQL expression (or a Grafana label_values() query) reads."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values
    expr = re.sub(r"\{[^}]*\}", "{}", expr)           # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)            # ranges
    expr = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)\s*(\{\})?\s*,\s*\w+\s*\)", r"\1", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for m in re.finditer(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        word, call = m.group(1), m.group(2)
        if call or word in PROMQL_WORDS or re.fullmatch(r"\d\w*", word):
            continue  # a function, a keyword
        names.add(word)
    return names


@requires_proxy
class MonitoringAssetsTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.start_memcacheds(3)
        self.start_mcring(self.servers[:2], args=["--backend-stats-interval", "1"])

    def exported(self):
        """Sample names of /metrics after traffic and a membership change."""
        keys = spread_keys("mon:", 500)
        with Conn(HOST, self.mc.port, timeout=10) as c:
            set_many_raw(c, [(k, b"v") for k in keys])
            c.send(b"".join(b"get " + k + b"\r\n" for k in keys[:100]))
            c.read_replies(100)
        with open(self.mc.config_path, "w") as f:
            f.write(pool_yaml(self.mc.pool, self.mc.port, self.servers, self.mc.hash,
                              self.mc.distribution, self.mc.timeout_ms))
        status, body = admin_http(self.mc.admin_port, method="POST", path="/reload")
        self.assertEqual(status, 200, body)
        status, body = admin_http(self.mc.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        names = set()
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
        self.assertIn("mcring_membership_predicted_moved_ratio", names)
        self.assertIn("mcring_backend_latency_seconds_bucket", names)
        return names

    def test_every_query_names_an_exported_metric(self):
        exported = self.exported()
        dash, queries = dashboard_queries()
        queries += [("alert %s" % r["alert"], r["expr"]) for r in alert_rules()]
        self.assertGreater(len(queries), 30)
        unknown = []
        used = set()
        for where, expr in queries:
            names = series_names(expr)
            self.assertTrue(names, "%s reads no metric: %s" % (where, expr))
            used |= names
            unknown += ["%s: %s" % (where, n) for n in sorted(names)
                        if n not in exported and n not in PROMETHEUS_SERIES]
        self.assertEqual(unknown, [], "queries name metrics that /metrics does not export")
        print("dashboard and alerts: %d queries over %d metrics, all exported (of %d)"
              % (len(queries), len(used), len(exported)))
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)), "panel ids are unique")

    def test_promtool_checks_and_alert_unit_tests(self):
        if not os.access(PROMTOOL, os.X_OK):
            self.skipTest("promtool not installed (packaging/deps.sh test: prometheus)")
        for args in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"],
                     ["check", "config", "prometheus-scrape.yml"]):
            r = subprocess.run([PROMTOOL] + args, cwd=MONITORING, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
            self.assertEqual(r.returncode, 0, "promtool %s:\n%s" % (" ".join(args),
                                                                    r.stdout.decode()))
        for rule in alert_rules():
            self.assertIn(rule["labels"].get("severity"), ("warning", "critical"), rule["alert"])
            self.assertGreater(len(rule["annotations"].get("runbook", "")), 100, rule["alert"])
        tested = set(re.findall(r"alertname: (\w+)",
                                open(os.path.join(MONITORING, "alerts_test.yml")).read()))
        for alert in ("McringBackendEjected", "McringBackendDown", "McringBackendErrorRate",
                      "McringMissSpikeAbovePrediction", "McringReloadFailed",
                      "McringConfigDrift", "McringRingDisagreement", "McringMemoryNearBudget"):
            self.assertIn(alert, tested)

    def gauge(self, name):
        status, body = admin_http(self.mc.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        m = re.search(r"^%s\{pool=\"%s\"\} (\d+)$" % (name, self.mc.pool), body.decode(), re.M)
        self.assertIsNotNone(m, name)
        return int(m.group(1))

    def test_memory_budget_gauges_follow_a_client_that_does_not_read(self):
        # buffer_limit 64m (the default) and its quarter for large requests, split between the
        # worker threads (each share rounded down).
        limit = self.gauge("mcring_pool_buffer_limit_bytes")
        self.assertLessEqual(abs(limit - (64 + 16) * 1024 * 1024), 64)
        self.assertEqual(self.gauge("mcring_pool_buffer_bytes"), 0)
        value = b"x" * (512 * 1024)
        with Conn(HOST, self.mc.port, timeout=10) as c:
            c.send(b"set big 0 0 %d\r\n%s\r\n" % (len(value), value))
            self.assertEqual(c.read_reply(), b"STORED\r\n")
        reader = Conn(HOST, self.mc.port, timeout=10)
        try:
            reader.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reader.send(b"get big\r\n" * 40)  # 20 MiB of replies, not read
            held = 0
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and held < 4 * len(value):
                held = self.gauge("mcring_pool_buffer_bytes")
                time.sleep(0.05)
            self.assertGreaterEqual(held, 4 * len(value))
            self.assertLessEqual(held, limit)
        finally:
            reader.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.gauge("mcring_pool_buffer_bytes") != 0:
            time.sleep(0.05)
        self.assertEqual(self.gauge("mcring_pool_buffer_bytes"), 0)
        print("a client not reading 40 x 512 KiB replies: %d bytes held under a %d-byte budget"
              % (held, limit))

    def test_kubernetes_scraping_agrees_with_the_deployment(self):
        dep = yaml.safe_load(open(os.path.join(KUBERNETES, "deployment.yaml")))
        pod = dep["spec"]["template"]
        container = pod["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        ann = pod["metadata"]["annotations"]
        self.assertEqual(ann["prometheus.io/scrape"], "true")
        self.assertEqual(int(ann["prometheus.io/port"]), ports["admin"])
        self.assertEqual(ann["prometheus.io/path"], "/metrics")
        job = yaml.safe_load(open(os.path.join(MONITORING, "prometheus-kubernetes-scrape.yml")))
        relabel = job["scrape_configs"][0]["relabel_configs"]
        sources = {s for r in relabel for s in r.get("source_labels", [])}
        for key in ("scrape", "port", "path"):
            self.assertIn("__meta_kubernetes_pod_annotation_prometheus_io_" + key, sources)
        self.assertIn({"target_label": "job", "replacement": "mcring"}, relabel)
        docs = list(yaml.safe_load_all(open(os.path.join(KUBERNETES, "prometheus-operator",
                                                         "servicemonitor.yaml"))))
        svc = next(d for d in docs if d["kind"] == "Service")
        sm = next(d for d in docs if d["kind"] == "ServiceMonitor")
        labels = pod["metadata"]["labels"]
        self.assertTrue(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()))
        self.assertEqual(svc["spec"]["ports"][0]["targetPort"], "admin")
        self.assertTrue(all(svc["metadata"]["labels"].get(k) == v
                            for k, v in sm["spec"]["selector"]["matchLabels"].items()))
        self.assertEqual(sm["spec"]["endpoints"][0]["port"], svc["spec"]["ports"][0]["name"])
        self.assertEqual(sm["spec"]["endpoints"][0]["path"], "/metrics")


if __name__ == "__main__":
    unittest.main()
