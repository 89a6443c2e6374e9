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

from harness import Cluster, IntegrationCase, Memcached, requires_proxy

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
