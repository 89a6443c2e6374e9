"""A real client library (Debian's pymemcache) through the endpoint: 10,000 keys with
set_many/get_many, plus the other calls an application makes."""

import unittest

from harness import HOST, SharedClusterCase, DIRECT

try:
    from pymemcache.client.base import Client
except ImportError:  # run with /usr/bin/python3 (python3-pymemcache)
    Client = None

N = 10000
BATCH = 500


def value(i):
    return (b"%d:" % i) * (1 + i % 50) + bytes([i % 256])


@unittest.skipIf(Client is None, "pymemcache not importable: run with /usr/bin/python3")
class PymemcacheTest(SharedClusterCase):
    CLUSTER_ARGS = {"n_backends": 3, "extra": {"allow_flush_all": "true"}}

    def client(self, **kw):
        c = Client((HOST, self.cl.port), connect_timeout=5, timeout=15, **kw)
        self.addCleanup(c.close)
        return c

    def test_set_many_get_many_10000(self):
        mc = self.client()
        data = {"pm:%d" % i: value(i) for i in range(N)}
        keys = list(data)
        for i in range(0, N, BATCH):
            failed = mc.set_many({k: data[k] for k in keys[i:i + BATCH]}, noreply=False)
            self.assertEqual(failed, [], "set_many failed for %d keys" % len(failed))
        got = {}
        for i in range(0, N, BATCH):
            got.update(mc.get_many(keys[i:i + BATCH][::-1] + ["pm:missing:%d" % i]))
        self.assertEqual(len(got), N)
        bad = [k for k in keys if got.get(k) != data[k]]
        self.assertEqual(bad[:10], [], "%d keys with a wrong or missing value" % len(bad))
        if not DIRECT:
            # Every key on exactly one backend, and all 3 backends used.
            owners = self.cl.owner_map(keys)
            self.assertEqual(len(owners), N)
            self.assertTrue(all(len(v) == 1 for v in owners.values()))
            self.assertEqual(len({i for v in owners.values() for i in v}), 3)

    def test_set_many_noreply_then_get_many(self):
        mc = self.client(default_noreply=True)
        data = {"pmq:%d" % i: value(i) for i in range(3000)}
        keys = list(data)
        for i in range(0, len(keys), BATCH):
            mc.set_many({k: data[k] for k in keys[i:i + BATCH]})
        got = {}
        for i in range(0, len(keys), BATCH):
            got.update(mc.get_many(keys[i:i + BATCH]))
        self.assertEqual(got, data)

    def test_other_calls(self):
        mc = self.client(default_noreply=False)
        self.assertTrue(mc.set("a", b"1"))
        self.assertTrue(mc.add("b", b"x"))
        self.assertFalse(mc.add("b", b"y"))
        self.assertTrue(mc.replace("b", b"z"))
        self.assertTrue(mc.append("b", b"+"))
        self.assertTrue(mc.prepend("b", b"-"))
        self.assertEqual(mc.get("b"), b"-z+")
        self.assertEqual(mc.incr("a", 41), 42)
        self.assertEqual(mc.decr("a", 2), 40)
        self.assertIsNone(mc.incr("nosuch", 1))
        v, cas = mc.gets("b")
        self.assertEqual(v, b"-z+")
        self.assertTrue(mc.cas("b", b"new", cas))
        self.assertFalse(mc.cas("b", b"newer", cas))
        self.assertEqual(mc.get("b"), b"new")
        self.assertTrue(mc.touch("b", 100))
        self.assertFalse(mc.touch("nosuch", 100))
        gm = mc.gets_many(["a", "b", "nosuch"])
        self.assertEqual(sorted(gm), ["a", "b"])
        self.assertEqual(gm["b"][0], b"new")
        self.assertTrue(mc.delete("a"))
        self.assertFalse(mc.delete("a"))
        self.assertIsNone(mc.get("a"))
        mc.delete_many(["b"])
        self.assertIsNone(mc.get("b"))
        self.assertTrue(mc.flush_all())
        self.assertTrue(mc.version())
        stats = mc.stats()
        self.assertIn(b"pid", stats)


if __name__ == "__main__":
    unittest.main()
