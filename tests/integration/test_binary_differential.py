"""The binary protocol, differentially: the same seeded stream of binary requests goes to a fresh
memcached directly and, through mcring, to another fresh memcached; the responses must be the
same bytes (status, opaque, cas, flags, keys, values, and which quiet requests answer).

The stream mixes every opcode mcring serves (quiet forms, cas taken from earlier responses,
getkq runs closed by noop, keys the text protocol cannot carry, large and too-large values),
pipelined in batches each closed by a noop. Excluded: stat (mcring's merged view adds its own
statistics) and opcodes memcached reads past (verbosity, unknown opcodes with a body: memcached
1.6.18 reads their body twice, see docs/design.md).

Counters stay within one number of digits (values 5000..9999, deltas up to 7): memcached pads a
decremented number that got shorter with spaces when it rewrites the item in place, and it does
so only when no other reference to the item is live, which depends on how the requests were
batched into reads: through a pipeline `getk k; decr k` memcached itself answers "5" where it
answers "5  " to the decr alone. mcring batches backend writes differently, so the padding may
differ; it is memcached's nondeterminism, not the protocol's."""

import base64
import json
import os
import random
import struct
import time
import unittest

from binary_wire import (ADD, ADDQ, APPEND, APPENDQ, DECR, DECRQ, DELETE, DELETEQ, FLUSH, FLUSHQ,
                         GAT, GATK, GATKQ, GATQ, GET, GETK, GETKQ, GETQ, INCR, INCRQ, NOOP,
                         PREPEND, PREPENDQ, REPLACE, REPLACEQ, SASL_LIST, SET, SETQ, TOUCH,
                         VERSION, BinaryConn, arith_extras, packet, parse, store_extras,
                         touch_extras)
from harness import HOST, Conn, IntegrationCase, Memcached, Mcring, admin_http, make_tmpdir, \
    remove_tmpdir, requires_proxy, server_line

SEED = int(os.environ.get("MCRING_BINARY_DIFF_SEED", "2126"))
BATCHES = int(os.environ.get("MCRING_BINARY_DIFF_BATCHES", "400"))
KEYS = [b"k%d" % i for i in range(16)] + [b"sp ace", b"ctl\x01\x7f", b"n1", b"n2",
                                          b"x" * 250]


