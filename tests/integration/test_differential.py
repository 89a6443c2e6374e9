"""Stateful differential fuzzer: seeded sequences of text and meta requests (diff_fuzz.py: what
is generated, and what is left out and why) are sent to one memcached directly and to mcring in
front of another memcached started the same way (-m 1024 -o no_lru_crawler,no_lru_maintainer,
default -I 1m); every batch's replies must be byte-identical, and every key's value, flags, CAS
presence and TTL (one second of slack) must match on both sides every 100 batches and at the end.

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
        # The generator sends flush_all.
        self.mc = Mcring([server_line(self.backend.addr)], self.tmp,
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
        got = self.exchange(req, b"MN\r\n")
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
              "up to a clock second), %d reconnects, %.1f s" % (
                  SEED, sent, batches, clock_slack, reconnects, time.monotonic() - started))


if __name__ == "__main__":
    unittest.main()
