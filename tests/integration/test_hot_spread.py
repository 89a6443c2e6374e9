"""Hot-key spread (hot_key_spread): a hot key spread over several servers, against real memcached
backends and mcring with two worker threads.

- The issue's target: with hot_key_spread: 5 over 10 servers and 30% of requests on one key, the
  backends' own cmd_get deltas give max/mean <= 1.5 once the key's copies are filled (about 3.7
  without spread, which a second test shows with hot_key_spread: 0).
- A staleness checker: while the key is spread, a writer sets increasing versions of it (and
  sometimes deletes it) through mcring and readers on other connections (both workers) check
  that no read returns a version older than the last write whose reply arrived before the read
  was sent, and that a miss comes only after a delete.
- The cooling path: once the load stops the key collapses back; a new value written then is
  what mcring reads, although copies still hold older ones (asked directly).
"""

import json
import threading
import time
import unittest

from harness import IntegrationCase, admin_http, parse_stats, parse_values
from test_hot_keys import HOT, HotLoad

SPREAD = 5
BACKENDS = 10


def hotkeys(cluster):
    status, body = admin_http(cluster.proxy.admin_port, path="/hotkeys")
    assert status == 200, (status, body)
    return json.loads(body)


def spread_of(cluster, key=HOT):
    """The key's entry in the pool's spread set in force, or None."""
    for e in hotkeys(cluster)["spread"].get("alpha", []):
        if e["key"] == key.decode():
            return e["spread"]
    return None


def cmd_gets(cluster):
    return [int(b.stats()["cmd_get"]) for b in cluster.backends]


def ratio(before, after):
    d = [a - b for a, b in zip(after, before)]
    mean = sum(d) / len(d)
    return max(d) / mean if mean > 0 else 0.0, d


class SpreadCase(IntegrationCase):
    def start(self, spread):
        # Named servers: ketama places them by name, so the ring (and the figures) are the same
        # whatever ports the backends got. md5 (ketama's own hash): with fnv1a_64 the load's key
        # names (key:0 .. key:4999) alone spread 1.7% to 12% over the ten servers, which would
        # measure the hash, not the spread.
        self.cl = self.cluster(n_backends=BACKENDS, names=["s%d" % i for i in range(BACKENDS)],
                               hash="md5", extra={"hot_key_spread": spread},
                               args=["--threads", "2"])
        self.c = self.conn(self.cl, timeout=10)
        self.assertEqual(self.c.request(b"set " + HOT + b" 0 0 5\r\nhello\r\n"), b"STORED\r\n")

    def wait_spread(self, within_s=20, filled=True):
        """Polls /hotkeys until the key is spreading (with every copy filled); returns it."""
        deadline = time.time() + within_s
        sp = None
        while time.time() < deadline:
            sp = spread_of(self.cl)
            if sp and sp["phase"] == "spreading" and (not filled or all(sp["filled"])):
                return sp
            time.sleep(0.05)
        self.fail("key never spread with its copies filled: %r" % (sp,))

    def measure(self, seconds=2.0):
        before = cmd_gets(self.cl)
        time.sleep(seconds)  # the measured interval (no timing assertion)
        return ratio(before, cmd_gets(self.cl))


