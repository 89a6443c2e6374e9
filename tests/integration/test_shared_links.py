"""Pools that name the same memcached share its connections (proxy/backend/backend_link.h).

Three pools list the same three memcached; a front routes a prefix to each. With one worker:
- mcring holds one connection per memcached, not one per pool and memcached, and a multi-get
  across the three routes goes to each memcached as one get line and one part of the request;
- each pool still counts its own requests, hits and misses;
- reloads that give pools other link settings (timeout, server_connections) split and join their
  links under load, with no client error, and the last leaves the connections it says;
- a client of one pool that reads a 36 MB reply at about 1 MB/s does not hold up, for long, a
  client of another pool whose key is on the same memcached (the connection they share);
- a shared memcached that dies fails (as misses, unavailable_reads) the keys of every pool that
  names it, and every pool serves it again once it is back on its port.
"""
import socket
import threading
import time
import unittest

from harness import HOST, Conn, Memcached, parse_values, set_cmd
from test_hostile import ends_with, request_within, store, trickle_reader
from test_routes import RoutesCase, wait_until

ROUTES = ['prefix: "u:"\n      pool: users',
          'prefix: "s:"\n      pool: sessions',
          'prefix: "v:"\n      pool: sessions_v2']
PREFIXES = {"users": b"u:", "sessions": b"s:", "sessions_v2": b"v:"}


