"""servers_dns: a pool's servers found in DNS.

A real DNS server on loopback (Debian's dnsmasq-base) answers for mc.mcring.test from a hosts
file that the tests rewrite and SIGHUP; real memcached processes listen on 127.0.0.2..5, all on
one port (the whole of 127.0.0.0/8 is loopback on Linux). mcring resolves the name every
dns_interval (short here) and applies a changed answer as a reload with source `dns`.

Answers are counted from dnsmasq's query log: each resolution is one A and one AAAA query; the
tests' own checks of what dnsmasq answers ask A only, so AAAA lines count mcring's answers.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
import unittest

from harness import (HOST, IntegrationCase, Mcring, Memcached, free_port, make_tmpdir,
                     parse_reloads, proxy_stats, remove_tmpdir, requires_proxy, run_mcring,
                     set_many_raw, spawn, stop_process, MCRING_BIN)

DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
NAME = "mc.mcring.test"
ADDRS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]


def dns_query(port, name, qtype=1, timeout=0.5):
    """(rcode, sorted addresses) of one UDP query to 127.0.0.1:port, or None without an answer."""
    tid = os.getpid() & 0xFFFF
    q = struct.pack(">HHHHHH", tid, 0x0100, 1, 0, 0, 0)
    for part in name.split("."):
        q += bytes([len(part)]) + part.encode()
    q += b"\0" + struct.pack(">HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(q, (HOST, port))
            d = s.recv(4096)
        except OSError:
            return None
    rcode, count = d[3] & 0xF, struct.unpack(">H", d[6:8])[0]
    i = 12
    while d[i]:
        i += d[i] + 1
    i += 5
    out = []
    for _ in range(count):
        if d[i] & 0xC0 == 0xC0:
            i += 2
        else:
            while d[i]:
                i += d[i] + 1
            i += 1
        rtype, _cls, _ttl, length = struct.unpack(">HHIH", d[i:i + 10])
        i += 10
        if rtype == 1:
            out.append(socket.inet_ntop(socket.AF_INET, d[i:i + length]))
        i += length
    return rcode, sorted(out)


def await_true(pred, timeout, what, step=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))


class Dnsmasq:
    """dnsmasq on a free loopback port, authoritative for *.test from a hosts file."""

    def __init__(self, tmpdir, addresses, others=None, extra_args=()):
        self.others = dict(others or {})  # further names: {name: [addresses]}
        self.extra_args = list(extra_args)
        self.hosts = os.path.join(tmpdir, "dns-hosts")
        self.log = os.path.join(tmpdir, "dnsmasq.log")
        self.proc = None
        self.port = None
        self.addresses = []
        self.write(addresses)
        self.start()

    def write(self, addresses):
        self.addresses = sorted(addresses)
        with open(self.hosts + ".tmp", "w") as f:
            f.writelines("%s %s\n" % (a, NAME) for a in addresses)
            for name, others in self.others.items():
                f.writelines("%s %s\n" % (a, name) for a in others)
        os.rename(self.hosts + ".tmp", self.hosts)

    def start(self, port=None, attempts=5):
        if not os.access(DNSMASQ, os.X_OK):
            raise unittest.SkipTest("dnsmasq not installed (Debian: dnsmasq-base)")
        for _ in range(attempts):
            p = port or free_port()
            self.proc = spawn([DNSMASQ, "--keep-in-foreground", "--conf-file=/dev/null",
                               "--port=%d" % p, "--listen-address=127.0.0.1", "--bind-interfaces",
                               "--no-resolv", "--no-hosts", "--addn-hosts=" + self.hosts,
                               "--local=/test/", "--local-ttl=0", "--user=root",
                               "--pid-file=", "--log-queries", "--log-facility=" + self.log]
                              + self.extra_args,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.proc.poll() is None:
                if dns_query(p, NAME, timeout=0.2) is not None:
                    self.port = p
                    return
                time.sleep(0.02)
            stop_process(self.proc, signal.SIGKILL, 1.0)
            if port:
                time.sleep(0.3)
        raise RuntimeError("dnsmasq did not start")

    def answer(self):
        r = dns_query(self.port, NAME)
        return r[1] if r and r[0] == 0 else None

    def set(self, addresses):
        """Rewrites the hosts file, SIGHUPs dnsmasq, and waits until it answers the new list."""
        self.write(addresses)
        self.proc.send_signal(signal.SIGHUP)
        for name, want in [(NAME, self.addresses)] + list(self.others.items()):
            if want:
                await_true(lambda: (dns_query(self.port, name) or (0, None))[1] == sorted(want),
                           5, "dnsmasq to answer %s for %s" % (want, name))

    def answers(self):
        """mcring's resolutions so far (its AAAA queries: the tests' checks ask A only)."""
        try:
            with open(self.log, errors="replace") as f:
                return sum(1 for line in f
                           if re.search(r"query\[AAAA\] %s " % re.escape(NAME), line, re.I))
        except OSError:
            return 0

    def kill(self):
        stop_process(self.proc, signal.SIGKILL, 1.0)

    def stop(self):
        stop_process(self.proc)


def sanitizer_report(pid):
    """What the sanitizers wrote for process `pid` (ASAN_OPTIONS log_path), or None."""
    for part in os.environ.get("ASAN_OPTIONS", "").split(":"):
        if part.startswith("log_path="):
            path = "%s.%d" % (part[len("log_path="):], pid)
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    return f.read()
    return None


class DiscoveredMcring(Mcring):
    """mcring whose one pool finds its servers as NAME:mc_port through the given DNS server."""

    def __init__(self, tmpdir, dns_port, mc_port, interval_ms, remove_after, extra=None,
                 srv=None):
        self.dns_port, self.mc_port, self.srv = dns_port, mc_port, srv
        self.interval_ms, self.remove_after = interval_ms, remove_after
        super().__init__([], tmpdir, extra=extra)

    def write_config(self, port):
        lines = ["alpha:", "  listen: %s:%d" % (HOST, port), "  hash: murmur",
                 "  distribution: ketama", "  timeout: 1000",
                 ("  servers_srv: %s" % self.srv) if self.srv else
                 "  servers_dns: %s:%d" % (NAME, self.mc_port),
                 "  dns_resolver: 127.0.0.1:%d" % self.dns_port,
                 "  dns_interval: %d" % self.interval_ms,
                 "  dns_remove_after: %d" % self.remove_after]
        lines += ["  %s: %s" % kv for kv in (self.extra or {}).items()]
        with open(self.config_path, "w") as f:
            f.write("\n".join(lines) + "\n")


@requires_proxy
class DiscoveryCase(IntegrationCase):
    KEYS = ["dns:%d" % i for i in range(300)]

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        # One port on four loopback addresses, as a headless Service's pods share theirs.
        for _ in range(5):
            port = free_port()
            backends = []
            try:
                for a in ADDRS:
                    backends.append(Memcached(port=port, host=a, memory_mb=16))
            except RuntimeError:
                for b in backends:
                    b.stop()
                continue
            break
        else:
            raise RuntimeError("no port free on all of %s" % ADDRS)
        self.mc_port = port
        self.backends = {b.host: b for b in backends}
        for b in backends:
            self.addCleanup(b.stop)

    def start(self, addresses, interval_ms=200, remove_after=3, extra=None, srv=None,
              others=None, dns_args=()):
        self.dns = Dnsmasq(self.tmp, addresses, others, dns_args)
        self.addCleanup(self.dns.stop)
        self.mc = DiscoveredMcring(self.tmp, self.dns.port, self.mc_port, interval_ms,
                                   remove_after, extra, srv)
        self.addCleanup(self.mc.stop)
        self.dump_log_on_failure(self.mc)

    def dns_reloads(self):
        return [r for r in parse_reloads(self.raw_stats(b"reloads")) if r["source"] == "dns"]

    def raw_stats(self, arg):
        from harness import Conn
        with Conn(HOST, self.mc.port) as c:
            return c.request(b"stats " + arg + b"\r\n")

    def generation(self):
        return int(proxy_stats(self.mc.port)["config_generation"])

    def holders(self):
        """{address: keys it holds} after emptying every server and writing every key through
        mcring: where the ring puts them now."""
        for b in self.backends.values():
            b.flush()
        with self.conn(self.mc.port) as c:
            set_many_raw(c, [(k.encode(), b"v") for k in self.KEYS])
        return {a: len(b.get_many(self.KEYS)) for a, b in self.backends.items()}

    def log_has(self, pattern):
        return re.search(pattern, self.mc.log_tail(1 << 20)) is not None

    def test_added_server_takes_keys_within_interval_plus_a_second(self):
        self.start(ADDRS[:2])
        before = self.holders()
        self.assertGreater(before["127.0.0.2"], 0)
        self.assertGreater(before["127.0.0.3"], 0)
        self.assertEqual(before["127.0.0.4"], 0)
        self.assertEqual(self.dns_reloads(), [])
        self.dns.set(ADDRS[:3])
        t0 = time.monotonic()
        rec = await_true(lambda: [r for r in self.dns_reloads() if r["result"] == "applied"],
                         5, "a dns reload record")[0]
        elapsed = time.monotonic() - t0
        self.assertIn("+servers 1 (127.0.0.4:%d)" % self.mc_port, rec["diff"])
        after = self.holders()
        print("\n  added: dns reload %.2f s after the DNS change (interval 0.2 s); keys "
              "127.0.0.2/3/4: %d/%d/%d -> %d/%d/%d; record: %s"
              % (elapsed, before["127.0.0.2"], before["127.0.0.3"], before["127.0.0.4"],
                 after["127.0.0.2"], after["127.0.0.3"], after["127.0.0.4"], rec["diff"]))
        self.assertGreater(after["127.0.0.4"], 0)
        self.assertLessEqual(elapsed, 0.2 + 1.0)
        # The membership event of the change, with its cause.
        self.assertTrue(self.log_has(r"event \d+ dns: pool 'alpha'"), "no dns membership event")

    def test_added_server_is_warmed_when_warmup_window_is_set(self):
        # The DNS change goes through the reload path: a warm-up window opens, so the keys that
        # moved to the new server are still hits (fetched from their previous server).
        self.start(ADDRS[:2], extra={"warmup_window": 10000})
        with self.conn(self.mc.port) as c:
            set_many_raw(c, [(k.encode(), b"w") for k in self.KEYS])
        self.dns.set(ADDRS[:3])
        await_true(lambda: self.dns_reloads(), 5, "the dns reload")
        with self.conn(self.mc.port) as c:
            reply = c.request(b"get " + " ".join(self.KEYS).encode() + b"\r\n")
        hits = reply.count(b"VALUE ")
        moved = len(self.backends["127.0.0.4"].get_many(self.KEYS))
        print("\n  warm-up after a DNS addition: %d/%d hits, %d keys copied to 127.0.0.4"
              % (hits, len(self.KEYS), moved))
        self.assertEqual(hits, len(self.KEYS))
        self.assertGreater(moved, 0)

    def test_removed_server_leaves_after_remove_after_answers(self):
        self.start(ADDRS[:3], remove_after=3)
        gen = self.generation()
        self.dns.set(ADDRS[:2])
        q0 = self.dns.answers()
        # Two answers without it (one may have been in flight across the change): still there.
        await_true(lambda: self.dns.answers() >= q0 + 2, 5, "two answers")
        early = self.dns_reloads()
        self.assertEqual(early, [], "removed before %d answers" % 3)
        rec = await_true(lambda: self.dns_reloads(), 5, "the removal")[0]
        answers = self.dns.answers() - q0
        print("\n  removed after %d answers without it (dns_remove_after 3): %s"
              % (answers, rec["diff"]))
        self.assertEqual(rec["result"], "applied")
        self.assertIn("-servers 1 (127.0.0.4:%d)" % self.mc_port, rec["diff"])
        self.assertGreaterEqual(answers, 3)
        self.assertEqual(self.generation(), gen + 1)
        self.assertEqual(self.holders()["127.0.0.4"], 0)

    def test_flapping_record_changes_nothing(self):
        self.start(ADDRS[:3], interval_ms=250, remove_after=3)
        gen = self.generation()
        for _ in range(4):
            self.dns.set(ADDRS[:2])
            q = self.dns.answers()
            await_true(lambda: self.dns.answers() >= q + 1, 5, "an answer without 127.0.0.4")
            self.dns.set(ADDRS[:3])
            q = self.dns.answers()
            await_true(lambda: self.dns.answers() >= q + 1, 5, "an answer with it")
        q = self.dns.answers()
        await_true(lambda: self.dns.answers() >= q + 2, 5, "two more answers")
        print("\n  flapping: 4 cycles, %d answers, dns reloads %d, generation %d -> %d"
              % (self.dns.answers(), len(self.dns_reloads()), gen, self.generation()))
        self.assertEqual(self.dns_reloads(), [])
        self.assertEqual(self.generation(), gen)

    def test_dead_dns_server_removes_nobody(self):
        self.start(ADDRS[:3], remove_after=2)
        gen = self.generation()
        port = self.dns.port
        self.dns.kill()
        await_true(lambda: self.log_has(r"servers_dns .* no usable answer"), 5, "a failed answer")
        # Then a server that reads queries and never answers, on the same port: count mcring's
        # resolutions (AAAA queries, retries included) until several more have failed.
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hole:
            hole.bind((HOST, port))
            hole.settimeout(0.2)
            seen = set()
            deadline = time.monotonic() + 15
            while len(seen) < 4 and time.monotonic() < deadline:
                try:
                    d = hole.recv(512)
                except socket.timeout:
                    continue
                if d[-4:-2] == b"\x00\x1c":  # AAAA; a retry keeps its id
                    seen.add(d[:2])
        self.assertGreaterEqual(len(seen), 4, "mcring stopped asking")
        held = self.holders()
        self.dns.start(port)
        m = await_true(lambda: re.search(r"answers again \((\d+) failed answers\)",
                                         self.mc.log_tail(1 << 20)), 5, "answers again")
        failed = int(m.group(1))
        print("\n  DNS server dead: %d failed answers, dns reloads %d, keys on 127.0.0.2/3/4 "
              "while dead: %d/%d/%d" % (failed, len(self.dns_reloads()), held["127.0.0.2"],
                                        held["127.0.0.3"], held["127.0.0.4"]))
        self.assertGreaterEqual(failed, 3)
        self.assertEqual(self.dns_reloads(), [])
        self.assertEqual(self.generation(), gen)
        for a in ADDRS[:3]:
            self.assertGreater(held[a], 0, a)

    def test_exit_while_a_query_is_out(self):
        """SIGTERM while mcring's DNS query has no answer (a server that reads it and never
        answers): a clean exit, and under the sanitizers no report from that process. The
        query's state used to leak: libevent fails it on a loop pass that never came."""
        self.start(ADDRS[:3], interval_ms=200)
        port = self.dns.port
        self.dns.kill()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hole:
            hole.bind((HOST, port))
            hole.settimeout(0.2)
            asked = False
            deadline = time.monotonic() + 10
            while not asked and time.monotonic() < deadline:
                try:
                    hole.recv(512)
                    asked = True
                except socket.timeout:
                    continue
            self.assertTrue(asked, "mcring sent no query")
            pid = self.mc.pid
            rc = self.mc.stop()  # the query is out: the hole holds it
        self.assertEqual(rc, 0)
        report = sanitizer_report(pid)
        print("\n  exit with a query out: rc %s, sanitizer report: %s" % (rc, report is not None))
        self.assertIsNone(report, report)

    def test_removing_more_than_half_is_held_until_it_repeats(self):
        self.start(ADDRS[:3], remove_after=1)
        self.dns.set(ADDRS[:1])
        q0 = self.dns.answers()
        rec = await_true(lambda: self.dns_reloads(), 5, "the removal")[0]
        answers = self.dns.answers() - q0
        print("\n  2 of 3 removed after %d answers (dns_remove_after 1, held once): %s"
              % (answers, rec["diff"]))
        self.assertTrue(self.log_has(r"would remove 2 of 3 servers .* held until an answer "
                                     r"repeats it"))
        self.assertIn("-servers 2 (127.0.0.3:%d, 127.0.0.4:%d)" % (self.mc_port, self.mc_port),
                      rec["diff"])
        self.assertGreaterEqual(answers, 2)

    def test_reload_adding_a_discovered_pool_waits_for_its_first_answer(self):
        self.start(ADDRS[:2])
        self.dns.others = {"mc2.mcring.test": ADDRS[2:4]}
        self.dns.set(ADDRS[:2])
        beta_port = free_port()
        with open(self.mc.config_path) as f:
            text = f.read()
        with open(self.mc.config_path, "w") as f:
            f.write(text + "beta:\n  listen: %s:%d\n  hash: murmur\n  servers_dns: "
                    "mc2.mcring.test:%d\n  dns_resolver: 127.0.0.1:%d\n  dns_interval: 200\n"
                    % (HOST, beta_port, self.mc_port, self.dns.port))
        self.mc.proc.send_signal(signal.SIGHUP)
        rec = await_true(lambda: self.dns_reloads(), 5, "the reload made by the answer")[0]
        all_records = parse_reloads(self.raw_stats(b"reloads"))
        print("\n  reload adding a discovered pool: %s"
              % "; ".join("%s %s %s" % (r["source"], r["result"], r.get("diff") or r.get("error"))
                          for r in all_records))
        self.assertEqual(rec["result"], "applied")
        self.assertIn("beta", rec["diff"])
        refused = [r for r in all_records if r["source"] in ("signal", "file")]
        self.assertTrue(refused, all_records)
        self.assertEqual(refused[0]["result"], "failed")
        self.assertIn("servers_dns mc2.mcring.test:%d: no answer yet" % self.mc_port,
                      refused[0]["error"])
        # beta serves from its discovered servers; alpha kept its own.
        with self.conn(beta_port) as c:
            set_many_raw(c, [(k.encode(), b"b") for k in self.KEYS[:100]])
        on = {a: len(self.backends[a].get_many(self.KEYS[:100])) for a in ADDRS}
        self.assertEqual(on["127.0.0.2"] + on["127.0.0.3"], 0, on)
        self.assertEqual(on["127.0.0.4"] + on["127.0.0.5"], 100, on)

    def test_srv_records_give_servers_ports_and_weights(self):
        srv = "_memcache._tcp.mcring.test"
        self.start([], srv=srv, remove_after=2,
                   others={"mc-a.mcring.test": ["127.0.0.2"], "mc-b.mcring.test": ["127.0.0.3"]},
                   dns_args=["--srv-host=%s,mc-a.mcring.test,%d,0,3" % (srv, self.mc_port),
                             "--srv-host=%s,mc-b.mcring.test,%d,0,1" % (srv, self.mc_port)])
        self.assertTrue(self.log_has(r"servers_srv %s: added 127\.0\.0\.2:%d 127\.0\.0\.3:%d"
                                     % (re.escape(srv), self.mc_port, self.mc_port)))
        first = self.holders()
        # A target's address changes (its hosts entry): the new one joins, the old one leaves
        # after dns_remove_after answers, as for servers_dns.
        self.dns.others["mc-b.mcring.test"] = ["127.0.0.4"]
        self.dns.set([])
        recs = await_true(lambda: len(self.dns_reloads()) >= 2 and self.dns_reloads(), 5,
                          "the SRV target's move")
        after = self.holders()
        print("\n  SRV (weights 3 and 1): keys on 127.0.0.2/3: %d/%d; target mc-b moved to "
              "127.0.0.4: %s; then keys on 127.0.0.2/3/4: %d/%d/%d"
              % (first["127.0.0.2"], first["127.0.0.3"], "; ".join(r["diff"] for r in recs),
                 after["127.0.0.2"], after["127.0.0.3"], after["127.0.0.4"]))
        self.assertGreater(first["127.0.0.3"], 0)
        self.assertGreater(first["127.0.0.2"], 2 * first["127.0.0.3"])  # weight 3 against 1
        self.assertIn("+servers 1 (127.0.0.4:%d)" % self.mc_port, recs[0]["diff"])
        self.assertIn("-servers 1 (127.0.0.3:%d)" % self.mc_port, recs[1]["diff"])
        self.assertEqual(after["127.0.0.3"], 0)
        self.assertGreater(after["127.0.0.2"], 2 * after["127.0.0.4"])

    def test_first_answer_needed_to_start(self):
        self.dns = Dnsmasq(self.tmp, ADDRS[:1])
        self.addCleanup(self.dns.stop)
        path = os.path.join(self.tmp, "nx.yml")
        with open(path, "w") as f:
            f.write("alpha:\n  listen: 127.0.0.1:%d\n  servers_dns: nope.mcring.test:%d\n"
                    "  dns_resolver: 127.0.0.1:%d\n  dns_interval: 200\n"
                    % (free_port(), self.mc_port, self.dns.port))
        r = subprocess.run([MCRING_BIN, "-c", path, "-s", "0"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=30)
        out = r.stdout.decode(errors="replace")
        print("\n  start with an NXDOMAIN name: exit %d: %s" % (r.returncode, out.strip()[-200:]))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("servers_dns nope.mcring.test:%d: no good answer yet (last: no such name "
                      "(NXDOMAIN))" % self.mc_port, out)
        self.assertIn("needs its first DNS answer to start", out)

    def test_route_and_plan_resolve_a_discovered_pool(self):
        """`mcring route` and `mcring plan` resolve a discovered pool's name once, as the proxy
        does at start: route's answers are where the proxy put the keys, plan compares the
        name's servers with a listed set; a name that does not resolve is an error naming the
        pool and what to do."""
        self.start(ADDRS[:3])
        for b in self.backends.values():
            b.flush()
        keys = self.KEYS[:60]
        with self.conn(self.mc.port) as c:
            set_many_raw(c, [(k.encode(), b"v") for k in keys])
        held = {}
        for a, b in self.backends.items():
            for k in b.get_many(keys):
                held[k.decode()] = "%s:%d" % (a, self.mc_port)
        r = run_mcring(["route", "-c", self.mc.config_path, "--pool", "alpha"] + keys)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        said = dict(line.split("\t")[:2] for line in r.stdout.decode().splitlines())
        agree = sum(1 for k in keys if said.get(k) == held.get(k))
        print("\n  mcring route over servers_dns (3 addresses): %d of %d keys where the proxy "
              "put them" % (agree, len(keys)))
        self.assertEqual(agree, len(keys), (said, held))
        # plan: the discovered pool against the same pool with a fourth server listed.
        with open(self.mc.config_path) as f:
            old = f.read()
        listed = re.sub(r"  servers_dns: .*\n",
                        "  servers: [%s]\n" % ", ".join("%s:%d:1" % (a, self.mc_port)
                                                        for a in ADDRS), old)
        listed = re.sub(r"  dns_[a-z_]+: .*\n", "", listed)
        new_path = os.path.join(self.tmp, "listed.yml")
        with open(new_path, "w") as f:
            f.write(listed)
        r = run_mcring(["plan", "--json", self.mc.config_path, new_path])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        plan = json.loads(r.stdout)["pools"][0]
        print("  mcring plan, servers_dns (3) -> 4 listed: moved %.3f, before %s" %
              (plan["plan"]["moved"], plan["before"]["servers"]))
        self.assertEqual(len(plan["before"]["servers"]), 3)
        self.assertGreater(plan["plan"]["moved"], 0.1)
        self.assertLess(plan["plan"]["moved"], 0.4)
        # A routed listener over the discovered pool.
        routed = old.replace("alpha:\n  listen: %s:%d\n" % (HOST, self.mc.port), "alpha:\n")
        routed += ("front:\n  listen: %s:%d\n  routes:\n    - prefix: 'dns:'\n      pool: alpha\n"
                   % (HOST, free_port()))
        routed_path = os.path.join(self.tmp, "routed.yml")
        with open(routed_path, "w") as f:
            f.write(routed)
        r = run_mcring(["route", "-c", routed_path, "--pool", "front", keys[0]])
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        print("  mcring route through a route:", r.stdout.decode().strip())
        self.assertEqual(r.stdout.decode().split("\t"),
                         [keys[0], "dns:", "alpha", held[keys[0]] + "\n"])
        # A name that does not resolve.
        nx_path = os.path.join(self.tmp, "nx.yml")
        with open(nx_path, "w") as f:
            f.write(old.replace("servers_dns: %s:" % NAME, "servers_dns: nope.mcring.test:"))
        r = run_mcring(["route", "-c", nx_path, "--pool", "alpha", keys[0]])
        err = r.stderr.decode(errors="replace")
        print("  mcring route, NXDOMAIN: exit %d:\n    %s" % (r.returncode, "\n    ".join(
            line for line in err.splitlines() if line.startswith("mcring route"))))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, b"")
        self.assertIn("pool 'alpha': servers_dns nope.mcring.test:%d: no good answer yet (last: "
                      "no such name (NXDOMAIN))" % self.mc_port, err)
        self.assertIn("run this where that name resolves", err)


if __name__ == "__main__":
    unittest.main()
