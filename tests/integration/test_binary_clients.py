"""The binary-protocol client libraries people run, through mcring and against memcached
directly: pylibmc (binary=True), php-memcached (OPT_BINARY_PROTOCOL), Dalli (Debian's
ruby-dalli 3.0, binary only) and memjs (npm, binary only). Each runs the same suite of its own
calls (single and multi get, set/add/replace/append/prepend, cas success and conflict, delete,
incr/decr with initial values, touch, flush, stats, version, large and too-large values, misses)
and prints the results; the two runs must print the same. Before these clients were tested, every call of theirs
through mcring timed out."""

import json
import os
import shutil
import subprocess
import unittest

from harness import HOST, Cluster, Conn, IntegrationCase, Memcached, requires_proxy

CLIENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clients")
NODE_MODULES = os.environ.get("MCRING_NODE_MODULES", "")


@requires_proxy
class BinaryClientsTest(IntegrationCase):
    def run_suite(self, argv, port, env=None):
        p = subprocess.run(argv + [str(port)], cwd=CLIENTS, capture_output=True, timeout=120,
                           env=env)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace")[-2000:])
        return json.loads(p.stdout)

    def compare(self, argv, env=None):
        mc = Memcached()
        self.addCleanup(mc.stop)
        direct = self.run_suite(argv, mc.port, env)
        cl = self.cluster(n_backends=3, extra={"allow_flush_all": "true"})
        proxied = self.run_suite(argv, cl.port, env)
        self.assertGreater(len(direct), 20)
        self.assertEqual(proxied, direct)
        return direct

    def test_pylibmc_binary(self):
        if subprocess.run(["/usr/bin/python3", "-c", "import pylibmc"]).returncode != 0:
            self.skipTest("python3-pylibmc is not installed")
        got = dict(self.compare(["/usr/bin/python3", "binary_pylibmc.py"]))
        self.assertEqual(got["get"], "one")
        self.assertEqual(got["cas conflict"], False)
        self.assertEqual(got["incr"], 15)

    def test_php_memcached_binary(self):
        if not shutil.which("php"):
            self.skipTest("php-cli is not installed")
        got = {r[0]: r[1] for r in self.compare(["php", "binary_php.php"])}
        self.assertEqual(got["get"], "one")
        self.assertEqual(got["cas ok"], True)
        self.assertEqual(got["cas conflict"], False)
        self.assertEqual(got["increment initial"], 100)

    def test_php_memcached_touch_minus_one_keeps_the_key(self):
        # libmemcached sends -1 as 0xffffffff; memcached reads it unsigned (2106) and keeps the
        # key. mcring sends meta T2147483647 (2038, the latest meta can name), not T4294967295,
        # which memcached's meta parser wraps to -1 and expires at once.
        if not shutil.which("php"):
            self.skipTest("php-cli is not installed")
        mc = Memcached()
        self.addCleanup(mc.stop)
        cl = self.cluster(n_backends=3)
        ttls = {}
        results = {}
        for name, port in (("memcached", mc.port), ("mcring", cl.port)):
            results[name] = self.run_suite(["php", "binary_php_touch.php"], port)
            with Conn(HOST, port) as t:
                ttls[name] = [t.request(b"mg %s t\r\n" % k) for k in (b"touched", b"set-1")]
            print("%s: %s, mg t: %s" % (name, results[name], ttls[name]))
        self.assertEqual(results["mcring"], results["memcached"])
        got = {r[0]: r[1] for r in results["memcached"]}
        self.assertEqual((got["touch -1"], got["get after touch -1"]), (True, "value"))
        self.assertEqual(got["get after set -1"], "value")
        for name in ttls:
            for reply in ttls[name]:
                self.assertRegex(reply, rb"^HD t[1-9][0-9]{8,9}\r\n$", name)

    def test_dalli_binary(self):
        if not shutil.which("ruby"):
            self.skipTest("ruby-dalli is not installed")
        got = dict(self.compare(["ruby", "binary_dalli.rb"]))
        self.assertEqual(got["get"], "one")
        self.assertEqual(got["cas conflict"], False)
        self.assertEqual(got["incr initial"], 100)

    def test_memjs(self):
        if not NODE_MODULES or not os.path.isdir(os.path.join(NODE_MODULES, "memjs")):
            self.skipTest("memjs is not installed (the integration_node_clients fixture)")
        env = dict(os.environ, NODE_PATH=NODE_MODULES)
        got = dict(self.compare(["node", os.path.join("node", "binary_memjs.js")], env))
        self.assertEqual(got["get"], "one")
        self.assertEqual(got["increment initial"], 100)


if __name__ == "__main__":
    unittest.main()
