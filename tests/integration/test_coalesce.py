"""coalesce_gets: the get/gets keys that many clients send to one server in one pass of mcring's
event loop share one get line; every client still gets exactly its own keys, in its order, and
sees its own writes. The replies are checked against what a sequential client is told by the
same mcring, and the counters show that lines were shared (otherwise this tests nothing)."""

import json
import random
import unittest

from harness import Cluster, IntegrationCase, admin_http, requires_proxy, spread_keys

CLIENTS = 24
ROUNDS = 6
KEYS = 300


def value_units(reply):
    """[(key, data)] of a get/gets reply; asserts it ends with END."""
    units, pos = [], 0
    while True:
        eol = reply.index(b"\r\n", pos)
        line = reply[pos:eol].split(b" ")
        if line == [b"END"]:
            assert eol + 2 == len(reply), reply
            return units
        assert line[0] == b"VALUE", reply
        n = int(line[3])
        units.append((line[1], reply[eol + 2:eol + 2 + n]))
        pos = eol + 2 + n + 2


def counters(cluster):
    return json.loads(admin_http(cluster.proxy.admin_port, "GET", "/stats")[1])["counters"]


@requires_proxy
class CoalesceGetsTest(IntegrationCase):

    def start(self, coalesce):
        cl = Cluster(n_backends=3, extra={"coalesce_gets": "true" if coalesce else "false"})
        self.addCleanup(cl.close)
        setup = self.conn(cl, timeout=20)
        self.keys = spread_keys("co:", KEYS)
        # A third of the keys are never stored (misses); values vary in size and look like
        # protocol.
        self.stored = {k: (b"END\r\nVALUE %s 0 1\r\n" % k) * (i % 5) + b"v%d" % i
                       for i, k in enumerate(self.keys) if i % 3}
        setup.send(b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k, i, len(v), v)
                            for i, (k, v) in enumerate(self.stored.items())))
        self.assertEqual(setup.read_replies(len(self.stored), timeout=20),
                         [b"STORED\r\n"] * len(self.stored))
        return cl, setup

    def requests(self, rnd):
        """One client's pipeline: get/gets of 1-4 keys, hits, misses and duplicates."""
        out = []
        for _ in range(20):
            cmd = b"gets" if rnd.random() < 0.25 else b"get"
            ks = [rnd.choice(self.keys) for _ in range(rnd.choice((1, 1, 1, 2, 4)))]
            if rnd.random() < 0.2:
                ks.append(ks[0])
            out.append(cmd + b" " + b" ".join(ks) + b"\r\n")
        return out

    def run_clients(self, cl, setup):
        """Every client sends its whole pipeline before any reply is read, so that mcring finds
        them all readable at once; each reply must equal the sequential one."""
        rnd = random.Random(2026)
        conns = [self.conn(cl, timeout=20) for _ in range(CLIENTS)]
        rounds = [[self.requests(rnd) for _ in conns] for _ in range(ROUNDS)]
        expected = {}
        for pipelines in rounds:
            for pipe in pipelines:
                for req in pipe:
                    if req not in expected:
                        expected[req] = setup.request(req, timeout=10)
        before = counters(cl)
        for pipelines in rounds:
            for c, pipe in zip(conns, pipelines):
                c.send(b"".join(pipe))
            for c, pipe in zip(conns, pipelines):
                got = c.read_replies(len(pipe), timeout=20)
                self.assertEqual(len(got), len(pipe))
                for req, rep in zip(pipe, got):
                    self.assertEqual(rep, expected[req], req)
        after = counters(cl)
        # The sequential answers themselves are right: a VALUE with the stored bytes for each
        # stored key, in the request's order, duplicates included, then END.
        for req, rep in expected.items():
            want = [k for k in req.split()[1:] if k in self.stored]
            self.assertEqual(value_units(rep), [(k, self.stored[k]) for k in want], req)
        return (len(expected), after["backend_get_lines"] - before["backend_get_lines"],
                after["backend_requests"] - before["backend_requests"])

    def test_clients_get_their_own_keys_from_shared_lines(self):
        cl, setup = self.start(True)
        distinct, lines, fragments = self.run_clients(cl, setup)
        print("\ncoalesce_gets: %d backend requests in %d get lines (%.1f per line); %d distinct"
              " requests checked" % (fragments, lines, fragments / max(lines, 1), distinct))
        self.assertGreater(lines, 0)
        self.assertGreater(fragments, lines * 1.5, "lines were hardly shared: %d requests in %d lines"
                           % (fragments, lines))

    def test_off_sends_a_line_per_request(self):
        cl, setup = self.start(False)
        _, lines, fragments = self.run_clients(cl, setup)
        self.assertEqual(lines, 0)
        self.assertGreater(fragments, 0)
        self.assertEqual(counters(cl)["backend_get_lines"], 0)

    def test_a_client_sees_its_own_writes_between_shared_gets(self):
        """A write ends the line being built for its server, so a get after it is never sent
        before it, whatever other clients' gets of the same key are in flight."""
        cl, setup = self.start(True)
        k = self.keys[1]
        others = [self.conn(cl, timeout=20) for _ in range(8)]
        writer = self.conn(cl, timeout=20)
        for i in range(50):
            v1, v2 = b"one-%d" % i, b"two-%d" % i
            for o in others:
                o.send(b"get %s\r\n" % k)
            writer.send(b"get %s\r\nset %s 0 0 %d\r\n%s\r\nget %s\r\ndelete %s\r\nget %s\r\n"
                        b"set %s 0 0 %d\r\n%s\r\ngets %s\r\n"
                        % (k, k, len(v1), v1, k, k, k, k, len(v2), v2, k))
            for o in others:
                self.assertTrue(o.read_reply(timeout=10).endswith(b"END\r\n"))
            got = writer.read_replies(7, timeout=10)
            self.assertEqual(got[1], b"STORED\r\n")
            self.assertEqual(got[2], b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(v1), v1))
            self.assertEqual(got[3], b"DELETED\r\n")
            self.assertEqual(got[4], b"END\r\n")
            self.assertEqual(got[5], b"STORED\r\n")
            self.assertTrue(got[6].startswith(b"VALUE %s 0 %d " % (k, len(v2))), got[6])
            self.assertTrue(got[6].endswith(b"\r\n%s\r\nEND\r\n" % v2), got[6])


if __name__ == "__main__":
    unittest.main()
