"""Stateful differential fuzzer: seeded sequences of text and meta requests (diff_fuzz.py: what
is generated, and what is left out and why) are sent to one memcached directly and to mcring in
front of another memcached started the same way (-m 1024 -o no_lru_crawler,no_lru_maintainer,
default -I 1m); every batch's replies must be byte-identical, and every key's value, flags, CAS
presence and TTL (diff_fuzz.CLOCK_SLACK seconds of slack) must match on both sides every 100 batches and at the end.

MCRING_DIFF_SEED and MCRING_DIFF_COMMANDS choose the run (make test: a fixed seed, 20,000
requests; `make differential`: a longer one, a new seed each time). A difference fails the test
with the seed, the batch number, its requests and both replies; replay a seed with
MCRING_DIFF_SEED=<seed> to reproduce it.
"""

import os
import time
import unittest

import diff_fuzz
from harness import (HOST, SANITIZED, Conn, IntegrationCase, Mcring, Memcached, make_tmpdir,
                     remove_tmpdir, requires_proxy, server_line)

SEED = int(os.environ.get("MCRING_DIFF_SEED", "20261202"))
COMMANDS = int(os.environ.get("MCRING_DIFF_COMMANDS", "20000"))
STATE_EVERY = 100  # batches between two comparisons of every key's state
MEMCACHED_ARGS = ["-o", "no_lru_crawler,no_lru_maintainer"]
READ_TIMEOUT = 60 if SANITIZED else 20


def start_memcached():
    return Memcached(memory_mb=1024, extra_args=MEMCACHED_ARGS)


@requires_proxy
class DifferentialTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.ref = start_memcached()
        self.backend = start_memcached()
        # The generator sends flush_all. A 5 s backend timeout: the fuzzer reads memcached's
        # replies before mcring's, and a loaded machine (the sanitizer run) must not turn a
        # slow backend into SERVER_ERROR lines; timeouts are tested elsewhere.
        self.mc = Mcring([server_line(self.backend.addr)], self.tmp, timeout_ms=5000,
                         extra={"allow_flush_all": "true"})
        self.dump_log_on_failure(self.mc)
        self.conns = {}

    def tearDown(self):
        for c in self.conns.values():
            c.close()
        self.mc.stop()
        self.ref.stop()
        self.backend.stop()
        remove_tmpdir(self.tmp)
        super().tearDown()

    def connect(self):
        for c in self.conns.values():
            c.close()
        self.conns = {"ref": Conn(HOST, self.ref.port, timeout=READ_TIMEOUT),
                      "prx": Conn(HOST, self.mc.port, timeout=READ_TIMEOUT)}

    def exchange(self, data, end):
        """Sends data to both; returns both replies, read up to `end` or the connection's close."""
        for c in self.conns.values():
            c.send(data)
        out = {}
        for name, c in self.conns.items():
            out[name] = c.recv_until(lambda buf: buf.endswith(end), timeout=READ_TIMEOUT)
            out[name + "_eof"] = c.eof
        return out

    def compare_state(self, where):
        keys = diff_fuzz.STATE_KEYS
        req = diff_fuzz.state_request(keys)
        got = self.exchange(req, diff_fuzz.STATE_END)
        ref = diff_fuzz.parse_state(got["ref"], keys)
        prx = diff_fuzz.parse_state(got["prx"], keys)
        diffs = diff_fuzz.state_differences(ref, prx)
        if diffs:
            self.fail("seed %d, %s: stored state differs:\n  %s" % (SEED, where, "\n  ".join(diffs)))

    def test_random_sequences_match_memcached(self):
        gen = diff_fuzz.Generator(SEED)
        started = time.monotonic()
        sent = 0
        batches = 0
        reconnects = 0
        clock_slack = 0
        self.connect()
        while sent < COMMANDS:
            reqs, sentinel, end = gen.batch()
            batches += 1
            sent += len(reqs)
            data = b"".join(reqs) + sentinel
            got = self.exchange(data, end)
            want, have = got["ref"], got["prx"]
            gen.observe(want)
            if want != have:
                if not diff_fuzz.same_replies(want, have):
                    at = diff_fuzz.first_difference(want, have)
                    self.fail("seed %d, batch %d (requests %d..%d) differs at reply byte %d "
                              "(memcached %d bytes, mcring %d):\nrequests: %r\nmemcached: %r\n"
                              "mcring:    %r" % (
                                  SEED, batches, sent - len(reqs), sent, at, len(want), len(have),
                                  [r[:300] for r in reqs], want[max(0, at - 200):at + 300],
                                  have[max(0, at - 200):at + 300]))
                clock_slack += 1
            if got["ref_eof"] != got["prx_eof"]:
                self.fail("seed %d, batch %d: connection closed by %s only; requests: %r" % (
                    SEED, batches, "memcached" if got["ref_eof"] else "mcring",
                    [r[:300] for r in reqs]))
            if got["ref_eof"] or not want.endswith(end):
                reconnects += 1  # quit (or a close both made): a new connection to each
                self.connect()
            if batches % STATE_EVERY == 0:
                self.compare_state("after batch %d" % batches)
        self.compare_state("at the end")
        print("differential: seed %d, %d requests in %d batches, 0 differences (%d replies equal "
              "but for clock fields), %d reconnects, %.1f s" % (
                  SEED, sent, batches, clock_slack, reconnects, time.monotonic() - started))


