"""memcached's stats views and version through mcring, merged over a pool of two real memcached
servers, as the clients and tools people use read them: pymemcache stats()/stats(arg)/version(),
pylibmc get_stats(), memcstat --args/--analyze, memcdump. Each view must have the shape it has
against one memcached (the same keys), with values that add up over the servers; stats requests
are cached so a storm of them does not reach the servers; a down or hung server is left out and
counted, never waited for."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import unittest
import urllib.parse

from harness import (HOST, DIRECT, Conn, IntegrationCase, Mcring, Memcached, free_port,
                     make_tmpdir,
                     parse_stats, remove_tmpdir, server_line, spread_keys)

try:
    from pymemcache.client.base import Client
except ImportError:  # run with /usr/bin/python3 (python3-pymemcache)
    Client = None
try:
    import pylibmc
except ImportError:  # python3-pylibmc (packaging/deps.sh)
    pylibmc = None

# The LRU maintainer moves items between sub-LRUs in the background, which changes what
# `stats cachedump` lists from one moment to the next; without it the dumps are stable.
BACKEND_ARGS = ("-o", "no_lru_maintainer")
N_KEYS = 300


def value(i):
    return b"v" * (10 + (i * 37) % 900)


def wait_for(fn, timeout=4.0):
    """Calls fn() until it returns a true value (the stats cache lasts 1 s); returns the last."""
    deadline = time.monotonic() + timeout
    last = fn()
    while not last and time.monotonic() < deadline:
        time.sleep(0.05)
        last = fn()
    return last


def stats_reply(port, arg=b""):
    with Conn(HOST, port) as c:
        return c.request(b"stats" + (b" " + arg if arg else b"") + b"\r\n")


def pattern(name):
    """A stat's name with its slab class or size number replaced, for shape comparisons."""
    return re.sub(r"^(items:)?\d+:", lambda m: (m.group(1) or "") + "N:", name)