class SpreadBalanceTest(SpreadCase):
    def test_spread_five_over_ten_brings_max_mean_under_one_and_a_half(self):
        self.start(SPREAD)
        load = HotLoad(self.c, limit_s=40).start()
        try:
            sp = self.wait_spread()
            r, deltas = self.measure()
            # Reads per copy after the measured interval: the snapshot from the moment the last
            # copy was filled can show 0 reads on it yet (seen in make test under ASan).
            sp = spread_of(self.cl) or sp
        finally:
            load.finish()
        print("\nhot_key_spread: %d over %d servers, 30%% on one key: cmd_get max/mean %.2f %r; "
              "spread %r" % (SPREAD, BACKENDS, r, deltas, sp))
        self.assertEqual(len(sp["copies"]), SPREAD)
        self.assertEqual(len(set(sp["copies"])), SPREAD)
        self.assertTrue(all(n > 0 for n in sp["reads"]), sp)
        self.assertLessEqual(r, 1.5, deltas)
        st = parse_stats(self.conn(self.cl).request(b"stats\r\n"))
        self.assertGreater(int(st["spread_reads"]), 0)
        self.assertGreaterEqual(int(st["spread_fills"]), SPREAD - 1)
        line = self.conn(self.cl).request(b"stats hotkeys\r\n")
        self.assertIn(b"spread=spreading", line)

    def test_without_spread_the_hot_key_server_carries_several_times_the_mean(self):
        self.start(0)
        load = HotLoad(self.c, limit_s=40).start()
        try:
            # Wait for the key to be hot (listed first), as the spread test waits for its copies.
            deadline = time.time() + 10
            while time.time() < deadline:
                keys = hotkeys(self.cl)["pools"].get("alpha", [])
                if keys and keys[0]["key"] == HOT.decode() and keys[0]["share"] > 0.2:
                    break
                time.sleep(0.05)
            r, deltas = self.measure()
        finally:
            load.finish()
        print("\nhot_key_spread: 0 over %d servers, 30%% on one key: cmd_get max/mean %.2f %r"
              % (BACKENDS, r, deltas))
        self.assertIsNone(spread_of(self.cl))
        self.assertGreater(r, 2.5, deltas)


class SpreadEvennessTest(SpreadCase):
    """Issue #27: with hot_key_spread the key's own server often served far more reads than each
    copy (30,156 / 37,368 / 65,421 against 18,520 / 28,067 / 23,817 per copy over 5 s after 2 s
    of load). Reads of the key, counted by each memcached itself (get_hits: only the hot key is
    ever found, the load's other keys are never set), from the moment mcring's /hotkeys shows
    the key spreading, must be even over its copies, the primary included."""

    WINDOW_S = 3.0

    def test_reads_per_copy_within_ten_percent_once_spreading(self):
        self.start(SPREAD)
        load = HotLoad(self.c, limit_s=15).start()
        try:
            sp = self.wait_spread(within_s=10, filled=False)
            before = [int(b.stats()["get_hits"]) for b in self.cl.backends]
            time.sleep(self.WINDOW_S)  # the measured interval (no timing assertion)
            after = [int(b.stats()["get_hits"]) for b in self.cl.backends]
            sp_after = spread_of(self.cl)
        finally:
            load.finish()
        hits = {b.addr: a - c for b, a, c in zip(self.cl.backends, after, before)}
        per_copy = [hits[addr] for addr in sp["copies"]]
        print("\nhot key reads over %.0f s from the moment it was spreading, per copy (its own "
              "server first): %r; every server: %r; copies filled %r, reads since spread %r" %
              (self.WINDOW_S, per_copy, sorted(hits.values(), reverse=True),
               sp_after and sp_after["filled"], sp_after and sp_after["reads"]))
        self.assertEqual(len(per_copy), SPREAD)
        self.assertGreater(min(per_copy), 1000, per_copy)
        self.assertLessEqual(max(per_copy), 1.10 * min(per_copy), per_copy)


class History:
    """What the writer did: every operation's sequence number and kind, when it started and when
    its reply arrived."""

    def __init__(self):
        self.lock = threading.Lock()
        self.done = (0, "set")  # the last operation whose reply arrived: (seq, kind)
        self.started = 0        # the last operation sent
        self.deletes = set()    # seqs of deletes

    def floor(self):
        with self.lock:
            return self.done

    def deleted_between(self, lo, hi):
        with self.lock:
            return any(lo < d <= hi for d in self.deletes)