class SharedLinksTest(RoutesCase):

    def setUp(self):
        super().setUp()
        shared = []
        for _ in range(3):
            b = Memcached()
            self.addCleanup(b.stop)
            shared.append(b)
        self.shared = shared
        # One worker: the connection counts below are per worker.
        self.start({name: shared for name in PREFIXES}, ROUTES, args=["--threads", "1"])

    def keys(self, n=10):
        # Scattered suffixes: fnv1a_64 places "u:0".."u:9" on fewer servers than random keys.
        return {pool: [p + b"%08x" % (i * 2654435761 % 2**32) for i in range(n)]
                for pool, p in PREFIXES.items()}

    def fill(self, keys):
        with Conn(HOST, self.port) as c:
            for pool, ks in keys.items():
                for k in ks:
                    self.assertEqual(c.request(set_cmd(k, b"val-" + k)), b"STORED\r\n")

    def test_pools_naming_one_memcached_share_one_connection_and_one_get_line(self):
        keys = self.keys()
        self.fill(keys)
        # One connection per memcached for the worker, whatever the number of pools naming it.
        self.assertEqual(int(self.stats()["backend_connections"]), 3)

        every = [k for ks in keys.values() for k in ks]
        mixed = every[::3] + every[1::3] + every[2::3]  # the routes interleaved
        holders = {b for ks in self.holders(mixed).values() for b in ks}
        st = self.stats()
        lines_before = int(st["backend_get_lines"])
        requests_before = int(st["backend_requests"])
        hits_before = {pool: self.backend_field(pool, "get_hits") for pool in PREFIXES}
        with Conn(HOST, self.port) as c:
            got = parse_values(c.request(b"get " + b" ".join(mixed) + b"\r\n"))
        self.assertEqual([k for k, _, _, _ in got], mixed)
        self.assertEqual([v for _, v, _, _ in got], [b"val-" + k for k in mixed])
        # One line per memcached holding the keys (it was one per pool and memcached: up to 9).
        st = self.stats()
        lines = int(st["backend_get_lines"]) - lines_before
        requests = int(st["backend_requests"]) - requests_before
        print("\n30-key get across 3 routes over %d memcached: %d get lines, %d backend requests"
              % (len(holders), lines, requests))
        self.assertEqual(lines, len(holders))
        # ... and one part of the request per memcached, not one per pool and memcached.
        self.assertEqual(requests, len(holders))
        # Each pool counted its own keys' hits, on its own servers.
        for pool in PREFIXES:
            self.assertEqual(self.backend_field(pool, "get_hits") - hits_before[pool], 10, pool)
        self.assertEqual(int(self.stats()["backend_connections"]), 3)

    def test_reloads_split_and_join_links_under_load_without_errors(self):
        keys = self.keys(20)
        self.fill(keys)
        every = [k for ks in keys.values() for k in ks]
        stop = threading.Event()
        counts = {"gets": 0, "errors": 0, "bad": []}

        def load():
            deadline = time.monotonic() + 30
            with Conn(HOST, self.port) as c:
                i = 0
                while not stop.is_set() and time.monotonic() < deadline and i < 200000:
                    batch = every[i % len(every):][:7] or every[:7]
                    i += 7
                    r = c.request(b"get " + b" ".join(batch) + b"\r\n")
                    try:
                        vals = parse_values(r)
                    except AssertionError:
                        counts["errors"] += 1
                        counts["bad"].append(r[:120])
                        continue
                    if [k for k, _, _, _ in vals] != batch:
                        counts["errors"] += 1
                        counts["bad"].append(r[:120])
                    counts["gets"] += 1

        t = threading.Thread(target=load)
        t.start()
        try:
            self.assertTrue(wait_until(lambda: counts["gets"] > 200))
            # Links split, joined and split again, each while gets across the routes run; the
            # last leaves sessions_v2 alone on its links.
            for extra in ({"sessions_v2": {"timeout": 2000}},
                          {"users": {"timeout": 1500, "server_connections": 2}},
                          {},
                          {"sessions": {"timeout": 3000}, "sessions_v2": {"timeout": 3000}},
                          {"sessions_v2": {"timeout": 2000}}):
                self.pool_extra = extra
                rec = self.reload(ROUTES)
                self.assertEqual(rec["result"], "applied", rec)
                before = counts["gets"]
                self.assertTrue(wait_until(lambda: counts["gets"] > before + 100))
        finally:
            stop.set()
            t.join(40)
        self.assertFalse(t.is_alive())
        print("\n%d gets across 5 reloads, %d errors" % (counts["gets"], counts["errors"]))
        self.assertEqual(counts["errors"], 0, counts["bad"][:3])
        # users and sessions keep the links they share (all three memcached were written to);
        # sessions_v2 has its own, to each memcached its keys were read from since.
        v2 = {b for ks in self.holders(keys["sessions_v2"]).values() for b in ks}
        self.assertTrue(wait_until(
            lambda: int(self.stats()["backend_connections"]) == 3 + len(v2)),
            (self.stats()["backend_connections"], len(v2)))

    def test_a_slow_reader_of_one_pool_does_not_stall_another_pools_client_for_long(self):
        big = 900000
        store(self.port, b"u:big", big)
        home = self.holders([b"u:big"])[b"u:big"][0]
        # A sessions key on the same memcached: its requests share u:big's connection.
        candidates = [b"s:%08x" % (i * 2654435761 % 2**32) for i in range(200)]
        with Conn(HOST, self.port) as c:
            for k in candidates:
                self.assertEqual(c.request(set_cmd(k, b"x" * 10)), b"STORED\r\n")
        holders = self.holders(candidates)
        victim = next(k for k in candidates if holders[k] == [home])
        a = socket.create_connection((HOST, self.port), timeout=10)
        self.addCleanup(a.close)
        a.sendall(b"get" + b" u:big" * 40 + b"\r\n")  # a 36 MB reply
        trickle_reader(self, a)
        time.sleep(1.0)
        dt, reply = request_within(self.port, b"get " + victim + b"\r\n", ends_with(b"END\r\n"),
                                   6.0)
        print("\nsessions get behind a users client reading at 1 MB/s: %.2f s (slow readers "
              "closed: %s)" % (dt, self.stats()["client_slow_closed"]))
        self.assertEqual(reply, b"VALUE " + victim + b" 0 10\r\nxxxxxxxxxx\r\nEND\r\n")
        self.assertLess(dt, 3.0, "another pool's get waited this long behind a slow reader")

    def test_a_dead_shared_memcached_is_every_pools_and_comes_back_for_all(self):
        keys = self.keys(30)
        self.fill(keys)
        holders = self.holders([k for ks in keys.values() for k in ks])
        # A memcached that holds keys of every pool.
        victim = next(b for b in self.shared
                      if all(any(b in holders[k] for k in ks) for ks in keys.values()))
        on_victim = {pool: [k for k in ks if victim in holders[k]] for pool, ks in keys.items()}
        port = victim.port
        victim.stop()
        with Conn(HOST, self.port) as c:
            for pool, ks in on_victim.items():
                # Misses (unavailable_reads: miss), and the rest of the pool is served.
                self.assertEqual(c.request(b"get " + ks[0] + b"\r\n"), b"END\r\n", pool)
                live = [k for k in keys[pool] if k not in ks][0]
                self.assertEqual(len(parse_values(c.request(b"get " + live + b"\r\n"))), 1)
        for pool in PREFIXES:
            self.assertGreater(self.backend_field(pool, "errors"), 0, pool)
        victim.start(port=port)
        # Past the reconnect backoff (1 s at most), every pool's keys on it are stored again.

        def all_back():
            with Conn(HOST, self.port) as c:
                for pool, ks in on_victim.items():
                    if c.request(set_cmd(ks[0], b"again")) != b"STORED\r\n":
                        return False
                return all(c.request(b"get " + ks[0] + b"\r\n").startswith(b"VALUE")
                           for ks in on_victim.values())
        self.assertTrue(wait_until(all_back, timeout=10))


if __name__ == "__main__":
    unittest.main()
