"""Routes (config `routes`, docs/configuration.md "Routes") against real memcached: one front
listener, several pools, every claim checked on the servers themselves.

- placement: each prefix's keys are on its pool's servers and on no other (and where
  `mcring route` says); the longest prefix wins; no route -> `SERVER_ERROR no route for key`
  with the data block consumed;
- a multi-get (get, gets, gat) across 3 routes and 5 servers comes back in the client's order;
- max_ttl: the TTL each command leaves on the server (`mg <key> t`) is capped, and a route
  without max_ttl leaves "never";
- rate_limit: refusals answered at once (latency printed), counted, other routes unaffected;
- shadow: writes reach the shadow pool; agreement rises from about 0 to 1 as it warms; a frozen
  shadow pool (SIGSTOP, 5 s) costs the clients no error and mcring no unbounded memory;
- a reload that moves a prefix to another pool under load: no error, new writes land there;
  reloads of every route option under multi-gets across routes: every reply right;
- real clients: pymemcache (text) and pylibmc (binary) across routes.

- failover: the primary pool killed, frozen (timeout) and answering misses (failover_on_miss):
  the next pools serve, in order, under load, with 0 client errors.
"""
import json
import os
import random
import re
import signal
import threading
import time
import unittest
import urllib.parse

from binary_wire import (GAT, INCR, SET, BinaryConn, arith_extras, store_extras,
                         touch_extras)
from harness import (HOST, SANITIZED, Conn, IntegrationCase, Mcring, Memcached, admin_http,
                     cache_aside_load_running, make_tmpdir, parse_reloads, parse_stats,
                     parse_values, proc_rss_kb, remove_tmpdir, requires_proxy, run_mcring,
                     server_line, set_cmd, set_many_raw, spread_keys)

DEADLINE_S = 10.0
NO_ROUTE = b"SERVER_ERROR no route for key\r\n"
RATE_LIMITED = b"SERVER_ERROR rate limited\r\n"


def pool_block(name, backends, extra=None):
    extra = dict(extra or {})
    lines = ["%s:" % name, "  hash: fnv1a_64", "  distribution: ketama",
             "  timeout: %s" % extra.pop("timeout", 1000)]
    for k, v in extra.items():
        lines.append("  %s: %s" % (k, v))
    lines.append("  servers:")
    lines += ["    - %s" % server_line(b.addr) for b in backends]
    return "\n".join(lines) + "\n"


