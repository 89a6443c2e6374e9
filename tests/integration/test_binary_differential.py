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

import os
import random
import struct
import unittest

from binary_wire import (ADD, ADDQ, APPEND, APPENDQ, DECR, DECRQ, DELETE, DELETEQ, FLUSH, FLUSHQ,
                         GAT, GATK, GATKQ, GATQ, GET, GETK, GETKQ, GETQ, INCR, INCRQ, NOOP,
                         PREPEND, PREPENDQ, REPLACE, REPLACEQ, SASL_LIST, SET, SETQ, TOUCH,
                         VERSION, BinaryConn, arith_extras, packet, parse, store_extras,
                         touch_extras)
from harness import IntegrationCase, Memcached, Mcring, make_tmpdir, remove_tmpdir, \
    requires_proxy, server_line

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


if __name__ == "__main__":
    unittest.main()