class StalenessTest(SpreadCase):
    READS = 4000      # per reader
    WRITES = 600

    def writer(self, conn, hist, stop):
        seq = 1  # version 1 is set by the test before the readers start
        for i in range(self.WRITES):
            if stop.is_set():
                break
            seq += 1
            delete = i % 10 == 4  # the last write is a set: the copies hold its value
            with hist.lock:
                hist.started = seq
                if delete:
                    hist.deletes.add(seq)
            if delete:
                reply = conn.request(b"delete " + HOT + b"\r\n")
                assert reply in (b"DELETED\r\n", b"NOT_FOUND\r\n"), reply
            else:
                v = b"v%d" % seq
                reply = conn.request(b"set " + HOT + b" 0 0 %d\r\n%s\r\n" % (len(v), v))
                assert reply == b"STORED\r\n", reply
            with hist.lock:
                hist.done = (seq, "delete" if delete else "set")
            time.sleep(0.004)  # room for fills between writes

    def reader(self, conn, hist, stop, out, mode, count=None):
        stale = misses = extra = hits = 0
        for i in range(count or self.READS):
            if stop.is_set():
                break
            floor_seq, floor_kind = hist.floor()
            if mode == "mg":
                reply = conn.request(b"mg " + HOT + b" v\r\n")
                value = reply.split(b"\r\n")[1] if reply.startswith(b"VA ") else None
            else:
                req = b"get " + HOT + (b" other:%d" % i if mode == "multi" else b"") + b"\r\n"
                vals = {k: v for k, v, _f, _c in parse_values(conn.request(req))}
                value = vals.get(HOT)
            with hist.lock:
                started = hist.started
            if value is None:
                misses += 1
                if floor_kind != "delete" and not hist.deleted_between(floor_seq, started):
                    extra += 1
            else:
                hits += 1
                if int(value[1:]) < floor_seq:
                    stale += 1
        out.append((mode, hits, misses, stale, extra))

    def test_no_read_returns_a_value_older_than_the_last_write(self):
        self.start(SPREAD)
        hist = History()
        self.assertEqual(self.c.request(b"set " + HOT + b" 0 0 2\r\nv1\r\n"), b"STORED\r\n")
        # Readers alone make the key hot (all requests are on it); wait for its copies.
        stop = threading.Event()
        warm = [self.conn(self.cl, timeout=10) for _ in range(2)]
        out = []
        # They read until the copies are filled (bounded: wait_spread's deadline stops them), not
        # a fixed count: on a fast machine a count ran out before the key had spread, the key
        # cooled, and it never did.
        pre = [threading.Thread(target=self.reader, args=(c, hist, stop, out, "get", 10 ** 6))
               for c in warm]
        for t in pre:
            t.start()
        try:
            self.wait_spread()
        finally:
            stop.set()
            for t in pre:
                t.join(30)
        stop = threading.Event()
        out = []
        # Four reader connections (round robin over the two workers) and the writer's.
        readers = [self.conn(self.cl, timeout=10) for _ in range(4)]
        modes = ["get", "mg", "multi", "get"]
        threads = [threading.Thread(target=self.reader, args=(c, hist, stop, out, m))
                   for c, m in zip(readers, modes)]
        wconn = self.conn(self.cl, timeout=10)
        w = threading.Thread(target=self.writer, args=(wconn, hist, stop))
        for t in threads:
            t.start()
        w.start()
        w.join(60)
        for t in threads:
            t.join(60)
        stop.set()
        sp = spread_of(self.cl)
        st = parse_stats(self.conn(self.cl).request(b"stats\r\n"))
        print("\nstaleness checker: %r; spread %r; spread_reads=%s fills=%s abandoned=%s "
              "mismatches=%s write_copies=%s" %
              (out, sp, st["spread_reads"], st["spread_fills"], st["spread_fills_abandoned"],
               st["spread_copy_mismatches"], st["spread_write_copies"]))
        self.assertEqual(len(out), len(readers))
        self.assertEqual(sum(o[3] for o in out), 0, out)  # stale reads
        self.assertEqual(sum(o[4] for o in out), 0, out)  # misses with no delete to explain them
        self.assertGreater(sum(o[1] for o in out), 0)
        self.assertGreater(int(st["spread_reads"]), 0)  # copies did serve reads
        self.assertGreater(int(st["spread_write_copies"]), 0)

        # Cooling: nothing reads the key any more; it collapses, then leaves the spread set.
        deadline = time.time() + 20
        while time.time() < deadline and spread_of(self.cl) is not None:
            time.sleep(0.1)
        self.assertIsNone(spread_of(self.cl), "never collapsed")
        final = b"final-value"
        self.assertEqual(self.c.request(b"set " + HOT + b" 0 0 %d\r\n%s\r\n" % (len(final), final)),
                         b"STORED\r\n")
        held = [b.get(HOT) for b in self.cl.backends]
        self.assertEqual(sum(1 for v in held if v == final), 1, held)  # the primary only
        old = [v for v in held if v is not None and v != final]
        # The writer's last set reached every copy; the collapsed key's write did not.
        self.assertEqual(len(old), SPREAD - 1, held)
        readers = [self.conn(self.cl, timeout=10) for _ in range(4)]
        for i in range(200):
            c = readers[i % len(readers)]
            vals = {k: v for k, v, _f, _c in parse_values(c.request(b"get " + HOT + b"\r\n"))}
            self.assertEqual(vals.get(HOT), final, "read %d" % i)
            reply = c.request(b"mg " + HOT + b" v\r\n")
            self.assertEqual(reply, b"VA %d\r\n%s\r\n" % (len(final), final), "mg %d" % i)
        print("cooling: copies still holding older values (never read): %d" % len(old))