@unittest.skipIf(DIRECT, "compares mcring with memcached directly")
@unittest.skipIf(Client is None, "pymemcache not importable: run with /usr/bin/python3")
class StatsViewsTest(IntegrationCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = make_tmpdir()
        cls.addClassCleanup(remove_tmpdir, cls.tmp)
        cls.backends = []
        for _ in range(2):
            m = Memcached(extra_args=BACKEND_ARGS)
            cls.addClassCleanup(m.stop)
            cls.backends.append(m)
        cls.ref = Memcached(extra_args=BACKEND_ARGS)  # the same keys, stored in one memcached
        cls.addClassCleanup(cls.ref.stop)
        cls.proxy = Mcring([server_line(b.addr) for b in cls.backends], cls.tmp,
                           extra={"allow_dump": "true"})
        cls.addClassCleanup(cls.proxy.stop)
        keys = spread_keys("sv:", N_KEYS)
        for target in [cls.proxy.port, cls.ref.port]:
            mc = Client((HOST, target), connect_timeout=5, timeout=10)
            try:
                for i in range(0, N_KEYS, 100):
                    failed = mc.set_many({k: value(i + j) for j, k in enumerate(keys[i:i + 100])},
                                         noreply=False)
                    assert failed == [], failed
            finally:
                mc.close()
        cls.keys = keys

    def client(self, port=None):
        c = Client((HOST, port or self.proxy.port), connect_timeout=5, timeout=10)
        self.addCleanup(c.close)
        return c

    def backend_stats(self, arg=b""):
        return [parse_stats(stats_reply(b.port, arg)) for b in self.backends]

    def test_stats_general_sums_the_pool(self):
        per = self.backend_stats()
        self.assertTrue(all(int(s["curr_items"]) > 0 for s in per), "keys on both servers")
        want = {f: sum(int(s[f]) for s in per)
                for f in ["curr_items", "total_items", "bytes", "limit_maxbytes", "evictions"]}
        self.assertEqual(want["curr_items"], N_KEYS)

        def merged():
            st = self.client().stats()
            return st if all(int(st[f.encode()]) == v for f, v in want.items()) else None
        st = wait_for(merged)
        self.assertIsNotNone(st, "curr_items/bytes/... never equal to the sum over the servers")
        ref_keys = set(self.client(self.ref.port).stats())
        self.assertEqual(ref_keys - set(st), set(), "memcached's fields missing through mcring")
        self.assertEqual(st[b"version"], per[0]["version"].encode())
        self.assertEqual(st[b"mcring_version"].count(b"."), 2)
        self.assertEqual(int(st[b"mcring_stats_servers"]), 2)
        self.assertEqual(int(st[b"mcring_stats_servers_failed"]), 0)
        # mcring's own counters keep their meaning under the mcring_ prefix.
        self.assertGreaterEqual(int(st[b"mcring_cmd_set"]), N_KEYS)
        self.assertGreaterEqual(int(st[b"curr_connections"]), 1)
        # The limit next to it is mcring's own (the pool's client_connections, 1024 by default),
        # not the servers' -c summed (2048).
        self.assertEqual(int(st[b"max_connections"]), 1024)

    def test_items_slabs_settings_have_memcached_shape_and_add_up(self):
        for arg in ["items", "slabs", "settings"]:
            via = {k.decode() for k in self.client().stats(arg)}
            ref = {k.decode() for k in self.client(self.ref.port).stats(arg)}
            self.assertEqual({pattern(k) for k in via}, {pattern(k) for k in ref}, arg)
            self.assertTrue(via, arg)
        per = self.backend_stats(b"items")

        def summed():
            got = parse_stats(stats_reply(self.proxy.port, b"items"))
            want = {}
            for s in per:
                for k, v in s.items():
                    if k.endswith(":number"):
                        want[k] = want.get(k, 0) + int(v)
            return all(int(got.get(k, -1)) == v for k, v in want.items()) and \
                sum(want.values()) == N_KEYS
        self.assertTrue(wait_for(summed), "items:N:number is not the sum over the servers")
        slabs = parse_stats(stats_reply(self.proxy.port, b"slabs"))
        used = sum(int(v) for k, v in slabs.items() if k.endswith(":used_chunks"))
        self.assertEqual(used, N_KEYS)
        self.assertEqual(int(slabs["active_slabs"]),
                         len({k.split(":")[0] for k in slabs if ":" in k}))

    def test_version_is_the_servers(self):
        with self.backends[0].conn() as c:
            line = c.request(b"version\r\n")
        with Conn(HOST, self.proxy.port) as c:
            self.assertEqual(c.request(b"version\r\n"), line)
        self.assertEqual(self.client().version(), line[len(b"VERSION "):-2])

    def memcstat(self, *args):
        r = subprocess.run(["memcstat", "--servers=%s:%d" % (HOST, self.proxy.port)] + list(args),
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_memcstat_args_and_analyze(self):
        items = self.memcstat("--args=items")
        self.assertRegex(items, r"items:\d+:number: [1-9]")
        self.assertRegex(self.memcstat("--args=slabs"), r"\d+:chunk_size: \d+")
        self.assertRegex(self.memcstat("--args=settings"), r"maxbytes: \d+")
        analyze = self.memcstat("--analyze")
        m = re.search(r"Average Item Size \(incl/overhead\)\s*:\s*(\d+) bytes", analyze)
        self.assertIsNotNone(m, analyze)
        self.assertGreater(int(m.group(1)), 0, analyze)

    def test_memcdump_lists_every_server(self):
        def dump(addrs):
            r = subprocess.run(["memcdump", "--servers=" + ",".join(addrs)], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            return set(r.stdout.split())
        direct = dump([b.addr for b in self.backends])
        via = dump(["%s:%d" % (HOST, self.proxy.port)])
        self.assertTrue(via, "memcdump listed nothing through mcring")
        self.assertEqual(via, direct)
        self.assertTrue(via <= {k.decode() for k in self.keys})

    def test_key_dumps_refused_by_default(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        p = Mcring([server_line(b.addr) for b in self.backends], tmp)
        self.addCleanup(p.stop)
        with Conn(HOST, p.port) as c:
            # memcached -X's answers.
            self.assertEqual(c.request(b"stats cachedump 1 0\r\n"),
                             b"CLIENT_ERROR stats cachedump not allowed\r\n")
            self.assertEqual(c.request(b"lru_crawler metadump all\r\n"),
                             b"ERROR metadump not allowed\r\n")
            self.assertEqual(c.request(b"version\r\n")[:8], b"VERSION ")

    METADUMP_LINE = re.compile(rb"^key=(\S+) exp=-?\d+ la=\d+ cas=\d+ fetch=(yes|no) cls=\d+ "
                               rb"size=\d+$")

    def metadump(self, port, arg=b"all", then=b""):
        """The reply to `lru_crawler metadump <arg>` (and to what follows it on the line)."""
        with Conn(HOST, port, timeout=10) as c:
            c.send(b"lru_crawler metadump " + arg + b"\r\n" + then)
            return c.recv_until(lambda b: b.endswith(b"\r\n") and (
                b.endswith(b"END\r\n" + (b"MN\r\n" if then else b"")) or not b.startswith(b"key=")),
                timeout=10)

    def dumped_keys(self, reply):
        """The keys of a metadump reply, each line checked against memcached's format."""
        keys = []
        for line in reply[:-len(b"END\r\n")].split(b"\n")[:-1]:
            self.assertRegex(line, self.METADUMP_LINE)
            keys.append(self.METADUMP_LINE.match(line).group(1))
        return keys

    def test_metadump_lists_every_server(self):
        got = self.metadump(self.proxy.port)
        exp = self.metadump(self.ref.port)
        self.assertTrue(got.endswith(b"\nEND\r\n"), got[-200:])
        self.assertEqual(got.count(b"END\r\n"), 1, "one END for the pool")
        keys, ref_keys = self.dumped_keys(got), self.dumped_keys(exp)
        self.assertEqual(len(keys), len(set(keys)), "a key listed twice")
        self.assertEqual(set(keys), set(ref_keys))
        # memcached writes keys URI-encoded (sv:... as sv%3A...).
        self.assertLessEqual(set(self.keys), {urllib.parse.unquote_to_bytes(k) for k in keys},
                             "every key of both servers")
        # One class, and memcached's own error for a class that does not exist.
        self.assertEqual(self.metadump(self.proxy.port, b"1")[-5:], b"END\r\n")
        self.assertEqual(self.metadump(self.proxy.port, b"99"), self.metadump(self.ref.port, b"99"))
        self.assertEqual(self.metadump(self.proxy.port, b"99"), b"BADCLASS invalid class id\r\n")

    def test_metadump_pipelines(self):
        """memcached answers nothing pipelined after a metadump (the crawler takes its
        connection); mcring dumps over dedicated connections, so the next request is answered."""
        got = self.metadump(self.proxy.port, then=b"mn\r\n")
        self.assertTrue(got.endswith(b"\nEND\r\nMN\r\n"), got[-100:])
        with Conn(HOST, self.proxy.port) as c:
            self.assertEqual(c.request(b"lru_crawler enable\r\n"), b"ERROR\r\n")
            self.assertEqual(c.request(b"lru_crawler metadump\r\n"), b"ERROR\r\n")

    def test_metadump_pipelined_many_times(self):
        """Every one of many pipelined dumps is answered whole, in order (a server's crawler runs
        one dump at a time: mcring queues them instead of opening a connection per dump)."""
        n = 25
        with Conn(HOST, self.proxy.port, timeout=30) as c:
            c.send(b"lru_crawler metadump all\r\n" * n + b"mn\r\n")
            got = c.recv_until(lambda b: b.endswith(b"END\r\nMN\r\n"), timeout=30)
        dumps = got[:-len(b"MN\r\n")].split(b"END\r\n")[:-1]
        self.assertEqual(len(dumps), n)
        for d in dumps:
            self.assertGreaterEqual(d.count(b"\n"), N_KEYS, d[:200])

    def test_every_stat_line_is_three_tokens(self):
        """Prometheus' memcached_exporter splits each STAT line on spaces and rejects (memcached_up
        0) a line that is not exactly `STAT name value`: so even a reload error, whose text has
        spaces, must stay one token in `stats`."""
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        p = Mcring([server_line(b.addr) for b in self.backends], tmp)
        self.addCleanup(p.stop)
        with open(p.config_path, "w") as f:
            f.write("alpha: [unclosed\n")
        os.kill(p.pid, signal.SIGHUP)
        self.assertTrue(wait_for(lambda: parse_stats(stats_reply(p.port)).get("reload_failures")
                                 == "1"), "the bad reload was never counted")
        for arg in [b"", b"settings", b"items", b"slabs"]:
            reply = stats_reply(p.port, arg)
            self.assertTrue(reply.endswith(b"END\r\n"), arg)
            for line in reply[:-5].split(b"\r\n")[:-1]:
                self.assertEqual(len(line.strip().split(b" ")), 3, (arg, line))
        self.assertIn("reload_last_error", parse_stats(stats_reply(p.port)))

    def test_a_view_larger_than_the_client_budget_is_refused_a_dump_streams(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        m = Memcached(extra_args=BACKEND_ARGS)
        self.addCleanup(m.stop)
        p = Mcring([server_line(m.addr)], tmp,
                   extra={"allow_dump": "true", "client_buffer_limit": "64k"})
        self.addCleanup(p.stop)
        with Conn(HOST, m.port) as c:  # ~100 KiB of ITEM lines in slab class 1
            c.send(b"".join(b"set %s 0 0 1 noreply\r\nx\r\n" % k for k in spread_keys("big:", 2500)))
            self.assertEqual(c.request(b"mn\r\n"), b"MN\r\n")
            self.assertGreater(len(c.request(b"stats cachedump 1 0\r\n")), 64 * 1024)
        self.assertGreater(len(self.metadump(m.port)), 64 * 1024)
        with Conn(HOST, p.port) as c:
            self.assertEqual(c.request(b"stats cachedump 1 0\r\n"),
                             b"SERVER_ERROR out of memory writing get response\r\n")
            self.assertEqual(c.request(b"mn\r\n"), b"MN\r\n")  # the connection goes on
            st = parse_stats(c.request(b"stats\r\n"))
            self.assertGreaterEqual(int(st["client_oom_replies"]), 1)
            # A metadump is streamed, not held: it arrives whole at the pace the client reads
            # (test_bounded_views has one of 33 MB).
            c.send(b"lru_crawler metadump all\r\nmn\r\n")
            got = c.recv_until(lambda b: b.endswith(b"MN\r\n"), timeout=10)
            self.assertTrue(got.endswith(b"\nEND\r\nMN\r\n"), got[-200:])
            self.assertEqual(sorted(self.dumped_keys(got[:-4])),
                             sorted(self.dumped_keys(self.metadump(m.port))))

    def test_stats_storm_reaches_each_server_a_few_times(self):
        def requests():
            st = parse_stats(stats_reply(self.proxy.port, b"backends"))
            return [int(st["alpha:%s:requests" % b.addr]) for b in self.backends]
        before = requests()
        n = 200
        with Conn(HOST, self.proxy.port) as c:
            for _ in range(n // 2):  # pipelined, and one after another
                c.send(b"stats items\r\n")
            for _ in range(n // 2):
                self.assertTrue(c.read_reply().endswith(b"END\r\n"))
            for _ in range(n // 2):
                self.assertTrue(c.request(b"stats items\r\n").endswith(b"END\r\n"))
        after = requests()
        for b, x, y in zip(self.backends, before, after):
            self.assertGreaterEqual(y - x, 0)
            self.assertLessEqual(y - x, 4, "%d stats items reached %s %d times" % (n, b.addr, y - x))

    @unittest.skipIf(pylibmc is None, "python3-pylibmc not installed")
    def test_pylibmc_get_stats(self):
        for arg in [None, "items", "slabs", "settings"]:
            via = pylibmc.Client(["%s:%d" % (HOST, self.proxy.port)])
            ref = pylibmc.Client([self.ref.addr])
            try:
                got = via.get_stats(arg) if arg else via.get_stats()
                exp = ref.get_stats(arg) if arg else ref.get_stats()
            finally:
                via.disconnect_all()
                ref.disconnect_all()
            self.assertEqual(len(got), 1, arg)
            got_keys = {pattern(k) for k in got[0][1]}
            exp_keys = {pattern(k) for k in exp[0][1]}
            self.assertEqual(exp_keys - got_keys, set(), arg)
            if arg in ("items", "slabs", "settings"):
                self.assertEqual(got_keys, exp_keys, arg)


    def php_stats(self, port, args):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clients", "php_stats.php")
        out = subprocess.run(["php", script, HOST, str(port)] + args, capture_output=True,
                             timeout=30, check=True).stdout
        return json.loads(out)

    @unittest.skipIf(shutil.which("php") is None, "php-cli and php-memcached not installed")
    def test_php_memcached_get_stats_and_version(self):
        args = ["", "items", "slabs", "settings"]
        got = self.php_stats(self.proxy.port, args)
        exp = self.php_stats(self.ref.port, args)
        # getVersion() reads `version`: the servers' version exactly as memcached prints it.
        self.assertEqual(got["version"], exp["version"])
        self.assertRegex(got["version"], r"^1\.6\.\d+$")
        for arg in args:
            self.assertNotIn("error", got["stats"][arg], arg)
            got_keys = {pattern(k) for k in got["stats"][arg]}
            exp_keys = {pattern(k) for k in exp["stats"][arg]}
            self.assertEqual(exp_keys - got_keys, set(), arg or "(none)")
            if arg:
                self.assertEqual(got_keys, exp_keys, arg)
        general = got["stats"][""]
        self.assertGreaterEqual(int(general["curr_items"]), N_KEYS, "summed over both servers")
        self.assertEqual(general["version"], exp["version"])


@unittest.skipIf(DIRECT, "a proxy's behaviour")
class StatsViewsFailureTest(IntegrationCase):

    def test_down_and_hung_servers_are_left_out(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        live = Memcached()
        self.addCleanup(live.stop)
        hung = Memcached()
        self.addCleanup(hung.stop)
        dead = "%s:%d" % (HOST, free_port())
        # A pool timeout longer than the views' own 1 s deadline: that deadline bounds the wait.
        p = Mcring([server_line(live.addr), server_line(hung.addr), server_line(dead)], tmp,
                   timeout_ms=5000)
        self.addCleanup(p.stop)
        with Conn(HOST, p.port) as c:
            hung.pause()
            try:
                t0 = time.monotonic()
                c.send(b"stats\r\nstats items\r\nversion\r\n")
                st = parse_stats(c.read_reply(timeout=5))
                items = c.read_reply(timeout=5)
                version = c.read_reply(timeout=5)
                took = time.monotonic() - t0
            finally:
                hung.resume()
            self.assertEqual(st["mcring_stats_servers"], "1")
            self.assertEqual(st["mcring_stats_servers_failed"], "2")
            self.assertGreaterEqual(int(st["stats_fetch_failures"]), 2)
            self.assertTrue(items.endswith(b"END\r\n"))
            self.assertEqual(version, b"VERSION 1.6.18\r\n")
            self.assertLess(took, 3.0, "views waited for the hung server")

            def only_dead_failed():
                st = parse_stats(c.request(b"stats\r\n"))
                return st["mcring_stats_servers"] == "2" and st["mcring_stats_servers_failed"] == "1"
            self.assertTrue(wait_for(only_dead_failed), "the resumed server never counted again")

    def test_metadump_leaves_out_a_down_server_and_survives_clients_leaving(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        live = Memcached()
        self.addCleanup(live.stop)
        dead = "%s:%d" % (HOST, free_port())
        p = Mcring([server_line(live.addr), server_line(dead)], tmp, extra={"allow_dump": "true"})
        self.addCleanup(p.stop)
        with Conn(HOST, live.port) as c:
            for i in range(50):
                self.assertEqual(c.request(b"set md%d 0 0 1\r\nx\r\n" % i), b"STORED\r\n")
        # Clients that ask for a dump and leave at once, before and while it arrives.
        for _ in range(20):
            with Conn(HOST, p.port) as c:
                c.send(b"lru_crawler metadump all\r\nlru_crawler metadump all\r\n")
        with Conn(HOST, p.port) as c:
            c.send(b"lru_crawler metadump all\r\nmn\r\n")
            got = c.recv_until(lambda b: b.endswith(b"END\r\nMN\r\n"), timeout=10)
            self.assertTrue(got.endswith(b"\nEND\r\nMN\r\n"), got[-200:])
            self.assertEqual(got.count(b"key=md"), 50)
            st = parse_stats(c.request(b"stats\r\n"))
            self.assertGreaterEqual(int(st["stats_fetch_failures"]), 1, "the dead server counted")


if __name__ == "__main__":
    unittest.main()
