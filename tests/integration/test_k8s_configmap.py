"""Kubernetes ConfigMap updates: the kubelet never writes the mounted file; it projects
the ConfigMap into a new timestamped directory and swaps the `..data` symlink over to it
atomically (then removes the old directory). mcring must notice that by itself, with no signal,
within a bounded time, and record it as `source=file` in `stats reloads`."""

import glob
import json
import os
import sys
import time
import unittest

from harness import (ROOT, ConfigDir, IntegrationCase, Memcached, Mcring, admin_http,
                     make_tmpdir, parse_reloads, parse_stats, pool_yaml, remove_tmpdir,
                     requires_proxy, run_mcring, server_line)

PICKUP_BOUND = 3.0   # s: debounce is 200 ms; a swap must be applied well within this


@requires_proxy
class ConfigMapSwapTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir("mcring-k8s-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = [Memcached() for _ in range(4)]
        for m in self.backends:
            self.addCleanup(m.stop)
        # The volume as the kubelet lays it out before the container starts.
        self.conf = ConfigDir(self.tmp)
        self.conf.k8s_swap("# projected by the kubelet; rewritten with the port below\n",
                           extra_files={"README": "v1\n"})
        first_ts = os.path.join(self.conf.dir, self.conf.ts_dir)
        self.assertTrue(os.path.islink(self.conf.path))
        self.assertEqual(os.readlink(self.conf.path), "..data/mcring.yml")
        self.assertEqual(os.readlink(os.path.join(self.conf.dir, "..data")), self.conf.ts_dir)
        self.proxy = Mcring([server_line(m.addr) for m in self.backends[:2]], self.tmp,
                            timeout_ms=1000, args=["--threads", "2"], config_path=self.conf.path)
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        # Mcring wrote through the symlinks into the projected file: still the kubelet's layout.
        self.assertTrue(os.path.islink(self.conf.path))
        self.assertTrue(os.path.isfile(os.path.join(first_ts, "mcring.yml")))
        self.c = self.conn(self.proxy.port)
        self.seen = 0

    def text(self, idxs, comment=""):
        return ("# %s\n" % comment) + pool_yaml("alpha", self.proxy.port,
                                                 [server_line(self.backends[i].addr) for i in idxs])

    def stats(self):
        return parse_stats(self.c.request(b"stats\r\n"))

    def wait_record(self, t0):
        """The first reload record after the last seen one, and how long after t0 it appeared."""
        deadline = t0 + PICKUP_BOUND + 5
        while time.monotonic() < deadline:
            recs = [r for r in parse_reloads(self.c.request(b"stats reloads\r\n")) if r["id"] > self.seen]
            if recs:
                self.seen = recs[-1]["id"]
                return recs, time.monotonic() - t0
            time.sleep(0.02)
        self.fail("no reload within %.0f s of the ConfigMap swap\n%s" % (PICKUP_BOUND + 5,
                                                                         self.proxy.log_tail()))

    def assert_routes(self, config_text):
        """Keys set through mcring land where `mcring route` says for config_text."""
        snap = os.path.join(self.tmp, "route-%d.yml" % self.seen)
        with open(snap, "w") as f:
            f.write(config_text)
        keys = ["cm:%d:%d" % (self.seen, i) for i in range(24)]
        for k in keys:
            self.assertEqual(self.c.request(b"set %s 0 0 1\r\nx\r\n" % k.encode()), b"STORED\r\n")
        out = run_mcring(["route", "-c", snap] + keys)
        self.assertEqual(out.returncode, 0, out.stderr)
        by_addr = {m.addr: m for m in self.backends}
        for line in out.stdout.decode().splitlines():
            key, addr = line.split("\t")[:2]
            self.assertEqual(by_addr[addr].get(key), b"x", "%s not on %s" % (key, addr))

    def swap_and_wait(self, text, **kw):
        t0 = time.monotonic()
        self.conf.k8s_swap(text, **kw)
        recs, dt = self.wait_record(t0)
        return recs, dt

    def test_configmap_update_is_picked_up_without_a_signal(self):
        self.assertEqual(self.stats()["config_generation"], "1")
        timings = []

        # 1. A new server: applied by the file watcher alone.
        t2 = self.text([0, 1, 2], "add server 2")
        recs, dt = self.swap_and_wait(t2, extra_files={"README": "v2\n"})
        timings.append(dt)
        self.assertEqual([(r["source"], r["result"]) for r in recs], [("file", "applied")], recs)
        self.assertLess(dt, PICKUP_BOUND)
        self.assertEqual(self.stats()["config_generation"], "2")
        self.assertIn("+servers 1 (%s)" % self.backends[2].addr, recs[0].get("diff", ""), recs)
        self.assert_routes(t2)

        # 2. Again: the directory mcring resolved the path into at start is gone by now; the
        # swap in the volume's directory is what it must see.
        t3 = self.text([1, 2, 3], "swap 0 for 3")
        recs, dt = self.swap_and_wait(t3)
        timings.append(dt)
        self.assertEqual([(r["source"], r["result"]) for r in recs], [("file", "applied")], recs)
        self.assertLess(dt, PICKUP_BOUND)
        self.assertEqual(self.stats()["config_generation"], "3")
        self.assert_routes(t3)

        # 3. Another key of the ConfigMap changed, mcring.yml's bytes did not: a no-op.
        recs, dt = self.swap_and_wait(t3, extra_files={"README": "v3\n"})
        self.assertEqual([(r["source"], r["result"]) for r in recs], [("file", "unchanged")], recs)
        self.assertEqual(self.stats()["config_generation"], "3")

        # 4. A broken ConfigMap: rejected, the running config keeps serving.
        st = self.stats()
        recs, dt = self.swap_and_wait(t3.replace("distribution: ketama", "distribution: ketamma"))
        self.assertEqual([(r["source"], r["result"]) for r in recs], [("file", "failed")], recs)
        self.assertIn("ketamma", recs[0].get("error", ""))
        st2 = self.stats()
        self.assertEqual(st2["config_generation"], "3")
        self.assertEqual(int(st2["reload_failures"]), int(st["reload_failures"]) + 1)
        self.assert_routes(t3)

        # 5. Fixed: applied again.
        t4 = self.text([0, 1, 2, 3], "all four")
        recs, dt = self.swap_and_wait(t4)
        timings.append(dt)
        self.assertEqual([(r["source"], r["result"]) for r in recs], [("file", "applied")], recs)
        self.assertLess(dt, PICKUP_BOUND)
        self.assertEqual(self.stats()["config_generation"], "4")
        self.assert_routes(t4)

        # The admin endpoint tells the same story.
        status, body = admin_http(self.proxy.admin_port, "GET", "/reloads")
        self.assertEqual(status, 200, body)
        doc = json.loads(body)
        text = json.dumps(doc)
        self.assertIn('"file"', text)
        self.assertNotIn('"signal"', text, "no signal was sent, yet a signal reload is recorded")

        # Nothing else happens by itself afterwards.
        time.sleep(0.5)
        late = [r for r in parse_reloads(self.c.request(b"stats reloads\r\n")) if r["id"] > self.seen]
        self.assertEqual(late, [])
        print("\nConfigMap swap picked up after %s s" % ", ".join("%.2f" % t for t in timings),
              file=sys.stderr)


class ManifestDiscoveryTest(unittest.TestCase):
    """packaging/kubernetes: the example finds memcached through a headless Service with
    servers_dns; every manifest parses, and the ConfigMap's mcring.yml passes `mcring -t`."""

    def test_configmap_finds_memcached_through_the_headless_service(self):
        try:
            import yaml
        except ImportError:
            raise unittest.SkipTest("python3-yaml is not installed")
        docs = []
        for path in sorted(glob.glob(os.path.join(ROOT, "packaging", "kubernetes", "*.yaml"))):
            with open(path) as f:
                docs += [d for d in yaml.safe_load_all(f) if d]
        by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
        headless = by.get(("Service", "memcached"))
        self.assertIsNotNone(headless, "no Service 'memcached' in packaging/kubernetes")
        self.assertEqual(headless["spec"].get("clusterIP"), "None", "memcached's Service is not headless")
        pools = yaml.safe_load(by[("ConfigMap", "mcring-config")]["data"]["mcring.yml"])
        dns = [p["servers_dns"] for p in pools.values() if "servers_dns" in p]
        self.assertEqual(len(dns), 1, pools)
        name, port = dns[0].rsplit(":", 1)
        self.assertEqual(name.split(".")[0], "memcached", "servers_dns does not name the Service")
        self.assertIn(int(port), [p["port"] for p in headless["spec"]["ports"]])
        self.assertFalse(any("servers" in p for p in pools.values()), "static servers left too")
        tmp = make_tmpdir("mcring-k8s-manifests-")
        self.addCleanup(remove_tmpdir, tmp)
        conf = os.path.join(tmp, "mcring.yml")
        with open(conf, "w") as f:
            f.write(by[("ConfigMap", "mcring-config")]["data"]["mcring.yml"])
        out = run_mcring(["-t", "-c", conf])
        self.assertEqual(out.returncode, 0, out.stderr.decode() + out.stdout.decode())
        print("\n  %d manifests parse; servers_dns %s -> headless Service memcached; %s"
              % (len(docs), dns[0], out.stdout.decode().strip()), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