class SpreadWriteFormsTest(SpreadCase):
    """Writes that reach only the key's own server (cas, ms with a base64 key, ma) unfill the
    copies: reads after them never see the older value; plain writes keep them filled."""

    def read_all(self, conns, n=40):
        seen = set()
        for i in range(n):
            c = conns[i % len(conns)]
            vals = {k: v for k, v, _f, _c in parse_values(c.request(b"get " + HOT + b"\r\n"))}
            seen.add(vals.get(HOT))
        return seen

    def test_cas_meta_and_base64_writes_are_never_read_stale(self):
        import base64
        self.start(SPREAD)
        stop = threading.Event()

        def reader():
            c = self.conn(self.cl, timeout=10)
            for _ in range(10 ** 6):  # until the test is done (it sets stop); not a count that
                if stop.is_set():     # can run out before the key has spread on a fast machine
                    break
                c.request(b"get " + HOT + b"\r\n")
        t = threading.Thread(target=reader)
        t.start()
        try:
            conns = [self.conn(self.cl, timeout=10) for _ in range(4)]
            self.wait_spread()
            # cas: the unique is the primary's.
            vals = parse_values(self.c.request(b"gets " + HOT + b"\r\n"))
            cas = vals[0][3]
            self.assertEqual(self.c.request(b"cas " + HOT + b" 0 0 4 %d\r\nc-v1\r\n" % int(cas)),
                             b"STORED\r\n")
            self.assertEqual(self.read_all(conns), {b"c-v1"})
            # ms with a base64 key (decoded, it is the spread key), once the copies hold c-v1.
            self.wait_spread()
            b64 = base64.b64encode(HOT)
            self.assertEqual(self.c.request(b"ms " + b64 + b" 4 b\r\nb-v2\r\n"), b"HD\r\n")
            self.assertEqual(self.read_all(conns), {b"b-v2"})
            # A plain set reaches every copy; once filled again, reads spread and stay fresh.
            self.assertEqual(self.c.request(b"set " + HOT + b" 0 0 4\r\ns-v3\r\n"),
                             b"STORED\r\n")
            self.assertEqual(self.read_all(conns), {b"s-v3"})
            self.wait_spread()
            self.assertEqual(self.read_all(conns), {b"s-v3"})
            held = [b.get(HOT) for b in self.cl.backends]
            self.assertEqual(sum(1 for v in held if v == b"s-v3"), SPREAD, held)
        finally:
            stop.set()
            t.join(30)
        st = parse_stats(self.conn(self.cl).request(b"stats\r\n"))
        self.assertGreaterEqual(int(st["spread_invalidations"]), 2)


if __name__ == "__main__":
    unittest.main()
