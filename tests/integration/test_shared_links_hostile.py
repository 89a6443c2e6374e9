"""An outside attack on shared links (proxy/backend/backend_link.h): pools that name the same
memcached share its connections, and a multi-get across routes sends the keys of every pool on
one memcached as one fragment (proxy/dispatch/routed.cc), each key counted by its own pool's
server (PendingRequest::key_server).

- A merged fragment in flight while a reload drains the server of the pool whose key rides in
  another pool's fragment: that server had nothing of its own in flight, so it was reaped and
  deleted, and the reply then counted the key's hit on freed memory (a crash).
- A storm of reloads flipping pools between shared and separate links, adding and removing a
  pool and moving a route, under pipelined multi-gets across routes and sets on several
  connections: every reply right and in order, and afterwards the connections the final config
  implies, on mcring's side and on memcached's (curr_connections).
- A route whose failover pool shares the dead primary's memcached: the keys the failover pool
  places elsewhere are served, the others are misses.
- A shared memcached frozen (timeout) under load from two pools, one of which ejects it
  (auto_eject_hosts): ejection is that pool's alone, the other keeps the server, and both serve
  it again once it is back.
- A reload that changes only a pool's link settings (timeout) while its warm-up window is open:
  every server is replaced on a new link, and the old ones, which the window still reads moved
  keys from, were reaped and deleted (the next warm-up second hop used freed memory).
- A client that asks for 36 MB across two pools' routes on one memcached and never reads: the
  other clients of both pools on it are answered, mcring's memory stays bounded.
- Pools on one memcached that must not share: one authenticating (server_auth_file) next to a
  plaintext one, and pools with different unavailable_reads, which must not be merged into one
  fragment.
"""
import os
import socket
import threading
import time
import unittest

from harness import (HOST, SANITIZED, Conn, Memcached, make_tmpdir, parse_stats, parse_values,
                     pool_yaml, proc_rss_kb, remove_tmpdir, run_mcring, server_line, set_cmd,
                     spread_keys)
from test_hostile import ends_with, request_within, store
from test_routes import RoutesCase, wait_until
from test_tls import TlsMemcached
from test_warmup import WarmupCase


def scattered(prefix, n):
    # fnv1a_64 places "u:0".."u:9" on fewer servers than random keys.
    return [prefix + b"%08x" % (i * 2654435761 % 2**32) for i in range(n)]


def read_reply(sock, end=b"END\r\n", timeout=10.0):
    """Bytes from sock up to `end`, or what came before it closed or the time was up."""
    sock.settimeout(0.2)
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(end) and time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
    return data


class HostileCase(RoutesCase):

    def memcacheds(self, n):
        """n memcached started for this test (stopped at cleanup)."""
        out = []
        for _ in range(n):
            b = Memcached()
            self.addCleanup(b.stop)
            out.append(b)
        return out

    def fill(self, keys):
        with Conn(HOST, self.port) as c:
            for k in keys:
                self.assertEqual(c.request(set_cmd(k, b"val-" + k)), b"STORED\r\n")


class TwoPoolsOneMemcachedCase(HostileCase):
    """users and sessions name one memcached with equal link settings (timeout TIMEOUT_MS), one
    worker: `get u:k s:k` goes to it as one fragment of users' server, s:k counted by sessions'
    server."""

    ROUTES = ['prefix: "u:"\n      pool: users', 'prefix: "s:"\n      pool: sessions']
    TIMEOUT_MS = 1000
    POOL_EXTRA = {}  # pool keys beyond the timeout, by pool

    def setUp(self):
        super().setUp()
        self.m, = self.memcacheds(1)
        extra = {p: dict({"timeout": self.TIMEOUT_MS}, **self.POOL_EXTRA.get(p, {}))
                 for p in ("users", "sessions")}
        self.start({"users": [self.m], "sessions": [self.m]}, self.ROUTES, pool_extra=extra,
                   args=["--threads", "1"])


