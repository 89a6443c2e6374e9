"""A fourth outside attack, on what the previous round fixed or added: binary keys and exptimes,
replication, hot-key spread. Each test failed on the build it was written against (7f303f1).

- A binary TOUCH on a replicated pool (`replicas: 2`) changes the TTL on one replica only: mcring
  sends it as `mg <key> f c T<exp>`, a read, which goes to the key's first replica. README lists
  touch among the writes that go to every replica (only a binary *gat* and `mg ... T` are
  documented as touching the replica they read). After a failover the other replica expires the
  key at its old time (a TTL extended by a binary client is lost), or keeps serving a key the
  client told to expire.
- `gat` of a hot key that is spread (`hot_key_spread`) goes to one filled copy, like a get: the
  new TTL reaches that copy only, never the key's own server. `gat 1 <key>` is answered, and
  three seconds later the key still reads through mcring (memcached: a miss), and the key's own
  server still holds it with its old TTL (none). `gats` goes to the key's own server only, and
  the copies, filled before, keep serving the value after it expired there. `mg <key> T1`,
  `touch` and the binary TOUCH/GAT on the same key are handled (the key is gone).

The same attack found that clients that pipeline gets of a large value and read nothing hold up
other clients' reads of that server, each for the 1 s after which a non-reading client is
closed, one after another (20 of them: another client's get waited about 20 s). That is the
known limit README's Status describes; it is not fixed, so it has no test here yet.
"""

import threading
import time

import binary_wire as bw
from harness import IntegrationCase, parse_values, run_mcring
from test_hot_keys import HOT
from test_hot_spread import SpreadCase


def ttl_at(backend, key):
    """The key's remaining TTL on one memcached, asked directly (-1: none), or None if absent."""
    with backend.conn() as c:
        reply = c.request(b"mg " + key + b" t\r\n")
    if not reply.startswith(b"HD"):
        return None
    return int(reply.split(b" t")[1].split()[0])


class BinaryTouchReplicasTest(IntegrationCase):
    def test_binary_touch_reaches_every_replica(self):
        cl = self.cluster(n_backends=3, extra={"replicas": 2})
        c = self.conn(cl)
        key = b"touched-key"
        self.assertEqual(c.request(b"set " + key + b" 0 100 1\r\nv\r\n"), b"STORED\r\n")
        with bw.BinaryConn(cl.port) as bc:
            bc.send(bw.packet(bw.TOUCH, key, extras=bw.touch_extras(5000), opaque=7))
            op, status = bc.read(1)[0][:2]
        self.assertEqual((op, status), (bw.TOUCH, 0))
        ttls = [ttl_at(b, key) for b in cl.backends]
        print("\nbinary TOUCH 5000 after set with TTL 100, replicas: 2: TTL per backend %r" % ttls)
        held = [t for t in ttls if t is not None]
        self.assertEqual(len(held), 2, ttls)  # both replicas hold it
        # A text `touch` reaches both (checked here too, so the test shows the difference).
        key2 = b"touched-key-text"
        self.assertEqual(c.request(b"set " + key2 + b" 0 100 1\r\nv\r\n"), b"STORED\r\n")
        self.assertEqual(c.request(b"touch " + key2 + b" 5000\r\n"), b"TOUCHED\r\n")
        text_ttls = [t for t in (ttl_at(b, key2) for b in cl.backends) if t is not None]
        print("text touch 5000: TTL per replica %r" % text_ttls)
        self.assertTrue(all(t > 1000 for t in text_ttls), text_ttls)
        # The binary touch: every replica has the new TTL, not the old 100 s.
        self.assertTrue(all(t > 1000 for t in held), ttls)


class SpreadGatTest(SpreadCase):
    def test_gat_of_a_spread_key_sets_the_ttl_of_the_key_not_of_one_copy(self):
        self.expire_by(b"gat")

    def test_gats_of_a_spread_key_expires_its_copies_too(self):
        self.expire_by(b"gats")

    def expire_by(self, command):
        self.start(5)
        stop = threading.Event()

        def reader():  # keeps the key hot (bounded: the test sets stop; at most 10^6 reads)
            c = self.conn(self.cl, timeout=10)
            for _ in range(10 ** 6):
                if stop.is_set():
                    break
                c.request(b"get " + HOT + b"\r\n")
        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        try:
            self.assertEqual(self.c.request(b"set " + HOT + b" 0 0 5\r\nvalue\r\n"), b"STORED\r\n")
            self.wait_spread()
            reply = self.c.request(command + b" 1 " + HOT + b"\r\n")
            self.assertTrue(reply.startswith(b"VALUE " + HOT + b" 0 5"), reply)
            # memcached expires a key with TTL 1 within two seconds (its clock ticks once a
            # second); wait until then, with a second's margin.
            time.sleep(3.0)
            conns = [self.conn(self.cl) for _ in range(4)]
            hits = 0
            for i in range(40):
                vals = {k: v for k, v, _f, _c in
                        parse_values(conns[i % 4].request(b"get " + HOT + b"\r\n"))}
                hits += vals.get(HOT) is not None
            route = run_mcring(["route", "-c", self.cl.proxy.config_path, HOT.decode()])
            own = route.stdout.decode().split()[-1]  # a name: SpreadCase names them s0, s1, ...
            own_ttl = ttl_at(self.cl.backends[int(own[1:])], HOT)
            holders = sum(1 for b in self.cl.backends if b.get(HOT) is not None)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        print("\n%s 1 of a spread key, 3 s later: %d/40 gets through mcring hit; the key's own "
              "server %s holds it with TTL %r; %d backends hold it"
              % (command.decode(), hits, own, own_ttl, holders))
        self.assertEqual(hits, 0)
