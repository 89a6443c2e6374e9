"""`stats detail on|off|dump` (memcached's per-prefix stats), top prefixes and top clients.

- Through a one-server pool, `stats detail dump` answers byte for byte what a separate memcached
  answers itself after the same requests (gets that hit and miss, multi-gets, gets/gat, the
  storage commands, deletes, several prefixes, an empty prefix, keys without the delimiter, and
  commands memcached does not count), with coalesce_gets on and off; so do the usage errors.
- 100,000 random prefixes leave the dump within detail_max_prefixes + 1 lines (the overflow line
  `*:other`), every get accounted for, and RSS flat once the tables are full.
- GET /clients ranks a client sending ten times the requests of another first, with their exact
  counts; /metrics carries the top prefixes and clients and passes promtool check metrics; the
  console shows both panels.
"""

import json
import random
import shutil
import socket
import subprocess
import time
import unittest

from harness import (HOST, Conn, IntegrationCase, Memcached, SANITIZED, admin_http, proc_rss_kb)
from headless_browser import Browser, chromium_path


def dump(conn, command=b"stats detail dump\r\n"):
    conn.send(command)
    return conn.recv_until(lambda b: b.endswith(b"END\r\n") or b.endswith(b"ERROR\r\n") or
                           (b.startswith(b"CLIENT_ERROR") and b.endswith(b"\r\n")), timeout=10)


def one_line(conn, command):
    conn.send(command)
    return conn.recv_until(lambda b: b.endswith(b"\r\n"), timeout=5)


# The request sequence both sides get: (request bytes, number of replies).
def sequence():
    rng = random.Random(30)
    prefixes = [b"user", b"session", b"a", b"ab", b"abc", b"img", b"cfg", b"x1", b"x2", b"x3",
                b"feed", b"cart", b"", b"z"] + [b"p%d" % i for i in range(30)]
    out = []
    for i in range(400):
        p = rng.choice(prefixes)
        key = p + b":" + str(rng.randrange(20)).encode()
        op = rng.randrange(10)
        if op < 3:
            out.append((b"set %s 0 0 3\r\nabc\r\n" % key, 1))
        elif op < 6:
            out.append((b"get %s\r\n" % key, 1))
        elif op == 6:
            keys = [rng.choice(prefixes) + b":" + str(rng.randrange(20)).encode() for _ in range(4)]
            out.append((b"get " + b" ".join(keys) + b"\r\n", 1))
        elif op == 7:
            out.append((b"delete %s\r\n" % key, 1))
        elif op == 8:
            out.append((b"gets %s\r\n" % key, 1))
        else:
            out.append((b"gat 0 %s %s:9\r\n" % (key, rng.choice(prefixes)), 1))
    out += [
        (b"add user:1 0 0 1\r\nx\r\n", 1), (b"replace user:77 0 0 1\r\nx\r\n", 1),
        (b"append cart:1 0 0 1\r\nx\r\n", 1), (b"prepend cart:2 0 0 1\r\nx\r\n", 1),
        (b"cas cart:3 0 0 1 99\r\nx\r\n", 1), (b"set feed:noreply 0 0 1 noreply\r\nx\r\n", 0),
        # Without the delimiter: not counted; two delimiters: the first one ends the prefix.
        (b"set nodelimiter 0 0 1\r\nx\r\n", 1), (b"get nodelimiter\r\n", 1),
        (b"set ::double 0 0 1\r\nx\r\n", 1), (b"get ::double a::b\r\n", 1),
        # Not counted by memcached: incr/decr, touch, meta commands.
        (b"incr cfg:1 1\r\n", 1), (b"touch user:1 0\r\n", 1), (b"mg img:1 v\r\n", 1),
        (b"ms img:2 1\r\nx\r\n", 1), (b"md img:2\r\n", 1),
    ]
    return out