class MergedFragmentDrainTest(TwoPoolsOneMemcachedCase):
    # A timeout longer than the test's freeze: the reply comes, it is not failed.
    TIMEOUT_MS = 20000

    def merged_get_in_flight_across(self, extra, routes):
        """Sends `get u:k s:k` to a frozen memcached, reloads to `extra`/`routes` while it is in
        flight, then lets memcached answer: the reply must be whole and mcring alive."""
        self.fill([b"u:k", b"s:k"])
        lines = int(self.stats()["backend_get_lines"])
        a = socket.create_connection((HOST, self.port), timeout=10)
        self.addCleanup(a.close)
        self.m.pause()
        try:
            a.sendall(b"get u:k s:k\r\n")
            # Sent as one line: the two keys are one fragment (users'), s:k counted by sessions.
            self.assertTrue(wait_until(
                lambda: int(self.stats()["backend_get_lines"]) == lines + 1, timeout=5))
            self.pool_extra = extra
            rec = self.reload(routes)
            self.assertEqual(rec["result"], "applied", rec)
            # The drained sessions server has had time to be reaped (a posted delete).
            self.stats()
        finally:
            self.m.resume()
        reply = read_reply(a)
        print("\nmerged get answered after the reload: %r; mcring alive: %s"
              % (reply, self.proxy.proc.poll() is None))
        self.assertTrue(self.proxy.proc.poll() is None,
                        "mcring died when the merged fragment was answered")
        self.assertEqual(reply, b"VALUE u:k 0 7\r\nval-u:k\r\nVALUE s:k 0 7\r\nval-s:k\r\n"
                         b"END\r\n")
        # And it still serves both pools.
        with Conn(HOST, self.port) as c:
            got = parse_values(c.request(b"get s:k u:k\r\n"))
        self.assertEqual([k for k, _, _, _ in got], [b"s:k", b"u:k"])

    def test_a_pool_split_off_while_its_key_rides_in_another_pools_fragment(self):
        # sessions gets its own link: its old server drains, with nothing of its own in flight.
        self.merged_get_in_flight_across(
            {"users": {"timeout": 20000}, "sessions": {"timeout": 20001}}, self.ROUTES)

    def test_a_pool_removed_while_its_key_rides_in_another_pools_fragment(self):
        # sessions leaves the config (its route now goes to users): its server drains.
        self.pools.pop("sessions")
        self.merged_get_in_flight_across(
            {"users": {"timeout": 20000}},
            ['prefix: "u:"\n      pool: users', 'prefix: "s:"\n      pool: users'])