class RoutedMcring(Mcring):
    """mcring whose whole config is render(port): a front with routes and the pools it routes to."""

    def __init__(self, render, tmpdir, **kw):
        self.render = render
        super().__init__([], tmpdir, **kw)

    def write_config(self, port):
        # Renamed in whole: mcring watches its config file, and must never read half of it.
        tmp = self.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.render(port))
        os.rename(tmp, self.config_path)


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def wait_until(pred, timeout=DEADLINE_S, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    return pred()


def remaining_ttl(backend, key):
    """The item's remaining TTL on the server itself (`mg <key> t`): -1 for never, None if absent."""
    with backend.conn() as c:
        r = c.request(b"mg " + key + b" t\r\n")
    if r == b"EN\r\n":
        return None
    m = re.match(rb"HD t(-?\d+)( [^\r\n]*)?\r\n$", r)
    assert m, "mg t answer: %r" % r
    return int(m.group(1))


@requires_proxy
class RoutesCase(IntegrationCase):
    """start(): memcached per pool, then an mcring whose front routes to them."""

    def start(self, pools, routes, front_extra=None, pool_extra=None, args=()):
        """pools: {name: number of servers, or a list of started Memcached (two pools may
        share one)}; routes: YAML lines of the front's routes list; args: mcring's options."""
        self.tmp = make_tmpdir("mcring-routes-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.pools = {}
        for name, n in pools.items():
            if not isinstance(n, int):
                self.pools[name] = list(n)
                continue
            self.pools[name] = []
            for _ in range(n):
                b = Memcached()
                self.addCleanup(b.stop)
                self.pools[name].append(b)
        self.pool_extra = pool_extra or {}
        self.front_extra = front_extra or {}
        self.routes = routes
        self.proxy = RoutedMcring(self.render, self.tmp, args=args)
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        self.port = self.proxy.port
        return self.proxy

    def render(self, port):
        text = "".join(pool_block(name, bs, self.pool_extra.get(name))
                       for name, bs in self.pools.items())
        text += "front:\n  listen: %s:%d\n" % (HOST, port)
        for k, v in self.front_extra.items():
            text += "  %s: %s\n" % (k, v)
        text += "  routes:\n" + "".join("    - %s\n" % r for r in self.routes)
        return text

    def reload(self, routes, how="sighup", front_extra=None):
        """Rewrites the config with these routes (and front keys), reloads by SIGHUP or POST
        /reload, and returns the reload record that applied it (or failed)."""
        with Conn(HOST, self.port) as c:
            before = len(parse_reloads(c.request(b"stats reloads\r\n")))
        self.routes = routes
        if front_extra is not None:
            self.front_extra = front_extra
        self.proxy.write_config(self.port)
        if how == "sighup":
            os.kill(self.proxy.pid, signal.SIGHUP)
        else:
            status, _ = admin_http(self.proxy.admin_port, "POST", "/reload")
            self.assertEqual(status, 200)

        def record():  # the watched file's reload may come first: the request's is unchanged
            with Conn(HOST, self.port) as c:
                recs = parse_reloads(c.request(b"stats reloads\r\n"))
            return next((r for r in recs[before:] if r["result"] != "unchanged"), None)
        rec = wait_until(record)
        self.assertTrue(rec, "no reload recorded")
        return rec

    def backend_name(self, backend):
        for name, bs in self.pools.items():
            for i, b in enumerate(bs):
                if b is backend:
                    return "%s[%d]" % (name, i)
        return "?"

    def all_backends(self):
        """Every memcached of the pools, once (two pools may share one)."""
        out = []
        for bs in self.pools.values():
            out += [b for b in bs if b not in out]
        return out

    def holders(self, keys):
        """{key: [backends holding it]} asked of every memcached directly."""
        out = {k: [] for k in keys}
        for b in self.all_backends():
            for k in b.get_many(keys):
                out[k].append(b)
        return out

    def stats(self, arg=b""):
        """The front's `stats [arg]`, parsed."""
        with Conn(HOST, self.port) as c:
            return parse_stats(c.request(b"stats" + (b" " + arg if arg else b"") + b"\r\n"))

    def backend_field(self, pool, field):
        """A pool's per-server counter from `stats backends`, summed over its servers."""
        st = self.stats(b"backends")
        return sum(int(v) for k, v in st.items()
                   if k.startswith(pool + ":") and k.endswith(":" + field))

    def route_stats(self):
        """{route name: {counter: value}} from `stats routes` on the front."""
        with Conn(HOST, self.port) as c:
            st = parse_stats(c.request(b"stats routes\r\n"))
        out = {}
        for name, v in st.items():
            m = re.match(r"route:front:(.*):([a-z_]+)$", name)
            self.assertTrue(m, name)
            out.setdefault(m.group(1), {})[m.group(2)] = v
        return out

    def counter(self, route, name):
        return int(self.route_stats()[route][name])

    def mcring_route(self, keys):
        """{key: (route, pool, server, shadow server or None)} from `mcring route`."""
        cp = run_mcring(["route", "-c", self.proxy.config_path, "--pool", "front"] +
                        [k.decode() for k in keys])
        self.assertEqual(cp.returncode, 0, cp.stderr)
        out = {}
        for line in cp.stdout.decode().splitlines():
            f = line.split("\t")
            shadow = f[4].split()[2] if len(f) > 4 and f[4].startswith("shadow ") else None
            out[f[0].encode()] = (f[1], f[2], f[3], shadow) if len(f) >= 4 else (f[1],)
        return out


STANDARD_POOLS = {"sessions": 1, "users": 2, "other": 2}
STANDARD_ROUTES = ['prefix: "sess:"\n      pool: sessions',
                   'prefix: "user:"\n      pool: users',
                   'default: other']


class PlacementTest(RoutesCase):

    def test_prefix_placement_on_the_servers(self):
        self.start(STANDARD_POOLS, STANDARD_ROUTES)
        expect = {}
        for k in spread_keys("sess:", 40) + [b"sess:", b"sess:user:1"]:
            expect[k] = "sessions"
        for k in spread_keys("user:", 60) + [b"user:", b"user:sess:1"]:
            expect[k] = "users"
        for k in spread_keys("misc", 60) + [b"sess", b"users:1", b"use", b"Sess:1", b"xsess:1"]:
            expect[k] = "other"
        keys = list(expect)
        with self.conn(self.port) as c:
            set_many_raw(c, [(k, b"v-" + k) for k in keys])
        held = self.holders(keys)
        wrong = []
        per_server = {}
        for k in keys:
            hs = held[k]
            per_server[self.backend_name(hs[0]) if hs else "none"] = \
                per_server.get(self.backend_name(hs[0]) if hs else "none", 0) + 1
            if len(hs) != 1 or hs[0] not in self.pools[expect[k]]:
                wrong.append((k, expect[k], [self.backend_name(b) for b in hs]))
            elif hs[0].get(k) != b"v-" + k:
                wrong.append((k, "value", hs[0].get(k)))
        print("\nkeys per server:", dict(sorted(per_server.items())))
        self.assertEqual(wrong, [], "keys on the wrong servers (key, expected pool, found on)")
        # Every server of the 5 got keys: placement within a pool follows its ring.
        self.assertEqual(sorted(per_server), sorted(self.backend_name(b)
                                                    for b in self.all_backends()))

        # `mcring route` says the same route, pool and server.
        said = self.mcring_route(keys)
        disagree = [(k, said.get(k), held[k][0].addr) for k in keys
                    if said.get(k) is None or said[k][1] != expect[k] or said[k][2] != held[k][0].addr]
        self.assertEqual(disagree, [], "mcring route disagrees with where the key was found")
        print("mcring route agrees for %d keys, e.g. %s -> %s" % (len(keys), keys[0].decode(),
                                                                   said[keys[0]]))
        st = self.route_stats()
        print("stats routes requests:", {r: st[r]["requests"] for r in st})
        self.assertEqual(int(st["sess:"]["requests"]), 42)
        self.assertEqual(int(st["user:"]["requests"]), 62)
        self.assertEqual(int(st["default"]["requests"]), 65)

    def test_longest_prefix_and_no_route(self):
        """No default: an unmatched key is `SERVER_ERROR no route for key`, its data block is
        consumed (even one that looks like commands) and the connection goes on."""
        self.start({"a": 1, "ab": 1}, ['prefix: "a:"\n      pool: a',
                                       'prefix: "a:b:"\n      pool: ab'])
        a, ab = self.pools["a"][0], self.pools["ab"][0]
        c = self.conn(self.port)
        self.assertEqual(c.request(set_cmd(b"a:1", b"one")), b"STORED\r\n")
        self.assertEqual(c.request(set_cmd(b"a:b:1", b"two")), b"STORED\r\n")
        self.assertEqual(c.request(set_cmd(b"a:bc", b"three")), b"STORED\r\n")
        self.assertEqual((a.get(b"a:1"), ab.get(b"a:1")), (b"one", None))
        self.assertEqual((a.get(b"a:b:1"), ab.get(b"a:b:1")), (None, b"two"))
        self.assertEqual((a.get(b"a:bc"), ab.get(b"a:bc")), (b"three", None))

        # A data block that would be two commands if it were read as lines.
        trap = b"get a:1\r\nset a:1 0 0 1\r\nX"
        replies = c.requests(b"set zzz 0 0 %d\r\n%s\r\n" % (len(trap), trap) + b"get a:1\r\n", 2)
        print("\nset without a route, then get:", replies)
        self.assertEqual(replies, [NO_ROUTE, b"VALUE a:1 0 3\r\none\r\nEND\r\n"])
        replies = c.requests(b"set zzz 0 0 3 noreply\r\nabc\r\n"
                             b"ms zzz 3 T0\r\nabc\r\n"
                             b"mg zzz v\r\n"
                             b"get zzz\r\n"
                             b"get a:1 zzz a:b:1\r\n"
                             b"touch zzz 10\r\n"
                             b"delete zzz\r\n"
                             b"incr zzz 1\r\n"
                             b"get a:b:1\r\n", 9)
        print("no-route replies:", replies)
        self.assertEqual(replies, [NO_ROUTE] * 8 + [b"VALUE a:b:1 0 3\r\ntwo\r\nEND\r\n"])
        self.assertEqual(c.request(b"version\r\n")[:8], b"VERSION ")
        self.assertTrue(c.alive())
        for b in (a, ab):
            self.assertIsNone(b.get(b"zzz"))


class MultigetTest(RoutesCase):

    def test_multiget_across_three_routes_five_servers_in_key_order(self):
        self.start(STANDARD_POOLS, STANDARD_ROUTES)
        rnd = random.Random(28)
        keys = spread_keys("sess:", 60) + spread_keys("user:", 60) + spread_keys("o", 60)
        rnd.shuffle(keys)
        stored = {k: b"val-%d-" % i + k for i, k in enumerate(keys) if rnd.random() < 0.6}
        flags = {k: rnd.randrange(0, 1 << 16) for k in stored}
        with self.conn(self.port) as c:
            for k, v in stored.items():
                c.send(set_cmd(k, v, flags=flags[k]))
            self.assertEqual(c.read_replies(len(stored), 10), [b"STORED\r\n"] * len(stored))
        held = self.holders(keys)
        servers = {self.backend_name(hs[0]) for k, hs in held.items() if hs}
        self.assertEqual(len(servers), 5, servers)
        # Some keys twice, as memcached answers a key as often as it is asked.
        asked = keys + [keys[3], keys[0], keys[3]]
        want = [(k, stored[k], flags[k]) for k in asked if k in stored]
        print("\n%d keys asked (%d hits, %d misses) over %d servers" % (
            len(asked), len(want), len(asked) - len(want), len(servers)))
        c = self.conn(self.port, timeout=10)
        for cmd in (b"get", b"gets", b"gat 0", b"gats 0"):
            got = parse_values(c.request(cmd + b" " + b" ".join(asked) + b"\r\n"))
            self.assertEqual([(k, v, f) for k, v, f, _cas in got], want, cmd)
            if cmd in (b"gets", b"gats 0"):
                self.assertTrue(all(cas is not None for *_x, cas in got), cmd)
        # Pipelined multi-gets, each its own order, and the cas of gets usable on its server.
        chunks = [asked[i::4] for i in range(4)]
        replies = c.requests(b"".join(b"get " + b" ".join(ch) + b"\r\n" for ch in chunks), 4)
        for ch, r in zip(chunks, replies):
            self.assertEqual([k for k, *_x in parse_values(r)], [k for k in ch if k in stored])
        k0 = next(k for k in asked if k in stored)
        cas = parse_values(c.request(b"gets " + k0 + b"\r\n"))[0][3]
        self.assertEqual(c.request(b"cas %s 0 0 1 %d\r\nz\r\n" % (k0, cas)), b"STORED\r\n")
        st = self.route_stats()
        print("stats routes requests:", {r: st[r]["requests"] for r in st})


class MaxTtlTest(RoutesCase):

    def test_max_ttl_caps_every_ttl_on_the_server(self):
        self.start({"capped": 1, "short": 1, "plain": 1},
                   ['prefix: "ttl:"\n      pool: capped\n      max_ttl: 60',
                    'prefix: "short:"\n      pool: short\n      max_ttl: 20',
                    'default: plain'])
        cap, short, plain = self.pools["capped"][0], self.pools["short"][0], self.pools["plain"][0]
        for b in (cap, short, plain):  # items stored directly, without a TTL
            with b.conn() as d:
                for k in (b"ttl:rep", b"ttl:cas", b"ttl:t", b"ttl:g", b"ttl:gs", b"ttl:mgt",
                          b"ttl:x", b"short:y", b"plain:z", b"ttl:app", b"plain:t", b"ttl:bg"):
                    self.assertEqual(d.request(set_cmd(k, b"old")), b"STORED\r\n")
        with cap.conn() as d:
            cas = parse_values(d.request(b"gets ttl:cas\r\n"))[0][3]
        now = int(time.time())
        c = self.conn(self.port)
        steps = [
            (b"set ttl:set 0 0 1\r\nv\r\n", b"STORED\r\n", cap, b"ttl:set", 60),
            (b"set ttl:long 0 100000 1\r\nv\r\n", b"STORED\r\n", cap, b"ttl:long", 60),
            (b"set ttl:abs 0 %d 1\r\nv\r\n" % (now + 40 * 86400), b"STORED\r\n", cap, b"ttl:abs", 60),
            (b"set ttl:30 0 30 1\r\nv\r\n", b"STORED\r\n", cap, b"ttl:30", 30),
            (b"add ttl:add 0 0 1\r\nv\r\n", b"STORED\r\n", cap, b"ttl:add", 60),
            (b"replace ttl:rep 0 0 1\r\nv\r\n", b"STORED\r\n", cap, b"ttl:rep", 60),
            (b"cas ttl:cas 0 0 1 %d\r\nv\r\n" % cas, b"STORED\r\n", cap, b"ttl:cas", 60),
            (b"append ttl:app 0 0 1\r\nv\r\n", b"STORED\r\n", None, None, None),
            (b"touch ttl:t 0\r\n", b"TOUCHED\r\n", cap, b"ttl:t", 60),
            (b"gat 0 ttl:g\r\n", b"VALUE ttl:g 0 3\r\nold\r\nEND\r\n", cap, b"ttl:g", 60),
            (b"gats 0 ttl:gs\r\n", None, cap, b"ttl:gs", 60),
            (b"ms ttl:ms 1\r\nv\r\n", b"HD\r\n", cap, b"ttl:ms", 60),
            (b"ms ttl:ms0 1 T0\r\nv\r\n", b"HD\r\n", cap, b"ttl:ms0", 60),
            (b"ms ttl:ms10 1 T10\r\nv\r\n", b"HD\r\n", cap, b"ttl:ms10", 10),
            (b"mg ttl:mgt T0 v\r\n", b"VA 3\r\nold\r\n", cap, b"ttl:mgt", 60),
            (b"ma ttl:ma N0 J5\r\n", b"HD\r\n", cap, b"ttl:ma", 60),
            (b"set short:s 0 0 1\r\nv\r\n", b"STORED\r\n", short, b"short:s", 20),
            # A gat across routes: the smallest cap of the routes it touches, for all its keys.
            (b"gat 0 ttl:x short:y plain:z\r\n", None, short, b"short:y", 20),
            (None, None, cap, b"ttl:x", 20),
            (None, None, plain, b"plain:z", 20),
            # The route without max_ttl leaves "never" alone.
            (b"set plain:a 0 0 1\r\nv\r\n", b"STORED\r\n", plain, b"plain:a", -1),
            (b"touch plain:t 0\r\n", b"TOUCHED\r\n", plain, b"plain:t", -1),
            (b"ms plain:ms 1\r\nv\r\n", b"HD\r\n", plain, b"plain:ms", -1),
        ]
        seen = []
        bad = []
        for req, want_reply, backend, key, limit in steps:
            if req is not None:
                r = c.request(req)
                if want_reply is not None and r != want_reply:
                    bad.append((req, "reply", r))
                elif want_reply is None and not r.startswith(b"VALUE "):
                    bad.append((req, "reply", r))
            if backend is None:
                continue
            t = remaining_ttl(backend, key)
            seen.append((key.decode(), t))
            ok = (t == -1) if limit == -1 else (t is not None and 0 < t <= limit)
            if not ok:
                bad.append((req, key, "ttl %r, want %s" % (t, "-1" if limit == -1 else
                                                           "in (0, %d]" % limit)))
        print("\nremaining TTL on the servers:", seen)
        self.assertEqual(bad, [])
        # What is not a TTL to cap: without N nothing is created; an expiry in the past stays
        # past; binary incr's exptime 0xffffffff means "do not create".
        self.assertEqual(c.request(b"ma ttl:none\r\n"), b"NF\r\n")
        self.assertEqual(c.request(b"ms ttl:neg 1 T-1\r\nv\r\n"), b"HD\r\n")
        self.assertEqual(c.request(b"set ttl:neg2 0 -1 1\r\nv\r\n"), b"STORED\r\n")
        with BinaryConn(self.port) as bc:
            self.assertEqual(bc.call(INCR, b"ttl:bi", extras=arith_extras(1, 5, 0xffffffff))[1],
                             1)  # key not found
            _op, status, *_x, value = bc.call(INCR, b"ttl:bi2", extras=arith_extras(1, 5, 0))
            self.assertEqual((status, value), (0, b"\0" * 7 + b"\x05"))
            self.assertEqual(bc.call(SET, b"ttl:bs", b"v", store_extras(0, 0))[1], 0)
            self.assertEqual(bc.call(GAT, b"ttl:bg", extras=touch_extras(0))[1], 0)
        for k in (b"ttl:none", b"ttl:neg", b"ttl:neg2", b"ttl:bi"):
            self.assertIsNone(remaining_ttl(cap, k), k)
        binary = [(k, remaining_ttl(cap, k)) for k in (b"ttl:bi2", b"ttl:bs", b"ttl:bg")]
        print("binary incr (creating), set and gat with exptime 0:", binary)
        self.assertTrue(all(t is not None and 0 < t <= 60 for _k, t in binary), binary)


class RateLimitTest(RoutesCase):

    def test_rate_limited_at_once_other_routes_unaffected(self):
        self.start({"limited": 1, "other": 1},
                   ['prefix: "rl:"\n      pool: limited\n'
                    '      rate_limit: { requests_per_second: 50, burst: 10 }',
                    'default: other'])
        stop = threading.Event()
        other = {"requests": 0, "errors": 0, "bad": []}

        def other_client():  # another route, at full speed, for the duration
            deadline = time.monotonic() + 20
            with Conn(HOST, self.port, timeout=10) as oc:
                n = 0
                while not stop.is_set() and time.monotonic() < deadline and n < 200:
                    batch = [b"o:%d:%d" % (n, i) for i in range(20)]
                    oc.send(b"".join(set_cmd(k, b"x") + b"get " + k + b"\r\n" for k in batch))
                    for i, r in enumerate(oc.read_replies(2 * len(batch))):
                        other["requests"] += 1
                        want = b"STORED\r\n" if i % 2 == 0 else \
                            b"VALUE %s 0 1\r\nx\r\nEND\r\n" % batch[i // 2]
                        if r != want:
                            other["errors"] += 1
                            other["bad"].append(r)
                    n += 1

        t = threading.Thread(target=other_client)
        t.start()
        try:
            c = self.conn(self.port)
            # A pipelined burst of 300.
            burst = 300
            replies = c.requests(b"".join(b"get rl:%d\r\n" % i for i in range(burst)), burst)
            served = replies.count(b"END\r\n")
            limited = replies.count(RATE_LIMITED)
            print("\npipelined burst of %d: %d served, %d rate limited" % (burst, served, limited))
            self.assertEqual(served + limited, burst, set(replies))
            self.assertGreaterEqual(served, 10)  # the burst
            self.assertGreater(limited, 200)
            # One at a time: each refusal's latency (the "at once": within 1 ms).
            lat_limited, lat_served = [], []
            for i in range(200):
                t0 = time.perf_counter()
                r = c.request(b"get rl:s%d\r\n" % i)
                dt = (time.perf_counter() - t0) * 1e3
                if r == RATE_LIMITED:
                    lat_limited.append(dt)
                else:
                    self.assertEqual(r, b"END\r\n")
                    lat_served.append(dt)
            print("one at a time: %d served (p50 %.3f ms), %d rate limited: p50 %.3f ms, "
                  "p99 %.3f ms, max %.3f ms" % (
                      len(lat_served), percentile(lat_served, 50), len(lat_limited),
                      percentile(lat_limited, 50), percentile(lat_limited, 99),
                      max(lat_limited or [float("nan")])))
            self.assertGreater(len(lat_limited), 0)
            # A refused set's data block is consumed, even with noreply (the error is sent):
            # a value that reads as a command would otherwise be answered too.
            extra_refused = 0
            for _ in range(50):
                r = c.request(b"set rl:d 0 0 9 noreply\r\nget other\r\n" + b"get o:d\r\n")
                if r == RATE_LIMITED:
                    extra_refused += 1
                    self.assertEqual(c.read_reply(), b"END\r\n")
                    break
                self.assertEqual(r, b"END\r\n")  # a token: stored quietly, then the get
            self.assertEqual(extra_refused, 1, "no refused set in 50 tries")
            self.assertEqual(c.silence(0.1), b"")
            # The bucket refills: a request is served again (polled, bounded).
            refilled = False
            for _ in range(500):
                r = c.request(b"get rl:again\r\n")
                if r == b"END\r\n":
                    refilled = True
                    break
                self.assertEqual(r, RATE_LIMITED)
                extra_refused += 1
                time.sleep(0.01)
            self.assertTrue(refilled, "the rate limit never let a request through again")
        finally:
            stop.set()
            t.join(30)
        self.assertFalse(t.is_alive())
        print("other route meanwhile: %d requests, %d errors" % (other["requests"],
                                                                 other["errors"]))
        self.assertGreater(other["requests"], 0)
        self.assertEqual(other["errors"], 0, other["bad"][:3])
        st = self.route_stats()
        print("stats routes:", {r: (st[r]["requests"], st[r]["rate_limited"]) for r in st})
        refused = limited + len(lat_limited) + extra_refused
        self.assertEqual(int(st["rl:"]["rate_limited"]), refused)
        self.assertEqual(int(st["default"]["rate_limited"]), 0)
        self.assertEqual(int(st["default"]["errors"]), 0)


SHADOW_ROUTES = ['prefix: "sess:"\n      pool: sessions\n'
                 '      shadow: { pool: sessions_v2, percent: 100 }',
                 'prefix: "half:"\n      pool: sessions\n'
                 '      shadow: { pool: sessions_v2, percent: 50 }',
                 'prefix: "wo:"\n      pool: sessions\n'
                 '      shadow: { pool: sessions_v2, writes_only: true }',
                 'default: other']


class ShadowTest(RoutesCase):

    def shadow_has(self, keys, value_of=lambda k: b"v-" + k):
        got = {}
        for b in self.pools["sessions_v2"]:
            got.update(b.get_many(keys))
        return all(got.get(k) == value_of(k) for k in keys)

    def test_writes_reach_the_shadow_pool(self):
        self.start({"sessions": 1, "sessions_v2": 2, "other": 1}, SHADOW_ROUTES)
        keys = spread_keys("sess:", 60)
        c = self.conn(self.port)
        set_many_raw(c, [(k, b"v-" + k) for k in keys])
        self.assertTrue(wait_until(lambda: self.shadow_has(keys)),
                        "the shadow pool did not get every write")
        # Each on the shadow server `mcring route` names, and on the primary.
        said = self.mcring_route(keys)
        held = self.holders(keys)
        for k in keys:
            names = sorted(self.backend_name(b) for b in held[k])
            self.assertEqual([b.addr for b in held[k] if b in self.pools["sessions_v2"]],
                             [said[k][3]], (k, names, said[k]))
            self.assertIn(self.pools["sessions"][0], held[k], (k, names))
        # Deletes, meta writes, and noreply writes are copied too; the client sees the primary.
        replies = c.requests(b"delete " + keys[0] + b"\r\n" +
                             b"ms " + keys[1] + b" 2 T0\r\nv2\r\n" +
                             b"set " + keys[2] + b" 0 0 2 noreply\r\nv3\r\n" +
                             b"ms " + keys[3] + b" 2 q\r\nv4\r\n" + b"mn\r\n", 3)
        self.assertEqual(replies, [b"DELETED\r\n", b"HD\r\n", b"MN\r\n"])
        expect = {keys[0]: None, keys[1]: b"v2", keys[2]: b"v3", keys[3]: b"v4"}
        self.assertTrue(wait_until(lambda: all(
            next((b.get(k) for b in self.pools["sessions_v2"] if b.get(k) is not None), None) == v
            for k, v in expect.items())), "the shadow pool missed a delete or meta/noreply write")
        # percent 50: a share of the keys, always the same ones.
        half = spread_keys("half:", 200)
        set_many_raw(c, [(k, b"v-" + k) for k in half])
        wait_until(lambda: self.counter("half:", "shadow_sent") >= 1)
        self.assertTrue(wait_until(lambda: self.counter("half:", "shadow_sent") ==
                                   sum(1 for hs in self.holders(half).values()
                                       if len(hs) == 2)))
        shadowed = {k for k, hs in self.holders(half).items() if len(hs) == 2}
        print("\npercent 50: %d of %d keys shadowed" % (len(shadowed), len(half)))
        self.assertTrue(40 <= len(shadowed) <= 160, len(shadowed))
        set_many_raw(c, [(k, b"w-" + k) for k in half])
        self.assertTrue(wait_until(lambda: self.counter("half:", "shadow_sent") ==
                                   2 * len(shadowed)))
        again = {k for k, hs in self.holders(half).items() if len(hs) == 2}
        self.assertEqual(again, shadowed)
        self.assertTrue(self.shadow_has(sorted(shadowed), lambda k: b"w-" + k))
        # writes_only: the writes are copied, the reads are not compared.
        wo = spread_keys("wo:", 20)
        set_many_raw(c, [(k, b"v-" + k) for k in wo])
        self.assertTrue(wait_until(lambda: self.shadow_has(wo)))
        for k in wo:
            self.assertEqual(c.request(b"get " + k + b"\r\n")[:6], b"VALUE ")
        st = self.route_stats()
        print("stats routes:", {r: {k: v for k, v in st[r].items() if k.startswith("shadow")}
                                for r in st})
        self.assertEqual(int(st["wo:"]["shadow_compared"]), 0)
        self.assertEqual(int(st["wo:"]["shadow_sent"]), len(wo))
        self.assertEqual(int(st["default"]["shadow_sent"]), 0)
        other_keys = spread_keys("o", 20)
        set_many_raw(c, [(k, b"v") for k in other_keys])
        for b in self.pools["sessions_v2"]:
            self.assertEqual(b.get_many(other_keys), {})

    def agreement_after_reads(self, c, keys, mg=False, multi=None):
        """Reads every key once (one-key reads, or multi-gets of `multi` keys, each with one
        key of another route added), waits for all to be compared; returns (compared, agreed)
        of this round."""
        before = self.route_stats()["sess:"]
        for i in range(0, len(keys), 50):
            chunk = keys[i:i + 50]
            if multi:
                gets = [b"get " + b" ".join(chunk[j:j + multi] + [b"other:%d" % j]) + b"\r\n"
                        for j in range(0, len(chunk), multi)]
                c.send(b"".join(gets))
                rs = c.read_replies(len(gets), 10)
                self.assertEqual(len(rs), len(gets))
                # every sess: key is on the primary pool; the other route's keys are not
                self.assertEqual(sum(r.count(b"VALUE ") for r in rs), len(chunk))
            elif mg:
                c.send(b"".join(b"mg " + k + b" v\r\n" for k in chunk))
                rs = c.read_replies(len(chunk), 10)
            else:
                c.send(b"".join(b"get " + k + b"\r\n" for k in chunk))
                rs = c.read_replies(len(chunk), 10)
            if not multi:
                self.assertEqual(len(rs), len(chunk))
            for r in rs:
                self.assertFalse(r.startswith((b"SERVER_ERROR", b"CLIENT_ERROR", b"ERROR")), r)
        want = int(before["shadow_compared"]) + len(keys)
        self.assertTrue(wait_until(lambda: int(self.route_stats()["sess:"]["shadow_compared"])
                                   >= want), "not every shadowed read was compared")
        after = self.route_stats()["sess:"]
        return (int(after["shadow_compared"]) - int(before["shadow_compared"]),
                int(after["shadow_agreed"]) - int(before["shadow_agreed"]))

    def test_shadow_agreement_rises_as_the_shadow_pool_warms(self):
        self.start({"sessions": 1, "sessions_v2": 2, "other": 1}, SHADOW_ROUTES)
        keys = spread_keys("sess:", 200)
        with self.pools["sessions"][0].conn() as d:  # the primary is full, the shadow empty
            set_many_raw(d, [(k, b"v-" + k) for k in keys])
        c = self.conn(self.port, timeout=10)
        figures = []

        def phase(label, mg=False):
            compared, agreed = self.agreement_after_reads(c, keys, mg)
            st = self.route_stats()["sess:"]
            figures.append((label, compared, agreed, agreed / compared, st["shadow_agreement"]))
            print("%-34s compared %d agreed %d: this round %.3f, stats routes shadow_agreement %s"
                  % (label, compared, agreed, agreed / compared, st["shadow_agreement"]))
            return agreed / compared

        print()
        self.assertLessEqual(phase("cold shadow (get):"), 0.02)
        # Half the keys reach the shadow through mcring's writes, a quarter of those stale.
        half = keys[:100]
        set_many_raw(c, [(k, b"v-" + k) for k in half])
        self.assertTrue(wait_until(lambda: self.shadow_has(half)))
        stale = half[:25]
        for k in stale:  # written on the shadow pool directly with another value
            for b in self.pools["sessions_v2"]:
                if b.get(k) is not None:
                    with b.conn() as d:
                        self.assertEqual(d.request(set_cmd(k, b"stale")), b"STORED\r\n")
        r = phase("half warm, 25 stale (mg v):", mg=True)
        self.assertAlmostEqual(r, 75 / 200, delta=0.02)
        # The rest through mcring: the shadow pool holds every key with the primary's value.
        set_many_raw(c, [(k, b"v-" + k) for k in keys])
        self.assertTrue(wait_until(lambda: self.shadow_has(keys)))
        self.assertGreaterEqual(phase("warm shadow (get):"), 0.98)
        st = self.route_stats()["sess:"]
        status, body = admin_http(self.proxy.admin_port, "GET", "/routes")
        self.assertEqual(status, 200)
        route = [r for l in json.loads(body)["listeners"] if l["name"] == "front"
                 for r in l["routes"] if r["route"] == "sess:"][0]
        status, metrics = admin_http(self.proxy.admin_port, "GET", "/metrics")
        m = re.search(rb'^mcring_route_shadow_agreement\{listener="front",route="sess:"\} (\S+)$',
                      metrics, re.M)
        print("cumulative: stats routes %s, /routes %s (counters %s), /metrics %s" % (
            st["shadow_agreement"], route["shadow_agreement"],
            {k: v for k, v in route["counters"].items() if k.startswith("shadow")},
            m.group(1).decode() if m else None))
        self.assertTrue(m)
        total = 3 * len(keys)
        agreed = sum(f[2] for f in figures)
        self.assertEqual(route["counters"]["shadow_compared"], total)
        self.assertEqual(route["counters"]["shadow_agreed"], agreed)
        self.assertAlmostEqual(float(m.group(1)), agreed / total, places=4)
        self.assertAlmostEqual(float(st["shadow_agreement"]), agreed / total, places=3)

    def test_shadow_agreement_of_multigets_by_hit_or_miss(self):
        """Multi-gets (10 sess: keys and one key of another route each) are compared key by
        key, by hit or miss: a stale value on the shadow still agrees there, unlike a one-key
        read's comparison, which also compares the value's digest."""
        self.start({"sessions": 1, "sessions_v2": 2, "other": 1}, SHADOW_ROUTES)
        keys = spread_keys("sess:", 200)
        with self.pools["sessions"][0].conn() as d:
            set_many_raw(d, [(k, b"v-" + k) for k in keys])
        c = self.conn(self.port, timeout=10)
        print()
        compared, agreed = self.agreement_after_reads(c, keys, multi=10)
        print("cold shadow, 10-key gets: compared %d agreed %d" % (compared, agreed))
        self.assertEqual(compared, len(keys))
        self.assertLessEqual(agreed, 4)
        half = keys[:100]
        set_many_raw(c, [(k, b"v-" + k) for k in half])
        self.assertTrue(wait_until(lambda: self.shadow_has(half)))
        for k in half[:25]:  # stale on the shadow: still a hit there
            for b in self.pools["sessions_v2"]:
                if b.get(k) is not None:
                    with b.conn() as d:
                        self.assertEqual(d.request(set_cmd(k, b"stale")), b"STORED\r\n")
        compared, agreed = self.agreement_after_reads(c, keys, multi=10)
        print("half warm (25 stale), 10-key gets: compared %d agreed %d" % (compared, agreed))
        self.assertEqual(compared, len(keys))
        self.assertAlmostEqual(agreed / compared, 100 / 200, delta=0.02)
        set_many_raw(c, [(k, b"v-" + k) for k in keys])
        self.assertTrue(wait_until(lambda: self.shadow_has(keys)))
        compared, agreed = self.agreement_after_reads(c, keys, multi=10)
        print("warm shadow, 10-key gets: compared %d agreed %d" % (compared, agreed))
        self.assertEqual(agreed, compared)
        self.assertEqual(int(self.route_stats()["default"]["shadow_compared"]), 0)

    def test_frozen_shadow_pool_costs_clients_nothing(self):
        """The same load at once on two routes to the same primary pool, one shadowed ("sess:")
        and one not ("plain:"): with the shadow pool live for 2 s, then its memcached stopped
        for 5 s (its copies then fill the bounded queue and are dropped)."""
        self.start({"sessions": 1, "sessions_v2": 1, "other": 1},
                   SHADOW_ROUTES[:1] + ['prefix: "plain:"\n      pool: sessions', 'default: other'])
        shadow = self.pools["sessions_v2"][0]
        self.addCleanup(shadow.resume)  # SIGCONT whatever happens
        big = b"B" * 16384
        keyset = {p: spread_keys(p, 500) for p in (b"sess:", b"plain:")}
        with self.conn(self.port) as c:
            for keys in keyset.values():
                set_many_raw(c, [(k, b"v-" + k) for k in keys])

        def load(prefix, seconds, lat, errs, stop, seed):
            """One request at a time (set or get of a key), latencies in ms."""
            keys = keyset[prefix]
            rnd = random.Random(seed)
            deadline = time.monotonic() + seconds
            with Conn(HOST, self.port, timeout=10) as lc:
                for _ in range(200000):
                    if stop.is_set() or time.monotonic() >= deadline:
                        break
                    k = rnd.choice(keys)
                    if rnd.random() < 0.5:
                        req, want = set_cmd(k, b"v-" + k), b"STORED\r\n"
                    else:
                        req, want = b"get " + k + b"\r\n", b"VALUE %s 0 %d\r\nv-%s\r\nEND\r\n" % (
                            k, len(k) + 2, k)
                    t0 = time.perf_counter()
                    r = lc.request(req)
                    lat.append((time.perf_counter() - t0) * 1e3)
                    if r != want:
                        errs.append(r)

        def pressure(prefix, seconds, errs, stop, batches):
            """Pipelined 16 KiB writes, 100 batches of 32 a second (52 MB/s) for the whole run,
            alike in every phase: enough to fill any unbounded shadow queue within the freeze."""
            start = time.monotonic()
            with Conn(HOST, self.port, timeout=10) as pc:
                for n in range(int(seconds * 100)):
                    if stop.is_set() or time.monotonic() >= start + seconds:
                        break
                    ahead = start + n / 100.0 - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)  # the pace, not a wait for an event
                    t0 = time.perf_counter()
                    pc.send(b"".join(set_cmd(b"%sbig%d" % (prefix, i), big) for i in range(32)))
                    for r in pc.read_replies(32):
                        if r != b"STORED\r\n":
                            errs.append(r)
                    batches.append((time.perf_counter() - t0) * 1e3)

        def run(seconds, during=None):
            """A reader-writer on each route at once (so both see the same host), and the
            pressure on the shadowed route."""
            lat = {b"plain:": [], b"sess:": []}
            errs, stop, batches = [], threading.Event(), []
            ts = [threading.Thread(target=load, args=(p, seconds, lat[p], errs, stop, i))
                  for i, p in enumerate(lat)]
            ts.append(threading.Thread(target=pressure,
                                       args=(b"sess:", seconds, errs, stop, batches)))
            for t in ts:
                t.start()
            try:
                if during:
                    during()
            finally:
                for t in ts:
                    t.join(seconds + 30)
            self.assertFalse(any(t.is_alive() for t in ts))
            return lat, errs, batches

        runs = {"live shadow, 2 s": run(2.0)}
        sent0 = self.counter("sess:", "shadow_sent")
        dropped0 = self.counter("sess:", "shadow_dropped")
        rss0 = proc_rss_kb(self.proxy.pid)
        rss_max = [rss0]
        dropped_seen = []

        def frozen():
            shadow.pause()
            try:
                start = time.monotonic()
                while time.monotonic() < start + 5.0:
                    rss_max[0] = max(rss_max[0], proc_rss_kb(self.proxy.pid))
                    if not dropped_seen and self.counter("sess:", "shadow_dropped") > dropped0:
                        dropped_seen.append(time.monotonic() - start)
                    time.sleep(0.1)
            finally:
                shadow.resume()

        runs["frozen shadow, 5 s"] = run(5.0, frozen)
        st = self.route_stats()["sess:"]
        print()
        for label, (lat, errs, batches) in runs.items():
            p99 = {p: percentile(v, 99) for p, v in lat.items()}
            print("%s: %d errors; sess: (shadowed) %d requests p50 %.3f ms p99 %.3f ms; plain: "
                  "(same pool, no shadow) %d requests p50 %.3f ms p99 %.3f ms; p99 ratio "
                  "sess:/plain: %.2f; pipelined 32 x 16 KiB sets on sess:: %d batches, p50 %.2f "
                  "ms, max %.2f ms" % (
                      label, len(errs), len(lat[b"sess:"]), percentile(lat[b"sess:"], 50),
                      p99[b"sess:"], len(lat[b"plain:"]), percentile(lat[b"plain:"], 50),
                      p99[b"plain:"], p99[b"sess:"] / p99[b"plain:"], len(batches),
                      percentile(batches, 50), max(batches or [float("nan")])))
        print("RSS %d KiB before the freeze, %d KiB max during it; shadow_sent %d (%d before), "
              "shadow_dropped %s (%d before; first drop %.2f s into the freeze)" % (
                  rss0, rss_max[0], int(st["shadow_sent"]), sent0, st["shadow_dropped"], dropped0,
                  dropped_seen[0] if dropped_seen else -1))
        for label, (lat, errs, batches) in runs.items():
            self.assertEqual(errs[:3], [], label)
            for p, v in lat.items():
                self.assertGreater(len(v), 100, (label, p))
        self.assertGreater(int(st["shadow_dropped"]), dropped0)
        if not SANITIZED:
            self.assertLess(rss_max[0] - rss0, 64 * 1024, "mcring's RSS grew with a frozen shadow")
        # Thawed, the shadow gets copies again.
        k = b"sess:after-thaw"
        c = self.conn(self.port)
        self.assertTrue(wait_until(lambda: c.request(set_cmd(k, b"v-" + k)) == b"STORED\r\n" and
                                   self.shadow_has([k]), 15, 0.1),
                        "the thawed shadow pool gets no copies")


class ReloadMoveTest(RoutesCase):

    @staticmethod
    def moved(pool):
        """mv: to `pool`; the other routes keep both pools routed to either way."""
        return ['prefix: "mv:"\n      pool: %s' % pool, 'prefix: "a:"\n      pool: old',
                'prefix: "b:"\n      pool: new', 'default: other']

    def test_reload_moves_a_prefix_under_load(self):
        self.start({"old": 1, "new": 1, "other": 1}, self.moved("old"))
        old, new = self.pools["old"][0], self.pools["new"][0]
        keys = spread_keys("mv:", 300)
        with self.conn(self.port) as c:
            set_many_raw(c, [(k, b"v") for k in keys])
        self.assertEqual(len(old.get_many(keys)), len(keys))
        with cache_aside_load_running(self.port, keys, 28) as counts:
            self.assertTrue(wait_until(lambda: counts["gets"] >= 500))
            rec = self.reload(self.moved("new"), "sighup")
            print("\nreload:", rec)
            self.assertEqual(rec["result"], "applied", rec)
            self.assertIn("route 'mv:' pool old->new", rec.get("diff", ""))
            at_reload = dict(counts)
            self.assertTrue(wait_until(lambda: counts["gets"] >= at_reload["gets"] + 1500),
                            "the load stalled after the reload")
            # The misses after the move were set again by the load: now on the new pool.
            self.assertTrue(wait_until(lambda: len(new.get_many(keys)) > 100))
            rec2 = self.reload(self.moved("old"), "post")
            print("reload back:", rec2)
            self.assertEqual(rec2["result"], "applied", rec2)
            at_back = dict(counts)
            self.assertTrue(wait_until(lambda: counts["gets"] >= at_back["gets"] + 1500))
        print("load: %d gets, %d hits, %d errors (%d gets before the first reload, %d before "
              "the second)" % (counts["gets"], counts["hits"], counts["errors"],
                              at_reload["gets"], at_back["gets"]))
        self.assertEqual(counts["errors"], 0)
        # Moved once more, new writes land on the new pool's server only.
        rec3 = self.reload(self.moved("new"), "sighup")
        self.assertEqual(rec3["result"], "applied", rec3)
        fresh = spread_keys("mv:fresh", 50)
        with self.conn(self.port) as c:
            set_many_raw(c, [(k, b"f") for k in fresh])
        self.assertEqual(len(new.get_many(fresh)), len(fresh))
        self.assertEqual(old.get_many(fresh), {})
        self.assertEqual(self.pools["other"][0].get_many(fresh), {})


    def test_route_reloads_under_multiget_load(self):
        """Reloads that move prefixes between pools, add and remove routes, shadows, TTL caps
        and rate limits, each awaited, while two clients pipeline sets, multi-gets across
        routes and mg: every reply well framed, in key order, with the key's own value."""
        configs = [
            ['prefix: "sess:"\n      pool: sessions\n      shadow: { pool: v2 }',
             'prefix: "user:"\n      pool: users\n      max_ttl: 100', 'default: other'],
            ['prefix: "sess:"\n      pool: v2\n      shadow: { pool: sessions }',
             'prefix: "user:"\n      pool: other\n'
             '      rate_limit: { requests_per_second: 100000, burst: 1000 }',
             'prefix: "u:"\n      pool: users', 'default: users'],
            ['prefix: "sess:"\n      pool: sessions',
             'prefix: "user:"\n      pool: users\n      shadow: { pool: v2, percent: 30 }',
             'prefix: "v:"\n      pool: v2', 'default: other'],
        ]
        self.start({"sessions": 1, "v2": 1, "users": 2, "other": 2}, configs[0])
        keys = spread_keys("sess:", 100) + spread_keys("user:", 100) + spread_keys("o", 100)
        stop = threading.Event()
        res = {"rounds": 0, "hits": 0, "bad": []}

        def load(seed):
            rnd = random.Random(seed)
            deadline = time.monotonic() + 30
            with Conn(HOST, self.port, timeout=10) as c:
                for _ in range(100000):
                    if stop.is_set() or time.monotonic() > deadline:
                        break
                    ks = rnd.sample(keys, 20)
                    sets = rnd.sample(keys, 5)
                    c.send(b"".join(set_cmd(k, b"v-" + k) for k in sets) +
                           b"get " + b" ".join(ks) + b"\r\n" + b"mg " + ks[0] + b" v k\r\n")
                    rs = c.read_replies(7, 10)
                    res["rounds"] += 1
                    if len(rs) != 7 or rs[:5] != [b"STORED\r\n"] * 5:
                        res["bad"].append(rs[:6])
                        continue
                    try:
                        vals = parse_values(rs[5])
                    except AssertionError as e:
                        res["bad"].append(str(e))
                        continue
                    res["hits"] += len(vals)
                    got = [v[0] for v in vals]
                    if got != [k for k in ks if k in set(got)] or \
                            any(v[1] != b"v-" + v[0] for v in vals):
                        res["bad"].append(("order or value", vals[:3]))
                    k = ks[0]
                    if rs[6] not in (b"EN k%s\r\n" % k,
                                     b"VA %d k%s\r\nv-%s\r\n" % (len(k) + 2, k, k)):
                        res["bad"].append(("mg", rs[6]))

        ts = [threading.Thread(target=load, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        records = []
        try:
            for i in range(12):
                records.append(self.reload(configs[(i + 1) % 3], "sighup" if i % 2 else "post"))
                rounds = res["rounds"]
                self.assertTrue(wait_until(lambda: res["rounds"] >= rounds + 20),
                                "the load stalled after reload %d" % (i + 1))
        finally:
            stop.set()
            for t in ts:
                t.join(30)
        self.assertFalse(any(t.is_alive() for t in ts))
        print("\n%d reloads (%s), %d rounds of 5 sets + a 20-key get across routes + mg, "
              "%d hits, %d bad replies" % (len(records), sorted({r["result"] for r in records}),
                                           res["rounds"], res["hits"], len(res["bad"])))
        print("e.g.", records[0]["diff"])
        self.assertEqual({r["result"] for r in records}, {"applied"})
        self.assertEqual(res["bad"][:5], [])
        self.assertIsNone(self.proxy.proc.poll())


class ClientsTest(RoutesCase):

    def test_pymemcache_and_pylibmc_binary_across_routes(self):
        self.start(STANDARD_POOLS,
                   ['prefix: "sess:"\n      pool: sessions\n      max_ttl: 60',
                    'prefix: "user:"\n      pool: users', 'default: other'])
        from pymemcache.client.base import Client
        keys = [k.decode() for k in (spread_keys("sess:", 30) + spread_keys("user:", 30) +
                                     spread_keys("o", 30))]
        random.Random(8).shuffle(keys)
        data = {k: ("v-" + k).encode() for k in keys[:60]}
        pm = Client((HOST, self.port), connect_timeout=5, timeout=5)
        self.addCleanup(pm.close)
        self.assertEqual(pm.set_many(data, noreply=False), [])
        got = pm.get_many(keys)
        self.assertEqual(got, {k.encode() if isinstance(next(iter(got), ""), bytes) else k: v
                               for k, v in data.items()})
        print("\npymemcache get_many of %d keys over 3 routes: %d values" % (len(keys), len(got)))
        held = self.holders([k.encode() for k in data])
        self.assertTrue(all(len(hs) == 1 for hs in held.values()))
        try:
            import pylibmc
        except ImportError:
            self.skipTest("pylibmc is not installed")
        lm = pylibmc.Client(["%s:%d" % (HOST, self.port)], binary=True,
                            behaviors={"connect_timeout": 3000, "receive_timeout": 3000000,
                                       "send_timeout": 3000000})
        bdata = {k: ("b-" + k).encode() for k in keys[30:]}
        self.assertEqual(lm.set_multi(bdata), [])
        bgot = lm.get_multi(keys)
        want = {k: data[k] for k in keys[:30] if k in data}
        want.update(bdata)
        self.assertEqual(bgot, want)
        self.assertEqual(lm.get(keys[40]), bdata[keys[40]])
        print("pylibmc (binary) get_multi of %d keys: %d values" % (len(keys), len(bgot)))
        held = self.holders([k.encode() for k in bdata])
        self.assertTrue(all(len(hs) == 1 for hs in held.values()))
        # A binary set with no expiry through the max_ttl route is capped on the server.
        sess = next(k for k in keys if k.startswith("sess:"))
        self.assertTrue(lm.set(sess, b"bin", time=0))
        t = remaining_ttl(self.pools["sessions"][0], sess.encode())
        print("binary set with time=0 on the max_ttl 60 route: TTL on the server %s" % t)
        self.assertTrue(t is not None and 0 < t <= 60, t)
        self.assertTrue(lm.touch(sess, 0))
        t = remaining_ttl(self.pools["sessions"][0], sess.encode())
        self.assertTrue(t is not None and 0 < t <= 60, t)


class KeylessTest(RoutesCase):

    def test_flush_all_and_keyless_views(self):
        """flush_all is refused as on any listener without allow_flush_all; with it (by
        reload), it reaches every pool of the routes. Keyless views are merged over every
        pool of the routes (KeylessViewsTest)."""
        self.start(STANDARD_POOLS, STANDARD_ROUTES)
        keys = spread_keys("sess:", 20) + spread_keys("user:", 20) + spread_keys("o", 20)
        c = self.conn(self.port)
        set_many_raw(c, [(k, b"v") for k in keys])
        self.assertEqual(sum(len(hs) for hs in self.holders(keys).values()), len(keys))
        items = parse_stats(c.request(b"stats items\r\n"))
        in_default = sum(int(b.stats()["curr_items"]) for b in self.pools["other"])
        print("\nstats items through the front: items:1:number %s; the default pool holds %d "
              "of %d" % (items.get("items:1:number"), in_default, len(keys)))
        self.assertEqual(int(items["items:1:number"]), len(keys))
        self.assertEqual(c.request(b"version\r\n")[:8], b"VERSION ")
        self.assertEqual(c.request(b"flush_all\r\n"), b"CLIENT_ERROR flush_all not allowed\r\n")
        self.assertEqual(sum(len(hs) for hs in self.holders(keys).values()), len(keys))
        rec = self.reload(STANDARD_ROUTES, front_extra={"allow_flush_all": "true"})
        self.assertEqual(rec["result"], "applied", rec)
        self.assertEqual(c.request(b"flush_all\r\n"), b"OK\r\n")
        left = {self.backend_name(b): len(b.get_many(keys)) for b in self.all_backends()}
        print("after flush_all, keys left per server:", left)
        self.assertEqual(sum(left.values()), 0)
        self.assertTrue(c.alive())
        # The console's what-if plans a pool's server list: a routed listener has none.
        status, body = admin_http(self.proxy.admin_port, "POST", "/whatif/front")
        self.assertEqual(status, 400, body)
        self.assertIn(b"has routes and no servers", body)
        status, body = admin_http(self.proxy.admin_port, "POST", "/whatif/other")
        self.assertNotIn(b"has routes", body)  # a pool it routes to is planned as any pool


def server_view(backend, args):
    with backend.conn() as c:
        return parse_stats(c.request(b"stats%s\r\n" % ((b" " + args) if args else b"")))


class KeylessViewsTest(RoutesCase):

    def test_stats_views_merge_every_serving_pool_each_server_once(self):
        """A routed listener's memcached views (`stats`, `stats items`, `stats slabs`) are merged
        over the servers of every pool its routes serve from, each server once though two pools
        name it; a shadow pool (which serves no client) is left out."""
        servers = [Memcached() for _ in range(6)]
        for s in servers:
            self.addCleanup(s.stop)
        s0, s1, s2, s3, s4, s5 = servers
        self.start({"sessions": [s0, s1], "users": [s1, s2], "other": [s3, s4],
                    "mirror": [s5]},
                   ['prefix: "sess:"\n      pool: sessions\n'
                    '      shadow: { pool: mirror, percent: 100, writes_only: true }',
                    'prefix: "user:"\n      pool: users',
                    'default: other'])
        serving = [s0, s1, s2, s3, s4]
        sess = spread_keys("sess:", 60)
        c = self.conn(self.port)
        # Sessions' values are large: their slab class holds nothing of the default pool's.
        set_many_raw(c, [(k, b"s" * 3000) for k in sess])
        set_many_raw(c, [(k, b"u" * 10) for k in spread_keys("user:", 40)])
        set_many_raw(c, [(k, b"o" * 10) for k in spread_keys("o", 40)])
        # The shadow copies are sent after the client's replies: await them on the mirror.
        self.assertTrue(wait_until(lambda: int(s5.stats()["curr_items"]) == len(sess)),
                        "the shadow pool did not get its copies")
        direct = [s.stats() for s in serving]
        want_curr = sum(int(d["curr_items"]) for d in direct)
        want_total = sum(int(d["total_items"]) for d in direct)
        want_items, want_chunks = {}, {}
        for s in serving:
            for name, v in server_view(s, b"items").items():
                if name.endswith(":number"):
                    want_items[name] = want_items.get(name, 0) + int(v)
            for name, v in server_view(s, b"slabs").items():
                if name.endswith(":used_chunks"):
                    want_chunks[name] = want_chunks.get(name, 0) + int(v)
        default_only = set()
        for s in self.pools["other"]:
            default_only |= {n for n in server_view(s, b"items") if n.endswith(":number")}
        routed_only = sorted(set(want_items) - default_only)
        got = parse_stats(c.request(b"stats\r\n"))
        items = parse_stats(c.request(b"stats items\r\n"))
        slabs = parse_stats(c.request(b"stats slabs\r\n"))
        print("\nthrough the front: curr_items %s total_items %s; the 5 serving servers "
              "directly: %d %d (the shared server counted once; the shadow pool's %s left out)"
              % (got.get("curr_items"), got.get("total_items"), want_curr, want_total,
                 s5.stats()["curr_items"]))
        print("stats items through the front:", {n: items.get(n) for n in sorted(want_items)},
              "directly:", want_items, "classes only outside the default pool:", routed_only)
        self.assertEqual(want_curr, 140)  # each key on one serving server
        self.assertEqual(int(got["curr_items"]), want_curr)
        self.assertEqual(int(got["total_items"]), want_total)
        self.assertTrue(routed_only, "the sessions' class is in the default pool too")
        for name, n in want_items.items():
            self.assertEqual(int(items.get(name, -1)), n, name)
        for name, n in want_chunks.items():
            self.assertEqual(int(slabs.get(name, -1)), n, name)
        self.assertEqual(c.request(b"version\r\n")[:8], b"VERSION ")

    def test_metadump_lists_every_serving_pool_and_a_frozen_pool_is_left_out(self):
        """`lru_crawler metadump all` through the front lists the keys of every serving pool,
        each once though two pools share a server; with a non-default pool's server frozen,
        `stats` still answers (by its deadline) without it, and counts it as failed."""
        servers = [Memcached() for _ in range(4)]
        for s in servers:
            self.addCleanup(s.stop)
        s0, s1, s2, s3 = servers
        self.start({"sessions": [s0, s1], "users": [s1, s2], "other": [s3]},
                   ['prefix: "sess:"\n      pool: sessions', 'prefix: "user:"\n      pool: users',
                    'default: other'], front_extra={"allow_dump": "true"},
                   pool_extra={"users": {"timeout": 300}})
        keys = spread_keys("sess:", 30) + spread_keys("user:", 30) + spread_keys("o", 30)
        c = self.conn(self.port)
        set_many_raw(c, [(k, b"v") for k in keys])
        c.send(b"lru_crawler metadump all\r\n")
        reply = c.recv_until(lambda b: b.endswith(b"END\r\n") or (
            b.endswith(b"\r\n") and not b.startswith(b"key=")), timeout=DEADLINE_S)
        self.assertTrue(reply.endswith(b"END\r\n"), reply[-200:])
        dumped = [urllib.parse.unquote_to_bytes(ln[4:ln.index(b" ")])
                  for ln in reply[:-5].split(b"\n")[:-1]]
        print("\nmetadump through the front: %d keys (%d distinct) of %d set, over 4 servers "
              "(one in two pools)" % (len(dumped), len(set(dumped)), len(keys)))
        self.assertEqual(sorted(dumped), sorted(keys))
        s2.pause()
        self.addCleanup(s2.resume)
        held = sum(int(s.stats()["curr_items"]) for s in (s0, s1, s3))
        st = parse_stats(c.request(b"stats\r\n", timeout=DEADLINE_S))
        print("with users' %s frozen: stats curr_items %s (the 3 others hold %d), servers "
              "answered %s, failed %s" % (s2.addr, st.get("curr_items"), held,
                                          st.get("mcring_stats_servers"),
                                          st.get("mcring_stats_servers_failed")))
        self.assertEqual(int(st["curr_items"]), held)
        self.assertEqual(st["mcring_stats_servers"], "3")
        self.assertEqual(st["mcring_stats_servers_failed"], "1")
        self.assertTrue(c.alive())


def value_reply(key, value, flags=0):
    return b"VALUE %s %d %d\r\n%s\r\nEND\r\n" % (key, flags, len(value), value)


class FailoverTest(RoutesCase):

    FAILOVER_ROUTES = ['prefix: "f:"\n      pool: primary\n      failover: [second, third]',
                       'prefix: "m:"\n      pool: primary\n      failover: [second]\n'
                       '      failover_on_miss: true',
                       'default: third']

    def test_failover_order_under_load(self):
        """Writes and reads of a failover route keep working while its pool is killed: the
        second pool serves them; with the second frozen too (its requests time out), the third
        does. No client error throughout; the failovers are counted."""
        self.start({"primary": 1, "second": 1, "third": 1}, self.FAILOVER_ROUTES,
                   pool_extra={"primary": {"timeout": 300}, "second": {"timeout": 300}})
        primary, second, third = (self.pools[n][0] for n in ("primary", "second", "third"))
        c = self.conn(self.port)
        keys = spread_keys("f:", 50)
        set_many_raw(c, [(k, b"one") for k in keys])
        self.assertEqual(len(primary.get_many(keys)), len(keys))
        primary.kill()
        errors = 0
        for i, k in enumerate(keys):
            errors += c.request(set_cmd(k, b"two")) != b"STORED\r\n"
            errors += c.request(b"get " + k + b"\r\n") != value_reply(k, b"two")
        print("\nprimary killed: %d errors in %d writes and reads; %d keys on the second pool"
              % (errors, 2 * len(keys), len(second.get_many(keys))))
        self.assertEqual(errors, 0)
        self.assertEqual(len(second.get_many(keys)), len(keys))
        self.assertEqual(len(third.get_many(keys)), 0)  # in order: the third was not needed
        second.pause()
        try:
            t0 = time.monotonic()
            for k in keys[:10]:
                errors += c.request(set_cmd(k, b"three")) != b"STORED\r\n"
            print("second frozen: 10 sets in %.2f s, %d errors; %d on the third pool"
                  % (time.monotonic() - t0, errors, len(third.get_many(keys[:10]))))
            self.assertEqual(errors, 0)
            self.assertEqual(len(third.get_many(keys[:10])), 10)
        finally:
            second.resume()
        failovers = self.counter("f:", "failovers")
        print("f: failovers counted:", failovers)
        self.assertGreaterEqual(failovers, 2 * len(keys) + 10)
        self.assertEqual(self.counter("f:", "errors"), 0)

    def test_failover_on_miss(self):
        """A miss in the primary asks the second pool (its value is answered); a hit does not."""
        self.start({"primary": 1, "second": 1, "third": 1}, self.FAILOVER_ROUTES)
        primary, second = self.pools["primary"][0], self.pools["second"][0]
        keys = spread_keys("m:", 20)
        with second.conn() as s2, primary.conn() as p1:
            set_many_raw(s2, [(k, b"from-second") for k in keys[:10]] +
                         [(k, b"not-this") for k in keys[10:]])
            set_many_raw(p1, [(k, b"from-primary") for k in keys[10:]])
        c = self.conn(self.port)
        self.assertEqual(c.request(b"get " + keys[0] + b"\r\n"), value_reply(keys[0], b"from-second"))
        for k in keys[:10]:
            self.assertEqual(c.request(b"mg " + k + b" v\r\n"), b"VA 11\r\nfrom-second\r\n")
        for k in keys[10:]:
            self.assertEqual(c.request(b"get " + k + b"\r\n"), value_reply(k, b"from-primary"))
        self.assertEqual(c.request(b"get m:none\r\n"), b"END\r\n")  # both miss
        print("\nm: failovers counted:", self.counter("m:", "failovers"))
        self.assertEqual(self.counter("m:", "failovers"), 12)

    def test_multiget_keys_fail_over_by_route(self):
        """Multi-gets across routes with the primary pool killed, then the second frozen: each
        f: key is served by its route's next pool, m: keys missing in the primary come from the
        second (failover_on_miss), the default route's keys from the third pool; every reply
        whole and in the client's key order."""
        self.start({"primary": 1, "second": 1, "third": 1}, self.FAILOVER_ROUTES,
                   pool_extra={"primary": {"timeout": 300}, "second": {"timeout": 300}})
        primary, second, third = (self.pools[n][0] for n in ("primary", "second", "third"))
        fkeys = spread_keys("f:", 40)
        mkeys = spread_keys("m:", 40)
        dkeys = spread_keys("d", 40)
        with second.conn() as s2, third.conn() as t3, primary.conn() as p1:
            set_many_raw(s2, [(k, b"s-" + k) for k in fkeys + mkeys])
            set_many_raw(t3, [(k, b"t-" + k) for k in fkeys + dkeys])
            set_many_raw(p1, [(k, b"p-" + k) for k in mkeys[:20]])
        c = self.conn(self.port, timeout=10)

        def multigets(want_of):
            """10 gets of 12 keys (4 of each family, interleaved); returns the errors."""
            errors = 0
            for j in range(0, 40, 4):
                ks = [k for t in zip(fkeys[j:j + 4], mkeys[j:j + 4], dkeys[j:j + 4]) for k in t]
                want = b"".join(value_reply(k, want_of(k))[:-5] for k in ks
                                if want_of(k) is not None) + b"END\r\n"
                errors += c.request(b"get " + b" ".join(ks) + b"\r\n") != want
            return errors

        # Primary up: the m: keys it has come from it, the ones it misses from the second; f:
        # keys miss there (no failover on a miss for f:).
        def primary_up(k):
            if k.startswith(b"m:"):
                return b"p-" + k if k in mkeys[:20] else b"s-" + k
            return b"t-" + k if k.startswith(b"d") else None
        self.assertEqual(multigets(primary_up), 0)
        primary.kill()
        errors = multigets(lambda k: b"s-" + k if k.startswith((b"f:", b"m:")) else b"t-" + k)
        print("\nprimary killed: %d of 10 multi-gets wrong; f: failovers %d, m: failovers %d"
              % (errors, self.counter("f:", "failovers"), self.counter("m:", "failovers")))
        self.assertEqual(errors, 0)
        second.pause()
        try:
            t0 = time.monotonic()
            errors = multigets(lambda k: b"t-" + k if not k.startswith(b"m:") else None)
            print("second frozen: 10 multi-gets in %.2f s, %d wrong" % (time.monotonic() - t0,
                                                                         errors))
        finally:
            second.resume()
        # f: keys from the third pool; m: keys have no pool left after the second: misses
        # (unavailable_reads: miss), the rest of each get served.
        self.assertEqual(errors, 0)
        self.assertEqual(self.counter("f:", "errors"), 0)


if __name__ == "__main__":
    unittest.main()
