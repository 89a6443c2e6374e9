"""Binary-protocol clients through mcring, with real memcached servers behind it.

memcached decides a connection's protocol on its first byte (0x80: binary); so does mcring, and
serves the binary protocol on that connection, each packet translated to a meta command over the
same backend connections text clients use. Before, mcring read a binary client's packets as text
lines: a binary `set` whose value held `payload\\r\\ndelete victim\\r\\nset injected 0 0 3\\r\\n
yes\\r\\n` deleted `victim` and created `injected`; memcached stores the value as data, and now
mcring does too. Run with MCRING_TARGET=direct, the same assertions hold against memcached.
"""

import struct
import unittest

from binary_wire import (ADD, APPEND, DECR, DELETE, DELETEQ, FLUSH, FLUSHQ, GAT, GATK, GET,
                         GETK, GETKQ, GETQ, INCR, NOOP, PREPEND, QUIT, REPLACE, SASL_LIST, SET, SETQ, STAT,
                         TOUCH, VERSION, BinaryConn, arith_extras, packet, store_extras,
                         touch_extras)
from harness import IntegrationCase, requires_proxy, spread_keys

INJECTION = b"payload\r\ndelete victim\r\nset injected 0 0 3\r\nyes\r\n"


class BinaryProtocolTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.cl = self.cluster(n_backends=3, extra={"allow_flush_all": "true"})
        self.port = self.cl.port

    def bconn(self):
        c = BinaryConn(self.port)
        self.addCleanup(c.close)
        return c

    def test_binary_value_holding_text_commands_is_stored_as_data(self):
        with self.conn(self.cl) as t:
            self.assertEqual(t.request(b"set victim 0 0 2\r\nok\r\n"), b"STORED\r\n")
        c = self.bconn()
        op, status, opaque, cas, _, _, _ = c.call(SET, b"k", INJECTION, store_extras(), opaque=7)
        self.assertEqual((op, status, opaque), (SET, 0, 7))
        self.assertNotEqual(cas, 0)
        self.assertEqual(c.call(GET, b"k")[6], INJECTION)
        with self.conn(self.cl) as t:
            self.assertEqual(t.request(b"get victim injected\r\n"),
                             b"VALUE victim 0 2\r\nok\r\nEND\r\n")

    def test_each_opcode_round_trip(self):
        c = self.bconn()
        r = c.call(SET, b"a", b"one", store_extras(flags=9), opaque=1)
        self.assertEqual(r[:3], (SET, 0, 1))
        cas = r[3]
        self.assertEqual(c.call(GET, b"a", opaque=2), (GET, 0, 2, cas, struct.pack(">I", 9), b"", b"one"))
        self.assertEqual(c.call(GETK, b"a")[5:], (b"a", b"one"))
        self.assertEqual(c.call(GET, b"missing")[1:], (1, 0, 0, b"", b"", b"Not found"))
        self.assertEqual(c.call(GETK, b"missing")[1], 1)
        self.assertEqual(c.call(GETK, b"missing")[5], b"missing")
        self.assertEqual(c.call(ADD, b"a", b"x", store_extras())[1], 2)
        self.assertEqual(c.call(REPLACE, b"nope", b"x", store_extras())[1], 1)
        self.assertEqual(c.call(APPEND, b"a", b"+")[1], 0)
        self.assertEqual(c.call(PREPEND, b"a", b"-")[1], 0)
        self.assertEqual(c.call(GET, b"a")[6], b"-one+")
        # cas: a stale one conflicts, the current one wins.
        stale = cas
        now = c.call(GET, b"a")[3]
        self.assertEqual(c.call(SET, b"a", b"x", store_extras(), cas=stale)[1], 2)
        self.assertEqual(c.call(SET, b"a", b"two", store_extras(), cas=now)[1], 0)
        self.assertEqual(c.call(DELETE, b"a", cas=now)[1], 2)
        self.assertEqual(c.call(DELETE, b"a")[1], 0)
        self.assertEqual(c.call(DELETE, b"a")[1], 1)
        # incr/decr with an initial value, and without auto-creation.
        self.assertEqual(c.call(INCR, b"n", extras=arith_extras(5, 0, 0xffffffff))[1], 1)
        self.assertEqual(c.call(INCR, b"n", extras=arith_extras(5, 40))[6], struct.pack(">Q", 40))
        self.assertEqual(c.call(INCR, b"n", extras=arith_extras(5, 40))[6], struct.pack(">Q", 45))
        self.assertEqual(c.call(DECR, b"n", extras=arith_extras(100))[6], struct.pack(">Q", 0))
        c.call(SET, b"s", b"abc", store_extras())
        self.assertEqual(c.call(INCR, b"s", extras=arith_extras(1))[1], 6)
        # touch and gat
        self.assertEqual(c.call(TOUCH, b"s", extras=touch_extras(100))[1:2], (0,))
        self.assertEqual(c.call(GAT, b"s", extras=touch_extras(100))[6], b"abc")
        self.assertEqual(c.call(GATK, b"s", extras=touch_extras(100))[5:], (b"s", b"abc"))
        self.assertEqual(c.call(TOUCH, b"nope", extras=touch_extras(1))[1], 1)
        # version, noop, stat, SASL (memcached built without SASL: unknown command)
        self.assertRegex(c.call(VERSION)[6], rb"^\d+\.\d+\.\d+")
        self.assertEqual(c.call(NOOP, opaque=77)[:3], (NOOP, 0, 77))
        self.assertEqual(c.call(SASL_LIST)[1], 0x81)
        c.send(packet(STAT, opaque=5))
        got = []
        for _ in range(10000):
            r = c.read(1)[0]
            if not r[5]:
                break
            got.append(r[5])
        self.assertIn(b"pid", got)
        self.assertIn(b"curr_items", got)
        self.assertEqual(c.call(FLUSH)[1], 0)
        self.assertEqual(c.call(GET, b"s")[1], 1)

    def test_quiet_multiget_over_several_servers_comes_back_in_order(self):
        keys = spread_keys("bk", 30)
        c = self.bconn()
        c.send(b"".join(packet(SETQ, k, b"v-" + k, store_extras(i), opaque=i)
                        for i, k in enumerate(keys) if i % 3 != 0) + packet(NOOP, opaque=999))
        self.assertEqual(c.until(999), [(NOOP, 0, 999, 0, b"", b"", b"")])  # setq is silent
        if not self.cl.direct:
            owners = self.cl.owner_map([k for i, k in enumerate(keys) if i % 3 != 0])
            self.assertGreater(len({o[0] for o in owners.values()}), 1, "keys on one server")
        c.send(b"".join(packet(GETKQ, k, opaque=i) for i, k in enumerate(keys)) +
               packet(GETQ, b"bk-none", opaque=500) + packet(NOOP, opaque=1000))
        got = c.until(1000)
        expect = [(GETKQ, 0, i, k, b"v-" + k)
                  for i, k in enumerate(keys) if i % 3 != 0]
        self.assertEqual([(r[0], r[1], r[2], r[5], r[6]) for r in got[:-1]], expect)
        self.assertEqual(got[-1][:3], (NOOP, 0, 1000))
        # Quiet writes hide success, not errors.
        c.send(packet(DELETEQ, b"bk-none", opaque=3) + packet(NOOP, opaque=4))
        self.assertEqual([r[:3] for r in c.until(4)], [(DELETEQ, 1, 3), (NOOP, 0, 4)])

    def test_large_values_and_too_large(self):
        c = self.bconn()
        big = bytes(range(256)) * 2000  # 512,000 bytes
        self.assertEqual(c.call(SET, b"big", big, store_extras())[1], 0)
        self.assertEqual(c.call(GET, b"big")[6], big)
        r = c.call(SET, b"big", b"x" * (2 * 1024 * 1024), store_extras(), opaque=3)
        self.assertEqual(r[:3], (SET, 3, 3))
        self.assertEqual(r[6], b"Too large.")
        # More replies than the client's 16 MiB budget, pipelined: the head streams (its backend
        # connection waits for the client) rather than the rest being refused memory.
        mb = b"z" * (1000 * 1000)
        c.call(SET, b"mb", mb, store_extras())
        c.send(b"".join(packet(GETKQ, b"mb", opaque=100 + i) for i in range(24)) +
               packet(NOOP, opaque=999))
        got = c.until(999)
        self.assertEqual([(r[1], r[2], r[6] == mb) for r in got[:-1]],
                         [(0, 100 + i, True) for i in range(24)])
        # As memcached: the failed set took the old value away.
        self.assertEqual(c.call(GET, b"big")[1], 1)
        self.assertEqual(c.call(NOOP, opaque=8)[:3], (NOOP, 0, 8))

    def test_text_and_binary_clients_share_items(self):
        c = self.bconn()
        c.call(SET, b"shared", b"bin", store_extras(flags=42))
        with self.conn(self.cl) as t:
            self.assertEqual(t.request(b"get shared\r\n"), b"VALUE shared 42 3\r\nbin\r\nEND\r\n")
            self.assertEqual(t.request(b"set shared 5 0 4\r\ntext\r\n"), b"STORED\r\n")
        self.assertEqual(c.call(GET, b"shared")[4:], (struct.pack(">I", 5), b"", b"text"))
        # A key the text protocol cannot carry (it goes base64 to the server).
        self.assertEqual(c.call(SET, b"sp ace\x01", b"v", store_extras())[1], 0)
        self.assertEqual(c.call(GETK, b"sp ace\x01")[5:], (b"sp ace\x01", b"v"))

    def test_malformed_packets_get_memcacheds_answer_and_hurt_nobody(self):
        bystander = self.bconn()
        bystander.call(SET, b"by", b"stander", store_extras())
        # Half a request from the bystander stays pending while the others misbehave.
        half = packet(GET, b"by", opaque=11)
        bystander.send(half[:10])
        # Lengths that disagree (a get with extras): "Invalid arguments", then closed.
        c = self.bconn()
        c.send(packet(GET, b"k", extras=b"abcd", opaque=1) + packet(NOOP))
        self.assertEqual(c.read(1)[0][:3], (GET, 4, 1))
        self.assertTrue(c.wait_closed())
        # Key and extras longer than the body: "Unknown command", then closed.
        c = self.bconn()
        c.send(packet(GET, b"kk", body=1) + b"k")
        self.assertEqual(c.read(1)[0][1], 0x81)
        self.assertTrue(c.wait_closed())
        # Bad magic after the first packet: closed without an answer to it.
        c = self.bconn()
        c.send(packet(NOOP, opaque=1) + packet(NOOP, magic=0x81))
        self.assertEqual(c.read(1)[0][:3], (NOOP, 0, 1))
        self.assertTrue(c.wait_closed())
        self.assertEqual(c.buf, b"")
        # An oversized body: "Too large.", the body skipped as it arrives (never buffered).
        c = self.bconn()
        c.send(packet(SET, b"huge", b"x" * (20 * 1024 * 1024), store_extras(), opaque=6))
        self.assertEqual(c.read(1)[0][:3], (SET, 3, 6))
        bystander.send(half[10:])
        self.assertEqual(bystander.read(1)[0][:3], (GET, 0, 11))
        self.assertEqual(bystander.call(GET, b"by")[6], b"stander")

    def test_flush_delay_of_2_31_and_more_is_in_2038_or_later_not_now(self):
        # memcached reads the binary delay unsigned: 2^31 and -1 are times after 2038, nothing
        # is flushed now (text flush_all 2147483648 would flush at once).
        c = self.bconn()
        for delay in (0x7fffffff, 0x80000000, 0xffffffff):
            self.assertEqual(c.call(SET, b"fl", b"kept", store_extras())[1], 0)
            self.assertEqual(c.call(FLUSH, extras=touch_extras(delay))[1], 0)
            self.assertEqual(c.call(GET, b"fl")[1:2] + c.call(GET, b"fl")[6:], (0, b"kept"),
                             hex(delay))
        with self.conn(self.cl) as t:
            self.assertEqual(t.request(b"flush_all 0\r\n"), b"OK\r\n")

    def test_quit_answers_then_closes(self):
        c = self.bconn()
        c.send(packet(NOOP, opaque=1) + packet(QUIT, opaque=2) + packet(NOOP, opaque=3))
        self.assertEqual([r[:3] for r in c.read(2)], [(NOOP, 0, 1), (QUIT, 0, 2)])
        self.assertTrue(c.wait_closed())
        self.assertEqual(c.buf, b"")


@requires_proxy
class BinaryFlushPolicyTest(IntegrationCase):
    def test_flush_under_the_default_policy_is_refused_as_memcached_dash_F_refuses_it(self):
        cl = self.cluster(n_backends=2)  # allow_flush_all: false (the default)
        c = BinaryConn(cl.port)
        self.addCleanup(c.close)
        c.call(SET, b"keep", b"me", store_extras())
        for op in (FLUSH, FLUSHQ):
            self.assertEqual(c.call(op, opaque=4)[:3], (op, 0x20, 4))
        self.assertEqual(c.call(GET, b"keep")[6], b"me")


if __name__ == "__main__":
    unittest.main()