class Stream:
    """Seeded requests; cas values are taken from the responses seen so far."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.cas_seen = [0]
        self.opaque = 0

    def value(self):
        r = self.rnd.random()
        if r < 0.01:
            return bytes(self.rnd.getrandbits(8) for _ in range(16)) * 8000
        if r < 0.015:
            return b"T" * (1024 * 1024 + self.rnd.randint(-300, 300))  # around the size limit
        if r < 0.2:
            return str(self.rnd.randint(10 ** 17, 10 ** 18) if self.rnd.random() < 0.1
                       else self.rnd.randint(5000, 9999)).encode()
        return bytes(self.rnd.choice(b"abcdefgh\r\n\x00 ") for _ in range(self.rnd.randint(0, 300)))

    def cas(self):
        r = self.rnd.random()
        if r < 0.6:
            return 0
        if r < 0.9:
            return self.rnd.choice(self.cas_seen[-20:])
        return self.rnd.randint(1, 10 ** 6)

    def next_opaque(self):
        self.opaque += 1
        return self.opaque

    def request(self):
        rnd = self.rnd
        key = rnd.choice(KEYS)
        o = self.next_opaque()
        op = rnd.choice([GET, GETQ, GETK, GETKQ, SET, SETQ, ADD, ADDQ, REPLACE, REPLACEQ, APPEND,
                         APPENDQ, PREPEND, PREPENDQ, DELETE, DELETEQ, INCR, INCRQ, DECR, DECRQ,
                         TOUCH, GAT, GATQ, GATK, GATKQ, SET, SET, GET, GETK, NOOP, VERSION,
                         SASL_LIST])
        if rnd.random() < 0.005:
            op = rnd.choice([FLUSH, FLUSHQ])
        if op in (GET, GETQ, GETK, GETKQ):
            return packet(op, key, opaque=o)
        if op in (SET, SETQ, ADD, ADDQ, REPLACE, REPLACEQ):
            return packet(op, key, self.value(), store_extras(rnd.getrandbits(32),
                          rnd.choice([0, 0, 3600, 100000])), opaque=o, cas=self.cas())
        if op in (APPEND, APPENDQ, PREPEND, PREPENDQ):
            return packet(op, key, self.value()[:100], opaque=o, cas=self.cas())
        if op in (DELETE, DELETEQ):
            return packet(op, key, opaque=o, cas=self.cas())
        if op in (INCR, INCRQ, DECR, DECRQ):
            return packet(op, rnd.choice([b"n1", b"n2", key]),
                          extras=arith_extras(rnd.choice([0, 1, 7]),
                                              rnd.randint(5000, 9999),
                                              rnd.choice([0, 0xffffffff, 1000])),
                          opaque=o, cas=self.cas())
        if op in (TOUCH, GAT, GATQ, GATK, GATKQ):
            return packet(op, key, extras=touch_extras(rnd.choice([0, 1000, 100000])), opaque=o)
        if op in (FLUSH, FLUSHQ):
            return packet(op, opaque=o)
        return packet(op, opaque=o)

    def batch(self):
        rnd = self.rnd
        parts = []
        if rnd.random() < 0.3:  # a multi-get the binary way
            parts += [packet(GETKQ, k, opaque=self.next_opaque())
                      for k in rnd.sample(KEYS, rnd.randint(2, 12))]
        parts += [self.request() for _ in range(rnd.randint(1, 30))]
        end = self.next_opaque()
        parts.append(packet(NOOP, opaque=end))
        return b"".join(parts), end

    def saw(self, responses):
        for r in responses:
            if r[3]:
                self.cas_seen.append(r[3])


@requires_proxy
class BinaryDifferentialTest(IntegrationCase):
    def test_seeded_stream_gets_memcacheds_bytes(self):
        direct_mc = Memcached()
        self.addCleanup(direct_mc.stop)
        backend = Memcached()
        self.addCleanup(backend.stop)
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        proxy = Mcring([server_line(backend.addr)], tmp, extra={"allow_flush_all": "true"})
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        direct = BinaryConn(direct_mc.port, timeout=20)
        self.addCleanup(direct.close)
        through = BinaryConn(proxy.port, timeout=20)
        self.addCleanup(through.close)
        stream = Stream(SEED)
        differences = []
        requests = 0
        for i in range(BATCHES):
            data, end = stream.batch()
            requests += len(parse(data)[0])  # requests share the responses' header layout
            direct.send(data)
            through.send(data)
            want = direct.until(end)
            got = through.until(end)
            stream.saw(want)
            if got != want:
                differences.append((i, [r for r in got if r not in want][:3],
                                    [r for r in want if r not in got][:3]))
        self.assertEqual(direct.raw, through.raw, "first differences: %r" % differences[:3])
        self.assertEqual(differences, [])
        self.assertGreater(len(stream.cas_seen), 100)
        self.assertGreater(requests, BATCHES * 10)


def exptime_cases():
    """(label, exptime) at memcached's boundaries: 0 is never, up to 30 days is relative, past it
    a Unix time, and the binary protocol's field is unsigned (2^31 and up, -1 = 2^32-1, are
    times after 2038, which memcached keeps)."""
    now = int(time.time())
    return [("0", 0), ("100 s", 100), ("30 days", 2592000), ("30 days + 1 (1970)", 2592001),
            ("now - 10", now - 10), ("now + 1000", now + 1000), ("2^31 - 1", 0x7fffffff),
            ("2^31", 0x80000000), ("2^31 + 1", 0x80000001), ("2^32 - 2", 0xfffffffe),
            ("-1 (2^32 - 1)", 0xffffffff)]


EXPTIME_OPS = ("set", "add", "replace", "touch", "gat", "gatq", "gatk", "incr")


def apply_exptime(c, op, key, exptime):
    """One binary request giving `key` the expiration `exptime`; returns its status (None: a
    quiet request that answered nothing)."""
    if op in ("replace", "touch", "gat", "gatq", "gatk"):
        assert c.call(SET, key, b"old", store_extras())[1] == 0
    if op in ("set", "add", "replace"):
        code = {"set": SET, "add": ADD, "replace": REPLACE}[op]
        return c.call(code, key, b"v", store_extras(0, exptime))[1]
    if op == "incr":
        return c.call(INCR, key, extras=arith_extras(1, 5, exptime))[1]
    code = {"touch": TOUCH, "gat": GAT, "gatq": GATQ, "gatk": GATK}[op]
    c.send(packet(code, key, extras=touch_extras(exptime), opaque=1) + packet(NOOP, opaque=2))
    got = c.until(2)
    return got[0][1] if len(got) == 2 else None


def ttl_of(t, key):
    """`mg <key> t`: None if the key is gone, else its TTL (-1: never expires)."""
    r = t.request(b"mg " + key + b" t\r\n")
    if r == b"EN\r\n":
        return None
    assert r.startswith(b"HD t"), r
    return int(r[4:].strip())


@requires_proxy
class BinaryExptimeTest(IntegrationCase):
    """Binary expiration times as memcached reads them: an unsigned 32-bit field, so 2^31 and up
    are Unix times after 2038 and the key is kept. Meta's T reads a signed 32-bit number (T2^31
    and up wrap negative: expired at once), so mcring sends the latest time T can carry,
    2^31 - 1 (2038-01-19), for those: the key is kept, and its TTL is memcached's less the
    seconds past 2038 (meta cannot name a later time; for -1, 2038 instead of 2106)."""

    def endpoints(self):
        direct_mc = Memcached()
        self.addCleanup(direct_mc.stop)
        backend = Memcached()
        self.addCleanup(backend.stop)
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        proxy = Mcring([server_line(backend.addr)], tmp)
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        return direct_mc.port, proxy.port

    def test_binary_exptimes_keep_or_expire_the_key_as_memcached(self):
        ports = self.endpoints()
        bins = []
        texts = []
        for port in ports:
            bins.append(BinaryConn(port))
            self.addCleanup(bins[-1].close)
            texts.append(Conn(HOST, port))
            self.addCleanup(texts[-1].close)
        cases = exptime_cases()
        direct, proxied = {}, {}
        mismatches = []
        for op in EXPTIME_OPS:
            for label, e in cases:
                key = b"exp:%s:%x" % (op.encode(), e)
                # Each case on both at once: an absolute time's TTL shrinks as the clock runs.
                for out, c, t in ((direct, bins[0], texts[0]), (proxied, bins[1], texts[1])):
                    status = apply_exptime(c, op, key, e)
                    out[(op, label)] = (status, ttl_of(t, key))
                (ds, dt), (ps, pt) = direct[(op, label)], proxied[(op, label)]
                print("%-7s %-20s direct status %s ttl %-11s mcring status %s ttl %s"
                      % (op, label, ds, dt, ps, pt))
                # The TTL mcring can give: memcached's, less the seconds past 2^31 - 1 (2038).
                want = dt if dt is None or dt == -1 else dt - max(0, e - 0x7fffffff)
                same = ds == ps and (dt is None) == (pt is None) and (
                    dt is None or (want == -1) == (pt == -1) and abs(want - pt) <= 1)
                if not same:
                    mismatches.append((op, label, (ds, dt), (ps, pt)))
        self.assertEqual(mismatches, [])
        # What the boundaries mean, as memcached itself answered (so the test checks something).
        self.assertEqual(direct[("set", "0")][1], -1)
        self.assertIsNone(direct[("set", "30 days + 1 (1970)")][1])
        self.assertIsNone(direct[("touch", "now - 10")][1])
        self.assertGreater(direct[("touch", "-1 (2^32 - 1)")][1], 2 ** 31)
        for label in ("2^31", "-1 (2^32 - 1)"):
            # (incr with -1 means "do not create": gone on both.)
            for op in EXPTIME_OPS if label == "2^31" else EXPTIME_OPS[:-1]:
                self.assertIsNotNone(direct[(op, label)][1], (op, label))
                self.assertIsNotNone(proxied[(op, label)][1], (op, label))


# Key contents: bytes a text key cannot hold (space, newline, NUL), bytes it can (control bytes,
# 0x7f, 0xff, tab, a carriage return inside), and both.
KEY_PATTERNS = {"space nul ff ctl": b" \x00\xff\x01", "newline": b"a\nb\rc",
                "ctl ff (no space)": b"k\x01\x7f\xff\t\r", "plain": b"key:"}
KEY_SIZES = (1, 186, 187, 188, 200, 249, 250)


def key_of(pattern, n, tag=b""):
    return (tag + pattern * 250)[:n]


def key_cases():
    return [(label, n, key_of(p, n, b"%d" % n)) for label, p in KEY_PATTERNS.items()
            for n in KEY_SIZES]


def without_cas(responses):
    return [(op, status, opaque, extras, key, value)
            for op, status, opaque, _cas, extras, key, value in responses]


def key_round_trip(c, key, i):
    """Every keyed opcode on `key`: the responses, cas left out (servers count cas apart)."""
    o = 100 * i
    c.send(packet(SET, key, b"v%d" % i, store_extras(i), opaque=o + 1) +
           packet(GETK, key, opaque=o + 2) +
           packet(APPEND, key, b"+", opaque=o + 3) +
           packet(PREPEND, key, b"-", opaque=o + 4) +
           packet(GETKQ, key, opaque=o + 5) +
           packet(TOUCH, key, extras=touch_extras(1000), opaque=o + 6) +
           packet(GATK, key, extras=touch_extras(0), opaque=o + 7) +
           packet(ADD, key, b"x", store_extras(), opaque=o + 8) +
           packet(REPLACE, key, b"10", store_extras(3), opaque=o + 9) +
           packet(INCR, key, extras=arith_extras(5, 0), opaque=o + 10) +
           packet(DECR, key, extras=arith_extras(1, 0), opaque=o + 11) +
           packet(GET, key, opaque=o + 12) +
           packet(DELETE, key, opaque=o + 13) +
           packet(GETK, key, opaque=o + 14) +
           packet(INCR, key, extras=arith_extras(1, 7, 0), opaque=o + 15) +
           packet(GETQ, key, opaque=o + 16) +
           packet(DELETEQ, key, opaque=o + 17) +
           packet(NOOP, opaque=o + 99))
    return without_cas(c.until(o + 99))


@requires_proxy
class BinaryKeyTest(IntegrationCase):
    """Binary keys of any bytes up to 250, as memcached takes them. A key with no space, newline
    or NUL goes to the servers as a text key as it is; one with such bytes goes base64 (`b`) while
    that fits meta's 250-byte token (up to 187 bytes); a longer one goes as a stand-in key (a
    digest of it). Each is routed by its own bytes, as the same key from a text client is."""

    def test_keys_up_to_250_bytes_of_any_bytes_work_as_in_memcached(self):
        direct_mc = Memcached()
        self.addCleanup(direct_mc.stop)
        cl = self.cluster(n_backends=3)
        direct = BinaryConn(direct_mc.port)
        self.addCleanup(direct.close)
        through = BinaryConn(cl.port)
        self.addCleanup(through.close)
        failures = []
        for i, (label, n, key) in enumerate(key_cases()):
            want = key_round_trip(direct, key, i)
            got = key_round_trip(through, key, i)
            print("%-18s %3d bytes: %s" % (label, n, "same" if got == want else "DIFFERENT"))
            if got != want:
                failures.append((label, n, [r for r in got if r not in want][:3]))
        self.assertEqual(failures, [])
        # As memcached answered (so the comparison compares something).
        self.assertEqual(want[0][:3], (SET, 0, 100 * i + 1))
        self.assertEqual(want[1][4:], (key, b"v%d" % i))
        # Two long keys one byte apart (a space, a NUL) are two items.
        x = key_of(b"x", 250)
        a, b = x[:100] + b" " + x[101:], x[:100] + b"\x00" + x[101:]
        for c in (direct, through):
            c.call(SET, a, b"A", store_extras())
            c.call(SET, b, b"B", store_extras())
            self.assertEqual((c.call(GET, a)[6], c.call(GET, b)[6]), (b"A", b"B"))
            # A too-large set takes the old value away, as memcached does.
            self.assertEqual(c.call(SET, a, b"z" * (2 << 20), store_extras())[1], 3)
            self.assertEqual((c.call(GET, a)[1], c.call(GET, b)[6]), (1, b"B"))
        # 251 bytes: memcached's "Invalid arguments", then it closes the connection.
        for port in (direct_mc.port, cl.port):
            c = BinaryConn(port)
            self.addCleanup(c.close)
            self.assertEqual(c.call(SET, b"k" * 251, b"v", store_extras(), opaque=5)[:3],
                             (SET, 4, 5))
            self.assertTrue(c.wait_closed())

    def test_a_binary_key_is_routed_by_its_own_bytes(self):
        cl = self.cluster(n_backends=3)
        c = BinaryConn(cl.port)
        self.addCleanup(c.close)
        t = self.conn(cl)
        # The same key from a text client finds what a binary client stored: as it is, and base64.
        for i in range(12):
            key = b"rt\x01\x7f\xff\t%d" % i
            self.assertEqual(c.call(SET, key, b"bin%d" % i, store_extras())[1], 0)
            self.assertEqual(t.request(b"get " + key + b"\r\n"),
                             b"VALUE %s 0 %d\r\nbin%d\r\nEND\r\n" % (key, len(b"bin%d" % i), i))
            spaced = b"sp ace %d\x00" % i
            self.assertEqual(c.call(SET, spaced, b"b", store_extras())[1], 0)
            self.assertEqual(t.request(b"mg " + base64.b64encode(spaced) + b" b v\r\n"),
                             b"VA 1\r\nb\r\n")
        # A long key that only a stand-in can carry: it lands on the server its own bytes route
        # to (the one /hotkeys names for it, from the same router), not its stand-in's.
        long_key = key_of(b" \x00\xff\x01", 250, b"hot")
        before = [int(b.stats()["curr_items"])
                  for b in cl.backends]
        self.assertEqual(c.call(SET, long_key, b"hot", store_extras())[1], 0)
        after = [int(b.stats()["curr_items"])
                 for b in cl.backends]
        holder = [i for i in range(3) if after[i] == before[i] + 1]
        self.assertEqual(len(holder), 1, (before, after))
        deadline = time.monotonic() + 15
        named = None
        while named is None and time.monotonic() < deadline:
            c.send(b"".join(packet(GET, long_key, opaque=j) for j in range(200)) +
                   packet(NOOP, opaque=999))
            self.assertEqual({r[6] for r in c.until(999)[:-1]}, {b"hot"})
            doc = json.loads(admin_http(cl.proxy.admin_port, path="/hotkeys")[1])
            rows = doc["pools"].get("alpha", [])
            if rows and rows[0]["count"] >= 200:
                named = rows[0]["backends"]
                # The key as counted: its own bytes (JSON: \u0000, \u00ff...), not a stand-in's.
                self.assertEqual(rows[0]["key"].encode("latin-1"), long_key)
        print("long key held by backend %d (%s); /hotkeys names %s"
              % (holder[0], cl.backends[holder[0]].addr, named))
        self.assertEqual(named, [cl.backends[holder[0]].addr])


if __name__ == "__main__":
    unittest.main()