@unittest.skipIf(shutil.which("memcached") is None, "memcached not installed")
class StatsDetailTest(IntegrationCase):

    def run_both(self, coalesce):
        self.start_memcacheds(1)
        ref = Memcached()
        self.addCleanup(ref.stop)
        mc = self.start_mcring(self.servers, extra={"coalesce_gets": coalesce})
        self.dump_log_on_failure(mc)
        sides = [self.conn(mc.port), Conn(HOST, ref.port)]
        self._conns.append(sides[1])
        # Before detail is on, and the usage errors: memcached's answers.
        for c in sides:
            self.assertEqual(dump(c), b"END\r\n")
        for command in (b"stats detail\r\n", b"stats detail foo\r\n", b"stats detail on extra\r\n",
                        b"stats detail off\r\n"):
            answers = [one_line(c, command) for c in sides]
            self.assertEqual(answers[0], answers[1], command)
        for c in sides:
            self.assertEqual(one_line(c, b"stats detail on\r\n"), b"OK\r\n")
        for c in sides:
            for req, n in sequence():
                c.send(req)
                if n:
                    c.read_replies(n)
        self.assertEqual(dump(sides[1]), dump(sides[1]))  # a dump changes nothing
        dumps = [dump(c) for c in sides]
        print("\nstats detail dump (coalesce_gets %s): %d lines, %d bytes, identical: %s"
              % (coalesce, dumps[1].count(b"\r\n"), len(dumps[1]), dumps[0] == dumps[1]))
        self.assertGreater(dumps[1].count(b"\r\n"), 40)
        self.assertEqual(dumps[0], dumps[1])
        # Off: nothing more is counted, and the dump still answers what was.
        for c in sides:
            self.assertEqual(one_line(c, b"stats detail off\r\n"), b"OK\r\n")
            c.request(b"get user:1 user:2\r\n")
            c.request(b"set user:5 0 0 1\r\nx\r\n")
        self.assertEqual(dump(sides[0]), dumps[0])
        self.assertEqual(dump(sides[0]), dump(sides[1]))

    def test_dump_matches_memcached_coalesced(self):
        self.run_both("true")

    def test_dump_matches_memcached_forwarded(self):
        self.run_both("false")

    def test_prefix_delimiter_is_memcacheds_D(self):
        """prefix_delimiter "/" against memcached -D / (which turns detail on by itself; mcring
        waits for `stats detail on`)."""
        self.start_memcacheds(1)
        ref = Memcached(extra_args=["-D", "/"])
        self.addCleanup(ref.stop)
        mc = self.start_mcring(self.servers, extra={"prefix_delimiter": '"/"'})
        self.dump_log_on_failure(mc)
        sides = [self.conn(mc.port), Conn(HOST, ref.port)]
        self._conns.append(sides[1])
        self.assertEqual(one_line(sides[0], b"stats detail on\r\n"), b"OK\r\n")
        for c in sides:
            c.request(b"set a/b:c 0 0 1\r\nx\r\n")
            c.request(b"get a/b:c a:b/c b:c d/e\r\n")
            c.request(b"delete d/e\r\n")
        dumps = [dump(c) for c in sides]
        print("\nprefix_delimiter /: %r" % dumps[0])
        self.assertIn(b"PREFIX a:b get 1 hit 0 set 0 del 0\r\n", dumps[0])
        self.assertEqual(dumps[0], dumps[1])


def pipelined_gets(conn, keys, batch=2000):
    """One get per key, `batch` at a time, every reply read (bounded: len(keys) requests)."""
    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        conn.send(b"".join(b"get %s\r\n" % k for k in part))
        got = conn.recv_until(lambda b: b.count(b"END\r\n") >= len(part), timeout=20)
        if got.count(b"END\r\n") != len(part):
            raise AssertionError("%d replies of %d" % (got.count(b"END\r\n"), len(part)))


class PrefixBoundTest(IntegrationCase):

    def test_random_prefixes_stay_within_the_bound(self):
        self.start_memcacheds(1)
        mc = self.start_mcring(self.servers, args=("--threads", "2"))
        self.dump_log_on_failure(mc)
        c = self.conn(mc.port)
        self.assertEqual(one_line(c, b"stats detail on\r\n"), b"OK\r\n")
        # Several connections, so both workers count.
        conns = [c] + [self.conn(mc.port) for _ in range(3)]
        rng = random.Random(7)
        rounds, rss = 2, []
        for r in range(rounds):
            keys = [b"r%016x:k" % rng.getrandbits(64) for _ in range(100000)]
            for i, conn in enumerate(conns):
                pipelined_gets(conn, keys[i::len(conns)])
            rss.append(proc_rss_kb(mc.pid))
        out = dump(c)
        lines = out.split(b"\r\n")[:-2]  # without END and the empty tail
        self.assertEqual(out[-5:], b"END\r\n")
        overflow = [l for l in lines if l.startswith(b"PREFIX *:other ")]
        gets = sum(int(l.split(b" ")[3]) for l in lines)
        print("\n%d random prefixes x %d: dump %d lines (bound 1000 + 1), overflow %s, gets "
              "counted %d; RSS after each 100,000: %s kB"
              % (100000, rounds, len(lines), overflow[0].decode() if overflow else None, gets, rss))
        self.assertLessEqual(len(lines), 1001)
        self.assertEqual(len(overflow), 1)
        self.assertEqual(gets, 100000 * rounds)  # every get counted, in a line or the overflow
        if SANITIZED:
            self.skipTest("RSS is not meaningful under sanitizers")
        # The tables were full after the first 100,000 prefixes: the next ones cost nothing.
        self.assertLess(rss[1] - rss[0], 4096, rss)


