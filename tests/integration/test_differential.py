"""Differential test: random sequences of valid and invalid commands sent to a memcached directly
and to mcring in front of an identical memcached must get byte-identical replies.

Documented differences are left out of the generator: `version` and `stats` (the proxy answers
them), lines over 2048 bytes (closed by both,
with an error line first from mcring), and reply fields that depend on the wall clock (TTL and
last-access flags, `me`), which could differ by a second between the two servers. Retrieval commands
never carry a key over 250 bytes: memcached 1.6.18 then answers CLIENT_ERROR *and drops the
replies of the requests before it in the same read* (a memcached quirk mcring does not copy:
it answers every earlier request).

MCRING_DIFF_SEED and MCRING_DIFF_COMMANDS choose the run (CI: a fixed seed, 3,000 commands;
`make differential` runs a longer one).
"""

import os
import random
import unittest

from harness import (HOST, Conn, IntegrationCase, Mcring, Memcached, make_tmpdir, remove_tmpdir,
                     requires_proxy, server_line)

SEED = int(os.environ.get("MCRING_DIFF_SEED", "20261129"))
COMMANDS = int(os.environ.get("MCRING_DIFF_COMMANDS", "3000"))
BATCH = 25


class Generator:
    """Commands as bytes, drawn from one seeded RNG so a failure can be replayed."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.keys = [b"k%d" % i for i in range(12)] + [b"x" * 250, b"y" * 251, b"\xc3\xa9t\xc3\xa9",
                                                      b"{tag}a", b"a:b:c"]

    def key(self):
        return self.r.choice(self.keys)

    def value(self):
        n = self.r.choice([0, 1, 2, 5, 10, 100, 1000])
        return bytes(self.r.choice(b"abcdefghij") for _ in range(n))

    def num(self):
        return self.r.choice([b"0", b"1", b"42", b"-1", b"abc", b"18446744073709551615",
                              b"18446744073709551616", b"4294967295", b"99999999999999999999"])

    def noreply(self):
        return b" noreply" if self.r.random() < 0.15 else b""

    def storage(self):
        cmd = self.r.choice([b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        v = self.value()
        flags = self.r.choice([b"0", b"1", b"4294967295", b"abc"])
        exptime = self.r.choice([b"0", b"0", b"100000", b"-1"])
        length = b"%d" % len(v)
        if self.r.random() < 0.05:
            length = b"%d" % (len(v) + self.r.choice([-1, 1]))  # a bad data chunk
        cas = b" %d" % self.r.randint(0, 60) if cmd == b"cas" else b""
        return b"%s %s %s %s %s%s%s\r\n%s\r\n" % (cmd, self.key(), flags, exptime, length, cas,
                                                self.noreply(), v)

    def retrieval(self):
        cmd = self.r.choice([b"get", b"gets", b"gat", b"gats"])
        keys = b" ".join(k for k in (self.key() for _ in range(self.r.randint(1, 6)))
                         if len(k) <= 250) or b"k0"
        if cmd in (b"gat", b"gats"):
            return b"%s %s %s\r\n" % (cmd, self.r.choice([b"0", b"100000"]), keys)
        return b"%s %s\r\n" % (cmd, keys)

    def keyed(self):
        c = self.r.randint(0, 3)
        if c == 0:
            return b"delete %s%s\r\n" % (self.key(), self.noreply())
        if c == 1:
            return b"incr %s %s%s\r\n" % (self.key(), self.num(), self.noreply())
        if c == 2:
            return b"decr %s %s%s\r\n" % (self.key(), self.num(), self.noreply())
        return b"touch %s %s%s\r\n" % (self.key(), self.r.choice([b"0", b"100000"]),
                                       self.noreply())

    def meta(self):
        c = self.r.randint(0, 5)
        k = self.key()
        if c == 0:
            flags = self.r.sample([b"v", b"f", b"c", b"k", b"s", b"q", b"O77", b"N100000"],
                                  self.r.randint(0, 4))
            return b"mg %s %s\r\n" % (k, b" ".join(flags))
        if c == 1:
            v = self.value()
            flags = self.r.sample([b"F5", b"T0", b"q", b"c", b"k", b"O9", b"MA", b"MP", b"ME",
                                   b"MR", b"I"], self.r.randint(0, 3))
            return b"ms %s %d %s\r\n%s\r\n" % (k, len(v), b" ".join(flags), v)
        if c == 2:
            flags = self.r.sample([b"q", b"k", b"O1", b"I"], self.r.randint(0, 2))
            return b"md %s %s\r\n" % (k, b" ".join(flags))
        if c == 3:
            flags = self.r.sample([b"v", b"N0", b"J13", b"D5", b"MD", b"MI", b"q", b"c"],
                                  self.r.randint(0, 3))
            return b"ma %s %s\r\n" % (k, b" ".join(flags))
        # `me` is left out: its la= (seconds since last access) depends on the clock.
        return b"mn\r\n"

    def invalid(self):
        return self.r.choice([
            b"bogus\r\n", b"get\r\n", b"set k 0 0\r\n", b"set k a b c\r\nxx\r\n",
            b"incr\r\n", b"delete k 5\r\n", b"touch k\r\n", b"mg\r\n", b"ms k\r\n",
            b"\r\n", b"verbosity\r\n", b"flush_all bogus\r\n", b"gat abc k\r\n",
            b"ms k 2 b\r\nzz\r\n", b"mg YQ b v\r\n",
        ])

    def command(self):
        p = self.r.random()
        if p < 0.30:
            return self.storage()
        if p < 0.55:
            return self.retrieval()
        if p < 0.70:
            return self.keyed()
        if p < 0.90:
            return self.meta()
        if p < 0.98:
            return self.invalid()
        return self.r.choice([b"verbosity 1\r\n", b"flush_all\r\n", b"flush_all 0 noreply\r\n"])


@requires_proxy
class DifferentialTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.ref = Memcached()
        self.backend = Memcached()
        self.mc = Mcring([server_line(self.backend.addr)], self.tmp,
                         extra={"allow_flush_all": "true"})  # the generator sends flush_all

    def tearDown(self):
        self.mc.stop()
        self.ref.stop()
        self.backend.stop()
        remove_tmpdir(self.tmp)
        super().tearDown()

    def test_random_sequences_match_memcached(self):
        gen = Generator(SEED)
        sent = 0
        with Conn(HOST, self.ref.port, timeout=10) as ref, \
                Conn(HOST, self.mc.port, timeout=10) as prx:
            while sent < COMMANDS:
                batch = [gen.command() for _ in range(BATCH)]
                sent += len(batch)
                data = b"".join(batch) + b"mn\r\n"
                ref.send(data)
                prx.send(data)
                # Every mn (the generator's own, and the closing one) answers one MN line.
                mns = sum(1 for c in batch if c == b"mn\r\n") + 1

                def done(buf, mns=mns):
                    return buf.endswith(b"MN\r\n") and buf.count(b"MN\r\n") >= mns
                want = ref.recv_until(done, timeout=10)
                got = prx.recv_until(done, timeout=10)
                if got != want:
                    self.fail("seed %d, commands %d..%d differ:\nrequests: %r\nmemcached: %r\n"
                              "mcring:    %r" % (SEED, sent - len(batch), sent, data[:3000],
                                                 want[:3000], got[:3000]))
        print("differential: %d commands (seed %d), replies identical" % (sent, SEED))


if __name__ == "__main__":
    unittest.main()
