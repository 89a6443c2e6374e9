"""Multi-key retrieval split over 3 backends and reassembled in the client's key order."""

import random
import unittest

from harness import DIRECT, SharedClusterCase, parse_values, requires_proxy, set_many_raw, spread_keys

N = 1000


def value_for(i):
    # Varied sizes (0 .. ~3 KB) and bytes that look like protocol.
    if i % 97 == 0:
        return b""
    if i % 31 == 0:
        return b"END\r\nVALUE x 0 1\r\n" * (i % 7 + 1)
    return (b"v%d-" % i) * (1 + (i * 7919) % 300)


class MultiGetTest(SharedClusterCase):
    CLUSTER_ARGS = {"n_backends": 3}

    def setUp(self):
        super().setUp()
        self.c = self.conn(self.cl, timeout=20)
        self.keys = [k + b"x" * (i % 13) for i, k in enumerate(spread_keys("mget:", N))]
        self.values = {k: value_for(i) for i, k in enumerate(self.keys)}
        self.flags = {k: (i * 2654435761) % 2**32 for i, k in enumerate(self.keys)}
        self.c.send(b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k, self.flags[k], len(v), v)
                             for k, v in self.values.items()))
        replies = self.c.read_replies(N, timeout=30)
        self.assertEqual(replies, [b"STORED\r\n"] * N)
        self.owners = self.cl.owner_map(self.keys)

    def request_keys(self):
        """The client's order: shuffled hits, misses and duplicates interleaved."""
        rnd = random.Random(12345)
        order = list(self.keys)
        rnd.shuffle(order)
        out = []
        for i, k in enumerate(order):
            out.append(k)
            if i % 10 == 0:
                out.append(b"miss:%d" % i)
            if i % 17 == 0:
                out.append(order[rnd.randrange(len(order))])  # duplicate of some key
        out.append(out[0])
        return out

    def expected(self, req_keys):
        return [(k, self.values[k], self.flags[k]) for k in req_keys if k in self.values]

    def test_keys_spread_over_every_backend(self):
        self.assertEqual(sorted(self.owners), sorted(self.keys))
        self.assertTrue(all(len(v) == 1 for v in self.owners.values()), "a key on 2 backends")
        counts = [sum(1 for v in self.owners.values() if v == [i]) for i in range(len(self.cl.backends))]
        if not DIRECT:
            self.assertEqual(len(counts), 3)
            self.assertTrue(all(c > N // 10 for c in counts), "uneven spread: %r" % counts)

    def test_get_1000_keys_in_client_order(self):
        req_keys = self.request_keys()
        self.assertGreater(len(req_keys), 1150)
        reply = self.c.request(b"get " + b" ".join(req_keys) + b"\r\n", timeout=30)
        got = [(k, v, f) for k, v, f, cas in parse_values(reply)]
        self.assertEqual(len(got), len(self.expected(req_keys)))
        self.assertEqual(got, self.expected(req_keys))
        exact = b"".join(b"VALUE %s %d %d\r\n%s\r\n" % (k, f, len(v), v)
                         for k, v, f in self.expected(req_keys)) + b"END\r\n"
        self.assertEqual(reply, exact)
        self.assertTrue(self.c.alive())

    def test_gets_1000_keys_cas_matches_backends(self):
        req_keys = self.request_keys()
        reply = self.c.request(b"gets " + b" ".join(req_keys) + b"\r\n", timeout=30)
        vals = parse_values(reply)
        self.assertEqual([(k, v, f) for k, v, f, _ in vals], self.expected(req_keys))
        self.assertTrue(all(cas is not None for *_, cas in vals))
        # Each cas is the one its backend reports directly.
        direct = {}
        for i, bk in enumerate(self.cl.backends):
            mine = [k for k in self.keys if self.owners[k] == [i]]
            with bk.conn(timeout=20) as d:
                for j in range(0, len(mine), 200):
                    for k, _, _, cas in parse_values(d.request(b"gets " + b" ".join(mine[j:j + 200])
                                                             + b"\r\n")):
                        direct[k] = cas
        self.assertEqual({k: cas for k, _, _, cas in vals}, {k: direct[k] for k, *_ in vals})

    def chunks(self, keys, max_line=1900):
        out, cur, size = [], [], 0
        for k in keys:
            if cur and size + len(k) + 1 > max_line:
                out.append(cur)
                cur, size = [], 0
            cur.append(k)
            size += len(k) + 1
        return out + ([cur] if cur else [])

    def test_gat_and_gats_1000_keys_pipelined(self):
        # memcached closes a non-get line with no newline in its first 2048 bytes (only get/gets
        # may be longer), so gat/gats go as pipelined lines of < 2048 bytes each.
        req_keys = self.request_keys()
        for cmd in (b"gat", b"gats"):
            parts = self.chunks(req_keys)
            self.assertGreater(len(parts), 5)
            self.c.send(b"".join(b"%s 3600 %s\r\n" % (cmd, b" ".join(p)) for p in parts))
            replies = self.c.read_replies(len(parts), timeout=30)
            vals = [v for r in replies for v in parse_values(r)]
            self.assertEqual([(k, v, f) for k, v, f, _ in vals], self.expected(req_keys))
            self.assertTrue(all((cas is not None) == (cmd == b"gats") for *_, cas in vals))

    @requires_proxy
    def test_gat_1000_keys_one_line(self):
        # mcring accepts retrieval lines (get/gets/gat/gats) up to 1 MiB, and sends a long gat to
        # each server as lines under 2048 bytes (memcached closes a longer one that arrives split).
        req_keys = self.request_keys()
        reply = self.c.request(b"gat 3600 " + b" ".join(req_keys) + b"\r\n", timeout=30)
        self.assertEqual([(k, v, f, cas) for k, v, f, cas in parse_values(reply)],
                         [(k, v, f, None) for k, v, f in self.expected(req_keys)])
        reply = self.c.request(b"gats 3600 " + b" ".join(req_keys) + b"\r\n", timeout=30)
        vals = parse_values(reply)
        self.assertEqual([(k, v, f) for k, v, f, _ in vals], self.expected(req_keys))
        self.assertTrue(all(cas is not None for *_, cas in vals))

    def test_all_misses_and_single_backend(self):
        self.assertEqual(self.c.request(b"get " + b" ".join(b"nope%d" % i for i in range(500))
                                        + b"\r\n"), b"END\r\n")
        # Keys that all live on one backend, with misses around them.
        mine = [k for k in self.keys if self.owners[k] == [0]][:50]
        req = [b"nope-a"] + mine + [b"nope-b"]
        reply = self.c.request(b"get " + b" ".join(req) + b"\r\n")
        self.assertEqual([(k, v, f) for k, v, f, _ in parse_values(reply)], self.expected(req))

    def test_pipelined_multigets(self):
        # Several multi-gets in one write, each answered whole and in order.
        reqs = [self.keys[i:i + 100][::-1] + [b"miss%d" % i] for i in range(0, N, 100)]
        self.c.send(b"".join(b"get " + b" ".join(r) + b"\r\n" for r in reqs))
        replies = self.c.read_replies(len(reqs), timeout=30)
        self.assertEqual(len(replies), len(reqs))
        for r, reply in zip(reqs, replies):
            self.assertEqual([(k, v, f) for k, v, f, _ in parse_values(reply)], self.expected(r))

    def test_big_values_multiget(self):
        big = {k: bytes([65 + i % 26]) * (20000 + i) for i, k in enumerate(spread_keys("big:", 200))}
        set_many_raw(self.c, big, batch=50, timeout=30)
        order = list(big)[::-1]
        reply = self.c.request(b"get " + b" ".join(order) + b"\r\n", timeout=30)
        self.assertEqual([(k, v) for k, v, _, _ in parse_values(reply)], [(k, big[k]) for k in order])


if __name__ == "__main__":
    unittest.main()