@requires_proxy
class Issue16CasesTest(IntegrationCase):
    """Minimized reproductions of the differences the differential fuzzer found, each sent to a memcached
    directly and through mcring (one backend started the same way): same bytes back, same state
    after. The parser-level halves are unit tests (request_parser_test.cc, "found by the differential fuzzer")."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = make_tmpdir()
        cls.ref = start_memcached()
        cls.backend = start_memcached()
        cls.mc = Mcring([server_line(cls.backend.addr)], cls.tmp, timeout_ms=5000,
                        extra={"allow_flush_all": "true"})

    @classmethod
    def tearDownClass(cls):
        cls.mc.stop()
        cls.ref.stop()
        cls.backend.stop()
        remove_tmpdir(cls.tmp)

    def setUp(self):
        super().setUp()
        self.dump_log_on_failure(self.mc)
        self.a = self.conn(self.ref.port, timeout=READ_TIMEOUT)
        self.b = self.conn(self.mc.port, timeout=READ_TIMEOUT)
        self.both(b"flush_all\r\nmn\r\n")

    def both(self, data, end=b"MN\r\n"):
        """data to both sides; both replies up to `end`; asserts they are identical."""
        self.a.send(data)
        self.b.send(data)
        want = self.a.recv_until(lambda buf: buf.endswith(end))
        got = self.b.recv_until(lambda buf: buf.endswith(end))
        self.assertTrue(want.endswith(end), want[-200:])
        at = diff_fuzz.first_difference(want, got)
        self.assertEqual(want, got, "differ at byte %d of %d/%d: %r vs %r" % (
            at, len(want), len(got), want[at:at + 100], got[at:at + 100]))
        return want

    def test_case1_too_large_set_with_noreply_is_silent(self):
        # memcached answers nothing (its "object too large" obeys noreply) and unlinks the old
        # value; mcring answered SERVER_ERROR object too large for cache, which a noreply
        # client reads as the reply to its next command.
        self.both(b"set big0 0 0 3\r\nold\r\nmn\r\n")
        for n in (1048576, 1048577, diff_fuzz.BIG_VALUE_MAX + 1):
            r = self.both(b"set big0 0 0 %d noreply\r\n%s\r\nmn\r\nget big0\r\nmn\r\n"
                          % (n, b"x" * n), end=b"END\r\nMN\r\n")
            self.assertEqual(r, b"MN\r\nEND\r\nMN\r\n")

    def test_case2_ms_flags_checked_before_the_size(self):
        self.both(b"set big1 0 0 3\r\nold\r\nmn\r\n")
        r = self.both(b"ms big1 1048577 T0 c Mp F4294967295\r\n" + b"x" * 1048577 +
                      b"\r\nmn\r\n")
        self.assertEqual(r, b"CLIENT_ERROR invalid mode for ms M token\r\nMN\r\n")
        # A refused flag is no store attempt: the old value stays (mcring deleted it as for a
        # value too large).
        self.assertEqual(self.both(b"mg big1 v\r\nmn\r\n"), b"VA 3\r\nold\r\nMN\r\n")
        # The flag error also comes before a bad data block's (the fuzzer's first find).
        self.assertEqual(self.both(b"ms k5 0 C1 T0 E3\r\na\r\nmn\r\n"),
                         b"CLIENT_ERROR invalid flag\r\nERROR\r\nMN\r\n")

    def test_case3_bare_cr_inside_a_request_line(self):
        self.both(b"set k7 0 0 1\r\na\r\nset n0\rget 0 0 1\r\nb\r\nmn\r\n")
        r = self.both(b"get k7 n0\rget x\r\nmn\r\n")
        self.assertEqual(r, b"VALUE k7 0 1\r\na\r\nVALUE n0\rget 0 1\r\nb\r\nEND\r\nMN\r\n")

    def test_case4_numeric_drift_is_memcached_memory_not_the_proxy(self):
        # memcached 1.6.18 refuses to incr a stored value of 2^63 or more when a '-' left by a
        # freed item follows it in its slab chunk (safe_strtoull's strchr runs past the value).
        # With the same history on both servers mcring gets the same refusal: it forwards the
        # requests unchanged, and the fuzzer's drift came from the two servers' memory.
        fill = b"-" * 26
        self.both(b"".join(b"set z%d 0 0 26\r\n%s\r\n" % (i, fill) for i in range(50)) +
                  b"".join(b"delete z%d\r\n" % i for i in range(50)) + b"mn\r\n")
        r = self.both(b"".join(b"set z%d 0 0 19\r\n9223372036854775808\r\nincr z%d 1\r\n"
                               % (i, i) for i in range(50)) + b"mn\r\n")
        self.assertEqual(r.count(b"CLIENT_ERROR cannot increment or decrement non-numeric value"),
                         50)
        # Under 2^63, or with no such garbage, incr and decr at the 64-bit edges agree.
        r = self.both(b"set n1 0 0 19\r\n9223372036854775807\r\nincr n1 0\r\n"
                      b"decr n1 18446744073709551615\r\nincr n1 18446744073709551615\r\n"
                      b"incr n1 1\r\nmn\r\n")
        self.assertEqual(r, b"STORED\r\n9223372036854775807\r\n0\r\n18446744073709551615\r\n"
                            b"0\r\nMN\r\n")

    def test_case5_huge_multiget_read_late(self):
        # A 60-key get with many ~1 MB values, its reply read only after the reference's
        # (as the fuzzer reads): mcring closed a client that read nothing for 1 s while its
        # backend connection waited, though no other client waited behind it.
        v = b"V" * 1000000
        self.both(b"".join(b"set big%d 0 0 %d\r\n%s\r\n" % (i, len(v), v) for i in range(3)) +
                  b"mn\r\n")
        # 21 MB: past the client's 16 MiB output limit, so mcring pauses the backend connection.
        keys = [b"k%d" % (i % 8) for i in range(39)] + [b"big0", b"big1", b"big2"] * 7
        line = b"get " + b" ".join(keys) + b"\r\nmn\r\n"
        self.a.send(line)
        self.b.send(line)
        want = self.a.recv_until(lambda buf: buf.endswith(b"END\r\nMN\r\n"))
        time.sleep(1.5)  # mcring's stall limit is 1 s: the wait is what is tested
        got = self.b.recv_until(lambda buf: buf.endswith(b"END\r\nMN\r\n"))
        self.assertGreater(len(want), 21000000)
        self.assertEqual(len(got), len(want))
        self.assertEqual(got, want)
        self.assertTrue(self.b.alive())


if __name__ == "__main__":
    unittest.main()