class ReloadStormTest(HostileCase):
    """Three pools on two memcached; 20 reloads under pipelined load on four connections."""

    NAMES = ("users", "sessions", "extra")
    PREFIX = {"users": b"u:", "sessions": b"s:", "extra": b"x:"}

    def route_list(self, extra_route_to):
        out = ['prefix: "u:"\n      pool: users', 'prefix: "s:"\n      pool: sessions']
        out.append('prefix: "x:"\n      pool: %s' % extra_route_to)
        return out

    def setUp(self):
        super().setUp()
        self.ms = self.memcacheds(2)
        self.start({n: self.ms for n in self.NAMES}, self.route_list("extra"),
                   args=["--threads", "2"])

    def memcached_connections(self, b):
        with b.conn() as c:
            return int(parse_stats(c.request(b"stats\r\n"))["curr_connections"])

    def not_mcrings(self):
        """memcached's connections that are neither mcring's (by its gauge) nor the one asking."""
        mc = sum(self.memcached_connections(b) - 1 for b in self.ms)
        return mc - int(self.stats()["backend_connections"])

    def test_twenty_reloads_flipping_links_under_pipelined_load(self):
        keys = {n: scattered(p, 24) for n, p in self.PREFIX.items()}
        every = [k for ks in keys.values() for k in ks]
        self.fill(every)
        stop = threading.Event()
        counts = {"gets": 0, "sets": 0, "errors": 0, "bad": []}
        lock = threading.Lock()

        def bad(what):
            with lock:
                counts["errors"] += 1
                counts["bad"].append(what[:160])

        def load(seed):
            try:
                pipeline(seed)
            except OSError as e:  # mcring went away
                bad(repr(e).encode())

        def pipeline(seed):
            deadline = time.monotonic() + 25
            i = seed * 11
            with Conn(HOST, self.port, timeout=10) as c:
                while not stop.is_set() and time.monotonic() < deadline and i < 100000:
                    # A pipeline: two gets across the routes and a set of a key they read.
                    b1 = [every[(i + j * 7) % len(every)] for j in range(9)]
                    b2 = [every[(i + j * 13 + 5) % len(every)] for j in range(5)]
                    w = every[(i * 3) % len(every)]
                    i += 1
                    replies = c.requests(b"get " + b" ".join(b1) + b"\r\n" + set_cmd(w, b"val-" + w)
                                         + b"get " + b" ".join(b2) + b"\r\n", 3)
                    if len(replies) != 3 or replies[1] != b"STORED\r\n":
                        bad(b"|".join(replies))
                        continue
                    with lock:
                        counts["sets"] += 1
                    for batch, r in ((b1, replies[0]), (b2, replies[2])):
                        try:
                            vals = parse_values(r)
                        except AssertionError:
                            bad(r)
                            continue
                        if ([k for k, _, _, _ in vals] != batch
                                or any(v != b"val-" + k for k, v, _, _ in vals)):
                            bad(r)
                        with lock:
                            counts["gets"] += 1

        threads = [threading.Thread(target=load, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        rss = []
        try:
            self.assertTrue(wait_until(lambda: counts["gets"] > 200, timeout=10))
            # Shared, split by timeout, split by server_connections, the extra pool removed (its
            # route moved to users) and added again, all on one link again at the end.
            plan = [({"sessions": {"timeout": 2000}}, True, "extra"),
                    ({}, False, "users"),
                    ({"users": {"server_connections": 2}}, True, "extra"),
                    ({"extra": {"timeout": 1500}}, True, "extra"),
                    ({"extra": {"timeout": 1500}}, False, "sessions"),
                    ({}, True, "extra")] * 3 + [({"sessions": {"timeout": 3000}}, True, "extra"),
                                                ({}, True, "extra")]
            self.assertEqual(len(plan), 20)
            for n, (extra, with_extra, to) in enumerate(plan):
                if with_extra:
                    self.pools["extra"] = self.ms
                else:
                    self.pools.pop("extra", None)
                self.pool_extra = extra
                self.assertIsNone(self.proxy.proc.poll(), "mcring exited before reload %d" % n)
                rec = self.reload(self.route_list(to))
                self.assertEqual(rec["result"], "applied", (n, rec))
                before = counts["gets"]
                self.assertTrue(wait_until(lambda: counts["gets"] > before + 20, timeout=10),
                                "no progress after reload %d" % n)
                rss.append(proc_rss_kb(self.proxy.pid))
        finally:
            stop.set()
            for t in threads:
                t.join(40)
        self.assertFalse(any(t.is_alive() for t in threads))
        self.assertTrue(self.proxy.proc.poll() is None)
        print("\n%d gets and %d sets across 20 reloads, %d errors; RSS %d..%d kB"
              % (counts["gets"], counts["sets"], counts["errors"], min(rss), max(rss)))
        self.assertEqual(counts["errors"], 0, counts["bad"][:3])
        # The final config: every pool on one link per memcached and worker (2 workers, 2
        # memcached, at most 4 connections), and nothing left of the links the storm made.
        self.assertTrue(wait_until(lambda: int(self.stats()["backend_connections"]) <= 4,
                                   timeout=10), self.stats()["backend_connections"])
        conns = int(self.stats()["backend_connections"])
        mc = [self.memcached_connections(b) for b in self.ms]
        print("after: mcring backend_connections %d; memcached curr_connections %s"
              % (conns, mc))
        # On memcached's side too: every connection the storm opened and the reloads dropped is
        # closed, the ones left are the ones mcring counts.
        self.assertTrue(wait_until(lambda: self.not_mcrings() == 0, timeout=10),
                        self.not_mcrings())
        if not SANITIZED:
            self.assertLess(max(rss), 200 * 1024, rss)


class FrozenSharedMemcachedTest(HostileCase):
    """users and sessions share two memcached's links; users ejects a failing server
    (auto_eject_hosts, server_failure_limit 1), sessions does not."""

    ROUTES = ['prefix: "u:"\n      pool: users', 'prefix: "s:"\n      pool: sessions']

    def setUp(self):
        super().setUp()
        self.ms = self.memcacheds(2)
        self.start({"users": self.ms, "sessions": self.ms}, self.ROUTES,
                   pool_extra={"users": {"timeout": 300, "auto_eject_hosts": "true",
                                         "server_failure_limit": 1,
                                         "server_retry_timeout": 1500},
                               "sessions": {"timeout": 300}},
                   args=["--threads", "1"])

    def server_field(self, pool, backend, field):
        st = self.stats(b"backends")
        name = "%s:%s:%s" % (pool, backend.addr, field)
        return int(st.get(name, -1))

    def test_a_frozen_shared_memcached_is_ejected_by_one_pool_only_and_returns_for_both(self):
        keys = scattered(b"u:", 40) + scattered(b"s:", 40)
        self.fill(keys)
        self.assertEqual(int(self.stats()["backend_connections"]), 2)  # shared: one each
        victim = self.ms[0]
        on_victim = set(k for k, hs in self.holders(keys).items() if victim in hs)
        u_keys = [k for k in keys if k in on_victim and k.startswith(b"u:")]
        s_keys = [k for k in keys if k in on_victim and k.startswith(b"s:")]
        s_live = [k for k in keys if k not in on_victim and k.startswith(b"s:")]
        self.assertTrue(u_keys and s_keys and s_live)
        self.assertIn("%s:%s:ejected" % ("users", victim.addr), self.stats(b"backends"))
        victim.pause()
        replies = []
        try:
            with Conn(HOST, self.port, timeout=10) as c:
                # Until users ejects it: its requests time out (300 ms), as sessions' do.
                def ejected():
                    replies.append(c.request(b"get " + u_keys[0] + b" " + s_keys[0] + b"\r\n"))
                    return self.server_field("users", victim, "ejected") == 1
                self.assertTrue(wait_until(ejected, timeout=10))
                # Ejected for users only: its keys go to the other memcached (a miss, then
                # stored there); sessions keeps the server and misses its keys on it.
                self.assertEqual(self.server_field("sessions", victim, "ejected"), 0)
                self.assertEqual(c.request(set_cmd(u_keys[0], b"moved")), b"STORED\r\n")
                self.assertEqual(c.request(b"get " + u_keys[0] + b"\r\n"),
                                 b"VALUE " + u_keys[0] + b" 0 5\r\nmoved\r\nEND\r\n")
                got = parse_values(c.request(b"get " + s_live[0] + b" " + s_keys[0] + b"\r\n"))
                self.assertEqual([k for k, _, _, _ in got], [s_live[0]])
                # (users' counters of the server went with it when it was ejected.)
                errors = self.server_field("sessions", victim, "errors")
                print("\nfrozen shared memcached: users ejected it after %d get(s), sessions "
                      "did not (its errors: %d)" % (len(replies), errors))
                self.assertGreater(errors, 0)
        finally:
            victim.resume()
        self.assertTrue(self.proxy.proc.poll() is None)

        # Back: sessions serves it again once the link reconnects, users once its retry comes.
        def back():
            with Conn(HOST, self.port) as c:
                if c.request(set_cmd(s_keys[1], b"again")) != b"STORED\r\n":
                    return False
                if not c.request(b"get " + s_keys[1] + b"\r\n").startswith(b"VALUE"):
                    return False
            return self.server_field("users", victim, "ejected") == 0
        self.assertTrue(wait_until(back, timeout=15))
        with Conn(HOST, self.port) as c:
            self.assertEqual(c.request(set_cmd(u_keys[1], b"home")), b"STORED\r\n")
        self.assertIn(u_keys[1], victim.get_many([u_keys[1]]))


class MergedFragmentFailureTest(TwoPoolsOneMemcachedCase):
    """A merged fragment that fails (a frozen memcached's timeout) fails keys of both pools: each
    pool counts its own (errors, unavailable_misses), as it would with a fragment of its own."""

    TIMEOUT_MS = 300

    def test_each_pool_counts_its_keys_of_a_failed_merged_fragment(self):
        self.fill([b"u:k", b"u:j", b"s:k"])
        fields = ("errors", "unavailable_misses")
        before = {(p, f): self.backend_field(p, f) for p in ("users", "sessions") for f in fields}
        self.m.pause()
        try:
            with Conn(HOST, self.port, timeout=10) as c:
                # One fragment (users' server) with users' two keys and sessions' one: timed
                # out, every key a miss (unavailable_reads: miss).
                self.assertEqual(c.request(b"get u:k s:k u:j\r\n"), b"END\r\n")
        finally:
            self.m.resume()
        got = {k: self.backend_field(*k) - v for k, v in before.items()}
        print("\nmerged fragment timed out: per pool %s" % got)
        self.assertEqual(got[("users", "unavailable_misses")], 2)
        self.assertEqual(got[("sessions", "unavailable_misses")], 1)
        self.assertEqual(got[("users", "errors")], 1)
        self.assertEqual(got[("sessions", "errors")], 1)


class AuthNextToPlaintextTest(HostileCase):
    """memcached -Y (ASCII authentication) named by a pool that authenticates (server_auth_file)
    and by one that does not: the plaintext pool must not ride on the authenticated connection."""

    ROUTES = ['prefix: "a:"\n      pool: secure', 'prefix: "o:"\n      pool: open']

    def setUp(self):
        super().setUp()
        d = make_tmpdir("mcring-auth-")
        self.addCleanup(remove_tmpdir, d)
        auth = os.path.join(d, "memcached.auth")
        with open(auth, "w") as f:
            f.write("mcring:hunter2\n")
        self.m = TlsMemcached(None, auth, tls=False)
        self.addCleanup(self.m.stop)
        self.start({"secure": [self.m], "open": [self.m]}, self.ROUTES,
                   pool_extra={"secure": {"server_auth_file": auth}}, args=["--threads", "1"])

    def test_a_plaintext_pool_does_not_share_an_authenticated_link(self):
        with Conn(HOST, self.port) as c:
            self.assertEqual(c.request(set_cmd(b"a:k", b"secret")), b"STORED\r\n")
        # o:k written past the authentication: the open pool must not read it.
        with socket.create_connection((HOST, self.m.port), timeout=5) as s:
            s.sendall(b"set a 0 0 14\r\nmcring hunter2\r\n" + set_cmd(b"o:k", b"secret"))
            self.assertEqual(read_reply(s, b"STORED\r\nSTORED\r\n"), b"STORED\r\nSTORED\r\n")
        with Conn(HOST, self.port) as c:
            plain = c.request(b"get o:k\r\n")
            both = c.request(b"get a:k o:k\r\n")
        print("\nplaintext pool next to an authenticated one on memcached -Y: %r; across: %r"
              % (plain, both))
        self.assertNotIn(b"secret", plain)
        self.assertNotIn(b"VALUE o:k", both)
        self.assertTrue(self.proxy.proc.poll() is None)


class WarmupWindowLinkChangeTest(WarmupCase):
    """A pool's warm-up window reads moved keys from their previous servers; a reload that
    changes only link settings (timeout) while it is open replaces every server (new links) and
    drains the old ones, which the window still names."""

    def test_a_timeout_change_during_a_warmup_window(self):
        self.start(3, 2, window_ms=30000, threads=1)
        keys = spread_keys("w", 300)
        self.c.send(b"".join(set_cmd(k, b"v-" + k) for k in keys))
        self.assertEqual(set(self.c.read_replies(len(keys), timeout=20)), {b"STORED\r\n"})
        moved, _before, _after = self.moved_keys(keys, 2, 3)
        self.assertTrue(moved)
        self.reload(3)  # 2 -> 3 servers: the window opens
        self.proxy.timeout_ms += 1  # the same servers on other links
        self.reload(3)
        got = self.get_all(moved)
        print("\n%d moved keys read after a timeout change inside the warm-up window: %d hits"
              % (len(moved), len(got)))
        self.assertTrue(self.proxy.proc.poll() is None, "mcring died")
        self.assertEqual(sorted(got), sorted(moved))
        self.assertEqual({k: v for k, (v, _f) in got.items()}, {k: b"v-" + k for k in moved})


class StoppedReaderTest(TwoPoolsOneMemcachedCase):
    """A client that asks for 36 MB across two routes whose pools share one memcached (merged
    fragments on the shared connection) and never reads: the other clients of both pools on that
    memcached are still answered, and mcring's memory stays bounded."""

    def test_a_stopped_reader_of_merged_fragments_holds_neither_pool_for_long(self):
        big = 900000
        store(self.port, b"u:big", big)
        store(self.port, b"s:big", big)
        self.fill([b"u:small", b"s:small"])
        rss0 = proc_rss_kb(self.proxy.pid)
        a = socket.create_connection((HOST, self.port), timeout=10)
        self.addCleanup(a.close)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        a.sendall(b"get" + b" u:big s:big" * 20 + b"\r\n")  # 36 MB, never read
        self.assertTrue(wait_until(lambda: int(self.stats()["backend_get_lines"]) > 0, timeout=5))
        out = {}
        for key in (b"s:small", b"u:small"):
            out[key] = request_within(self.port, b"get " + key + b"\r\n",
                                      ends_with(b"END\r\n"), 8.0)
        rss = proc_rss_kb(self.proxy.pid)
        print("\nbehind a stopped reader of 36 MB across two pools: %s; slow readers closed: %s;"
              " RSS %d -> %d kB" % ({k: "%.2f s" % dt for k, (dt, _r) in out.items()},
                                    self.stats()["client_slow_closed"], rss0, rss))
        for key, (_dt, reply) in out.items():
            self.assertEqual(reply, b"VALUE " + key + b" 0 " + str(len(b"val-" + key)).encode()
                             + b"\r\nval-" + key + b"\r\nEND\r\n")
        self.assertTrue(self.proxy.proc.poll() is None)
        if not SANITIZED:
            self.assertLess(rss - rss0, 100 * 1024)


class FailoverToASharingPoolTest(HostileCase):
    """Route f: goes to `primary` (M1) with failover to `second` (M1 and M2, sharing M1's link);
    route u: goes to `second`. M1 dies: f:'s keys that `second` places on M2 are served from
    there, the ones it places on M1 are misses, u:'s likewise, and each pool counts its own."""

    ROUTES = ['prefix: "f:"\n      pool: primary\n      failover: [second]',
              'prefix: "u:"\n      pool: second']

    def setUp(self):
        super().setUp()
        self.m1, self.m2 = Memcached(), Memcached()
        for m in (self.m1, self.m2):
            self.addCleanup(m.stop)
        self.start({"primary": [self.m1], "second": [self.m1, self.m2]}, self.ROUTES,
                   args=["--threads", "1"])

    def second_owner(self, keys):
        """{key: Memcached} of pool second's placement (`mcring route` on it alone)."""
        path = os.path.join(self.tmp, "second.yml")
        with open(path, "w") as f:
            f.write(pool_yaml("second", 1, [server_line(m.addr) for m in (self.m1, self.m2)]))
        r = run_mcring(["route", "-c", path], input_bytes=b"\n".join(keys) + b"\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        by_addr = {m.addr: m for m in (self.m1, self.m2)}
        return {line.split("\t")[0].encode(): by_addr[line.split("\t")[1]]
                for line in r.stdout.decode().splitlines()}

    def test_failover_to_a_pool_sharing_the_dead_primarys_memcached(self):
        f_keys, u_keys = scattered(b"f:", 12), scattered(b"u:", 12)
        owner = self.second_owner(f_keys + u_keys)
        on_m2 = [k for k in f_keys + u_keys if owner[k] is self.m2]
        self.assertTrue(0 < len(on_m2) < 24)
        with self.m2.conn() as c:  # what second holds on M2
            for k in on_m2:
                self.assertEqual(c.request(set_cmd(k, b"m2-" + k)), b"STORED\r\n")
        self.fill(f_keys[:1])  # primary's connection to M1 (second's too: one link) is up
        with self.m1.conn() as c:  # one connection of mcring's (and this one)
            self.assertEqual(parse_stats(c.request(b"stats\r\n"))["curr_connections"], "2")
        self.m1.stop()
        every = [k for pair in zip(f_keys, u_keys) for k in pair]
        with Conn(HOST, self.port) as c:
            got = parse_values(c.request(b"get " + b" ".join(every) + b"\r\n"))
            single = {k: c.request(b"get " + k + b"\r\n") for k in f_keys}
        hits = [k for k, _, _, _ in got]
        print("\nM1 dead, f: fails over to a pool sharing M1: %d of %d keys hit (%d on M2)"
              % (len(hits), len(every), len(on_m2)))
        self.assertEqual(hits, [k for k in every if k in on_m2])
        self.assertEqual({k: v for k, v, _, _ in got}, {k: b"m2-" + k for k in hits})
        for k, reply in single.items():
            want = (b"VALUE %s 0 %d\r\nm2-%s\r\nEND\r\n" % (k, len(k) + 3, k)
                    if k in on_m2 else b"END\r\n")
            self.assertEqual(reply, want, k)
        self.assertGreater(self.backend_field("primary", "errors"), 0)
        self.assertGreater(self.backend_field("second", "get_hits"), 0)
        self.assertTrue(self.proxy.proc.poll() is None)


class MustNotMergeTest(TwoPoolsOneMemcachedCase):
    """Pools on one memcached whose unavailable_reads differ share its link but not a fragment:
    a failure is answered by each pool's policy."""

    POOL_EXTRA = {"users": {"unavailable_reads": "miss"},
                  "sessions": {"unavailable_reads": "error"}}

    def test_pools_with_different_unavailable_reads_are_not_merged(self):
        self.fill([b"u:k", b"s:k"])
        before = int(self.stats()["backend_requests"])
        with Conn(HOST, self.port) as c:
            got = parse_values(c.request(b"get u:k s:k\r\n"))
        self.assertEqual([k for k, _, _, _ in got], [b"u:k", b"s:k"])
        parts = int(self.stats()["backend_requests"]) - before
        print("\nget across pools with different unavailable_reads: %d backend requests" % parts)
        self.assertEqual(parts, 2)
        self.assertEqual(int(self.stats()["backend_connections"]), 1)
        port = self.m.port
        self.m.stop()
        with Conn(HOST, self.port) as c:
            self.assertEqual(c.request(b"get u:k\r\n"), b"END\r\n")
            self.assertTrue(c.request(b"get s:k\r\n").startswith(b"SERVER_ERROR"))
        self.m.start(port=port)

        def back():  # past the link's reconnect backoff (1 s at most)
            with Conn(HOST, self.port) as c:
                return (c.request(set_cmd(b"s:k", b"v")) == b"STORED\r\n"
                        and c.request(set_cmd(b"u:k", b"v")) == b"STORED\r\n")
        self.assertTrue(wait_until(back, timeout=10))


if __name__ == "__main__":
    unittest.main()