class TopClientsTest(IntegrationCase):

    def test_top_clients_rank_two_clients_by_rate(self):
        self.start_memcacheds(1)
        mc = self.start_mcring(self.servers)
        self.dump_log_on_failure(mc)
        status, body = admin_http(mc.admin_port, path="/clients")
        self.assertEqual(status, 200, body)
        json.loads(body)  # the first read: the next rates are from here
        busy, quiet = [], []
        for source, n, into in (("127.0.0.2", 3000, busy), ("127.0.0.3", 300, quiet)):
            s = socket.socket()
            s.bind((source, 0))
            s.connect((HOST, mc.port))
            conn = Conn.__new__(Conn)
            conn.sock, conn.buf, conn.eof, conn.timeout = s, b"", False, 5.0
            self._conns.append(conn)
            pipelined_gets(conn, [b"c:%d" % i for i in range(n)], batch=500)
            into.append(n)
        deadline = time.monotonic() + 10
        rows = []
        while time.monotonic() < deadline:
            status, body = admin_http(mc.admin_port, path="/clients")
            rows = json.loads(body)["clients"]
            seen = {r["address"]: r for r in rows}
            if "127.0.0.2" in seen and "127.0.0.3" in seen and seen["127.0.0.2"]["requests_per_s"] > 0:
                break
            time.sleep(0.2)
        print("\n/clients: %s" % json.dumps(rows))
        seen = {r["address"]: r for r in rows}
        self.assertEqual(seen["127.0.0.2"]["requests"], 3000)
        self.assertEqual(seen["127.0.0.3"]["requests"], 300)
        self.assertGreater(seen["127.0.0.2"]["requests_per_s"], seen["127.0.0.3"]["requests_per_s"])
        order = [r["address"] for r in rows]
        self.assertLess(order.index("127.0.0.2"), order.index("127.0.0.3"))
        self.assertGreater(seen["127.0.0.2"]["bytes_in"], seen["127.0.0.3"]["bytes_in"])
        self.assertGreater(seen["127.0.0.2"]["bytes_out"], 0)

    def test_metrics_show_top_prefixes_and_clients(self):
        self.start_memcacheds(1)
        mc = self.start_mcring(self.servers)
        self.dump_log_on_failure(mc)
        c = self.conn(mc.port)
        self.assertEqual(one_line(c, b"stats detail on\r\n"), b"OK\r\n")
        pipelined_gets(c, [b"hot:%d" % i for i in range(500)] + [b"cold:1"] * 5 +
                       [b"we\"ird\\:1"])
        status, metrics = admin_http(mc.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        text = metrics.decode()
        self.assertIn('mcring_prefix_requests_total{pool="alpha",prefix="hot"} 500', text)
        self.assertIn('mcring_prefix_requests_total{pool="alpha",prefix="cold"} 5', text)
        self.assertIn('mcring_client_requests_total{client="127.0.0.1"}', text)
        status, body = admin_http(mc.admin_port, path="/prefixes")
        top = json.loads(body)["pools"]["alpha"]
        print("\n/prefixes: %s" % json.dumps(top))
        self.assertTrue(top["enabled"])
        self.assertEqual(top["top"][0]["prefix"], "hot")
        self.assertEqual(top["top"][0]["get"], 500)
        promtool = shutil.which("promtool")
        if promtool is None:
            self.fail("promtool not installed (packaging/deps.sh installs Debian's prometheus)")
        check = subprocess.run([promtool, "check", "metrics"], input=metrics,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        self.assertEqual(check.returncode, 0, check.stdout.decode(errors="replace"))


@unittest.skipIf(chromium_path() is None, "chromium not installed (packaging/deps.sh test)")
class ConsolePanelsTest(IntegrationCase):

    def test_console_shows_top_prefixes_and_clients(self):
        self.start_memcacheds(1)
        mc = self.start_mcring(self.servers)
        self.dump_log_on_failure(mc)
        c = self.conn(mc.port)
        self.assertEqual(one_line(c, b"stats detail on\r\n"), b"OK\r\n")
        pipelined_gets(c, [b"shown:%d" % i for i in range(300)])
        browser = Browser()
        self.addCleanup(browser.close)
        browser.navigate("http://%s:%d/" % (HOST, mc.admin_port))
        cells = "[...document.querySelectorAll('#%s tr.%s')].map((r) => [...r.cells].map((c) => c.textContent))"
        prefixes = browser.wait_for("(() => { const r = %s; return r.length && r; })()"
                                    % (cells % ("prefixes", "prefix")), what="the prefixes panel")
        clients = browser.wait_for("(() => { const r = %s; return r.length && r; })()"
                                   % (cells % ("clients", "client")), what="the clients panel")
        print("\nconsole: prefixes %s, clients %s" % (prefixes, clients))
        self.assertEqual(prefixes[0][0], "shown")
        self.assertEqual(prefixes[0][3], "300")
        self.assertEqual(clients[0][0], "127.0.0.1")


if __name__ == "__main__":
    unittest.main()
