"""Replication (replicas: N): writes to every replica, the reply policies, cas/incr/add semantics,
read failover (per key in multi-gets), read_failover_on_miss, counters, and the chaos cases:
kill -9 of a backend under load and its restart, and a SIGSTOPped backend whose keys are
overwritten and deleted meanwhile (return_flush: it never serves them again).

Real memcached processes on loopback ports chosen at run time; every process is stopped by PID.
"""

import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import (HOST, Conn, IntegrationCase, admin_http, make_tmpdir, parse_stats,  # noqa: E402
                     parse_values, pool_yaml, remove_tmpdir, run_mcring, set_cmd, spread_keys)

SANITIZED = os.environ.get("MCRING_SANITIZED") == "1"


def wait_until(pred, timeout=15.0, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("%s not reached within %.0f s" % (what, timeout))


class ReplicationCase(IntegrationCase):

    THREADS = None  # worker threads (None: mcring's default)

    def start(self, replicas=2, n=3, timeout_ms=1000, extra=None):
        extra = dict(extra or {})
        extra.setdefault("replicas", replicas)
        args = ("--threads", str(self.THREADS)) if self.THREADS else ()
        self.cl = self.cluster(n_backends=n, timeout_ms=timeout_ms, extra=extra, args=args)
        self.port = self.cl.port
        return self.cl

    def replica_sets(self, keys):
        """{key: [backend indexes]} from `mcring route` (the proxy's own router)."""
        out = run_mcring(["route", "-c", self.cl.proxy.config_path],
                         input_bytes=b"\n".join(keys) + b"\n")
        self.assertEqual(out.returncode, 0, out.stderr)
        index = {b.addr: i for i, b in enumerate(self.cl.backends)}
        sets = {}
        for line in out.stdout.decode().splitlines():
            parts = line.split("\t")
            sets[parts[0].encode()] = [index[a] for a in parts[1:] if a in index]
        self.assertEqual(len(sets), len(keys))
        return sets

    def holders(self, key):
        return [i for i, b in enumerate(self.cl.backends) if b.get(key) is not None]

    def backend_stats(self):
        with Conn(HOST, self.port) as c:
            return parse_stats(c.request(b"stats backends\r\n"))

    def bstat(self, st, i, field):
        return int(st.get("alpha:%s:%s" % (self.cl.backends[i].addr, field), "0"))


class TestWrites(ReplicationCase):

    def test_every_write_reaches_every_replica(self):
        self.start()
        keys = spread_keys("w", 12)
        sets = self.replica_sets(keys)
        for k in keys:
            self.assertEqual(len(sets[k]), 2)
        c = self.conn(self.port)
        k = keys[0]
        rs = sets[k]
        other = [i for i in range(3) if i not in rs][0]

        def on(i):
            return self.cl.backends[i].get(k)

        def both(v):
            # replica_write_reply: primary answers once the primary did: the other replica's
            # write may still be on its way.
            wait_until(lambda: [on(i) for i in rs] == [v, v], timeout=10,
                       what="%r on both replicas of %r" % (v, k))
            self.assertIsNone(on(other), "non-replica holds %r" % k)

        self.assertEqual(c.request(set_cmd(k, b"one")), b"STORED\r\n")
        both(b"one")
        self.assertEqual(c.request(set_cmd(k, b"x", cmd=b"add")), b"NOT_STORED\r\n")
        self.assertEqual(c.request(set_cmd(k, b"two", cmd=b"replace")), b"STORED\r\n")
        both(b"two")
        self.assertEqual(c.request(set_cmd(k, b">", cmd=b"append")), b"STORED\r\n")
        self.assertEqual(c.request(set_cmd(k, b"<", cmd=b"prepend")), b"STORED\r\n")
        both(b"<two>")
        self.assertEqual(c.request(b"touch " + k + b" 100\r\n"), b"TOUCHED\r\n")
        self.assertEqual(c.request(b"delete " + k + b"\r\n"), b"DELETED\r\n")
        both(None)
        self.assertEqual(c.request(b"delete " + k + b"\r\n"), b"NOT_FOUND\r\n")
        self.assertEqual(c.request(set_cmd(k, b"10")), b"STORED\r\n")
        self.assertEqual(c.request(b"incr " + k + b" 5\r\n"), b"15\r\n")
        self.assertEqual(c.request(b"decr " + k + b" 3\r\n"), b"12\r\n")
        both(b"12")
        # Classic noreply: silent, applied everywhere.
        c.send(set_cmd(k, b"quiet", noreply=True) + b"mn\r\n")
        self.assertEqual(c.read_reply(), b"MN\r\n")
        both(b"quiet")
        # Meta forms, quiet included.
        self.assertEqual(c.request(b"ms " + k + b" 4 T0 F5\r\nmeta\r\n"), b"HD\r\n")
        both(b"meta")
        self.assertEqual(c.requests(b"ms " + k + b" 5 q\r\nmetaq\r\nmn\r\n", 1), [b"MN\r\n"])
        both(b"metaq")
        self.assertEqual(c.request(b"ms " + k + b" 1 MA\r\n!\r\n"), b"HD\r\n")
        both(b"metaq!")
        self.assertEqual(c.request(b"ms " + k + b" 1\r\n7\r\n"), b"HD\r\n")
        self.assertEqual(c.request(b"ma " + k + b" D3 v\r\n"), b"VA 2\r\n10\r\n")
        both(b"10")
        self.assertEqual(c.request(b"md " + k + b" q\r\nmn\r\n"), b"MN\r\n")
        both(None)
        self.assertEqual(c.request(b"md " + k + b"\r\n"), b"NF\r\n")
        # Reads of every replica-written key answer through mcring.
        for kk in keys[1:]:
            self.assertEqual(c.request(set_cmd(kk, kk)), b"STORED\r\n")
        r = c.request(b"get " + b" ".join(keys[1:]) + b"\r\n")
        self.assertEqual([v[0] for v in parse_values(r)], keys[1:])
        for kk in keys[1:]:
            wait_until(lambda: sorted(self.holders(kk)) == sorted(sets[kk]), timeout=10,
                       what="%r on its replicas" % kk)

    def _add_where_replica_has_it(self, policy):
        self.start(extra={"replica_write_reply": policy})
        keys = spread_keys("a", 4)
        sets = self.replica_sets(keys)
        k = keys[0]
        primary, second = sets[k]
        # Only the second replica has the key (as after an earlier add race or a lost write).
        with self.cl.backends[second].conn() as d:
            self.assertEqual(d.request(set_cmd(k, b"theirs")), b"STORED\r\n")
        c = self.conn(self.port)
        reply = c.request(set_cmd(k, b"mine", cmd=b"add"))
        # Both replicas answered: the primary stored, the second refused.
        self.assertEqual(self.cl.backends[primary].get(k), b"mine")
        self.assertEqual(self.cl.backends[second].get(k), b"theirs")
        # Reads go to the primary: they return the primary's value.
        self.assertEqual(parse_values(c.request(b"get " + k + b"\r\n"))[0][1], b"mine")
        return reply

    def test_add_race_primary_policy(self):
        self.assertEqual(self._add_where_replica_has_it("primary"), b"STORED\r\n")

    def test_add_race_all_policy(self):
        # The worst reply: a refusal over a success.
        self.assertEqual(self._add_where_replica_has_it("all"), b"NOT_STORED\r\n")

    def _write_with_dead_replica(self, policy):
        self.start(extra={"replica_write_reply": policy})
        keys = spread_keys("d", 40)
        sets = self.replica_sets(keys)
        # A key whose second replica is backend 2, which dies.
        k = next(k for k in keys if sets[k][1] == 2)
        self.cl.backends[2].kill()
        c = self.conn(self.port)
        replies = [c.request(set_cmd(k, b"v%d" % i)) for i in range(3)]
        self.assertEqual(self.cl.backends[sets[k][0]].get(k), b"v2")
        # Classic noreply: silent either way (a failure is silent too, as for one server).
        c.send(set_cmd(k, b"nr", noreply=True) + b"mn\r\n")
        self.assertEqual(c.read_reply(), b"MN\r\n")
        self.assertEqual(self.cl.backends[sets[k][0]].get(k), b"nr")
        # Meta q: hides the success, never an error.
        first = c.request(b"ms " + k + b" 2 q\r\nmq\r\nmn\r\n")
        replies.append([first] + ([c.read_reply()] if first.startswith(b"SERVER_ERROR") else []))
        self.assertEqual(self.cl.backends[sets[k][0]].get(k), b"mq")
        st = self.backend_stats()
        self.assertGreaterEqual(self.bstat(st, 2, "replica_write_failures"), 3)
        self.assertEqual(self.bstat(st, sets[k][0], "replica_write_failures"), 0)
        return replies

    def test_dead_replica_primary_policy(self):
        replies = self._write_with_dead_replica("primary")
        self.assertEqual(replies[:3], [b"STORED\r\n"] * 3)
        self.assertEqual(replies[3][0], b"MN\r\n")

    def test_dead_replica_all_policy(self):
        replies = self._write_with_dead_replica("all")
        for r in replies[:3]:
            self.assertTrue(r.startswith(b"SERVER_ERROR backend"), r)
        self.assertTrue(replies[3][0].startswith(b"SERVER_ERROR backend"), replies[3])
        self.assertEqual(replies[3][1], b"MN\r\n")

    def test_dead_primary_write_takes_the_next_reply(self):
        self.start()
        keys = spread_keys("p", 40)
        sets = self.replica_sets(keys)
        k = next(k for k in keys if sets[k][0] == 1)
        self.cl.backends[1].kill()
        c = self.conn(self.port)
        self.assertEqual(c.request(set_cmd(k, b"alive")), b"STORED\r\n")
        self.assertEqual(self.cl.backends[sets[k][1]].get(k), b"alive")
        self.assertEqual(parse_values(c.request(b"get " + k + b"\r\n"))[0][1], b"alive")

    def test_cas_goes_to_the_primary_then_a_set_to_the_others(self):
        self.start()
        keys = spread_keys("c", 4)
        sets = self.replica_sets(keys)
        k = keys[0]
        primary, second = sets[k]
        c = self.conn(self.port)
        self.assertEqual(c.request(set_cmd(k, b"first", flags=7)), b"STORED\r\n")
        wait_until(lambda: self.cl.backends[second].get(k) == b"first", timeout=10,
                   what="the set at the second replica")
        # gets returns the primary's unique.
        (_, v, flags, unique), = parse_values(c.request(b"gets " + k + b"\r\n"))
        with self.cl.backends[primary].conn() as d:
            (_, _, _, primary_unique), = parse_values(d.request(b"gets " + k + b"\r\n"))
        self.assertEqual((v, flags, unique), (b"first", 7, primary_unique))
        # A stale unique: EXISTS, nothing changes anywhere.
        self.assertEqual(c.request(b"cas %s 7 0 3 %d\r\nbad\r\n" % (k, unique + 1000)),
                         b"EXISTS\r\n")
        self.assertEqual([self.cl.backends[i].get(k) for i in sets[k]], [b"first", b"first"])
        # The primary's unique: STORED, and the second replica gets the same value and flags.
        self.assertEqual(c.request(b"cas %s 9 0 6 %d\r\nsecond\r\n" % (k, unique)), b"STORED\r\n")
        wait_until(lambda: self.cl.backends[second].get(k) == b"second", what="cas copy")
        with self.cl.backends[second].conn() as d:
            (_, v2, f2, _), = parse_values(d.request(b"gets " + k + b"\r\n"))
        self.assertEqual((v2, f2), (b"second", 9))
        # ms with C: the same.
        (_, _, _, unique), = parse_values(c.request(b"gets " + k + b"\r\n"))
        self.assertEqual(c.request(b"ms %s 5 C%d\r\nthird\r\n" % (k, unique)), b"HD\r\n")
        wait_until(lambda: self.cl.backends[second].get(k) == b"third", what="ms C copy")
        self.assertEqual(c.request(b"ms %s 1 C1\r\nx\r\n" % k), b"EX\r\n")
        self.assertEqual(self.cl.backends[second].get(k), b"third")

    def test_incr_primary_value_answers(self):
        self.start()
        keys = spread_keys("n", 4)
        sets = self.replica_sets(keys)
        k = keys[0]
        primary, second = sets[k]
        c = self.conn(self.port)
        self.assertEqual(c.request(set_cmd(k, b"100")), b"STORED\r\n")
        # The replicas diverge (a lost write): incr goes to both, the primary's value answers.
        with self.cl.backends[second].conn() as d:
            self.assertEqual(d.request(set_cmd(k, b"500")), b"STORED\r\n")
        self.assertEqual(c.request(b"incr " + k + b" 1\r\n"), b"101\r\n")
        wait_until(lambda: self.cl.backends[second].get(k) == b"501", timeout=10,
                   what="the incr at the second replica")


class TestReadFailover(ReplicationCase):

    def test_multiget_fails_over_per_key_in_order(self):
        self.start(timeout_ms=500)
        keys = spread_keys("m", 60)
        sets = self.replica_sets(keys)
        c = self.conn(self.port)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"val-" + k, flags=3)), b"STORED\r\n")
        expected = b"".join(b"VALUE %s 3 %d\r\nval-%s\r\n" % (k, len(k) + 4, k) for k in keys)
        expected += b"END\r\n"
        self.assertEqual(c.request(b"get " + b" ".join(keys) + b"\r\n"), expected)
        on1 = [k for k in keys if sets[k][0] == 1]
        self.assertTrue(on1)
        self.cl.backends[1].kill()
        # Every key still hits, in the client's order, byte for byte: first while mcring learns
        # of the death (connection closed / refused), then while backend 1 is backing off.
        for _ in range(5):
            self.assertEqual(c.request(b"get " + b" ".join(keys) + b"\r\n"), expected)
        for k in on1[:3]:
            self.assertEqual(c.request(b"mg " + k + b" v f\r\n"),
                             b"VA %d f3\r\nval-%s\r\n" % (len(k) + 4, k))
            self.assertEqual(c.requests(b"mg " + k + b" v q\r\nmn\r\n", 2),
                             [b"VA %d\r\nval-%s\r\n" % (len(k) + 4, k), b"MN\r\n"])
        st = self.backend_stats()
        self.assertGreaterEqual(self.bstat(st, 1, "failover_reads"), len(on1))
        self.assertEqual(self.bstat(st, 0, "failover_reads") + self.bstat(st, 2, "failover_reads"), 0)
        status, body = admin_http(self.cl.proxy.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        line = [ln for ln in body.decode().splitlines()
                if ln.startswith("mcring_backend_failover_reads_total{")
                and self.cl.backends[1].addr in ln]
        self.assertTrue(line, "no failover_reads series for the dead backend")
        self.assertGreaterEqual(float(line[0].rsplit(" ", 1)[1]), len(on1))
        self.assertTrue(any(ln.startswith("mcring_backend_replica_write_failures_total{")
                            for ln in body.decode().splitlines()))

    def _no_replica_left(self, extra):
        self.start(extra=extra)
        keys = spread_keys("z", 40)
        sets = self.replica_sets(keys)
        k = next(k for k in keys if sorted(sets[k]) == [0, 1])
        live = next(k for k in keys if 2 in sets[k])
        c = self.conn(self.port)
        self.assertEqual(c.request(set_cmd(k, b"v")), b"STORED\r\n")
        self.assertEqual(c.request(set_cmd(live, b"w")), b"STORED\r\n")
        self.cl.backends[0].kill()
        self.cl.backends[1].kill()
        return c, k, live

    def test_no_replica_left_is_a_miss_by_default(self):
        """unavailable_reads: miss (the default) answers a key none of whose replicas is left
        as a miss, and serves the request's other keys."""
        c, k, live = self._no_replica_left({})
        self.assertEqual(c.request(b"get " + k + b"\r\n"), b"END\r\n")
        self.assertEqual(c.request(b"mg " + k + b" v\r\n"), b"EN\r\n")
        self.assertEqual(c.request(b"get " + k + b" " + live + b"\r\n"),
                         b"VALUE " + live + b" 0 1\r\nw\r\nEND\r\n")
        self.assertTrue(c.request(set_cmd(k, b"x")).startswith(b"SERVER_ERROR"))

    def test_no_replica_left_with_unavailable_reads_error(self):
        c, k, live = self._no_replica_left({"unavailable_reads": "error"})
        r = c.request(b"get " + k + b"\r\n")
        self.assertTrue(r.startswith(b"SERVER_ERROR backend"), r)
        r = c.request(b"mg " + k + b" v\r\n")
        self.assertTrue(r.startswith(b"SERVER_ERROR backend"), r)

    def _miss_at_primary(self, on_miss):
        extra = {"read_failover_on_miss": "true"} if on_miss else {}
        self.start(extra=extra)
        keys = spread_keys("q", 4)
        sets = self.replica_sets(keys)
        k = keys[0]
        with self.cl.backends[sets[k][1]].conn() as d:
            self.assertEqual(d.request(set_cmd(k, b"second-only")), b"STORED\r\n")
        c = self.conn(self.port)
        return c.request(b"get " + k + b"\r\n"), c.request(b"mg " + k + b" v\r\n")

    def test_miss_failover_on(self):
        got, mg = self._miss_at_primary(True)
        self.assertEqual(got, b"VALUE %s 0 11\r\nsecond-only\r\nEND\r\n" % spread_keys("q", 1)[0])
        self.assertEqual(mg, b"VA 11\r\nsecond-only\r\n")

    def test_miss_failover_off(self):
        got, mg = self._miss_at_primary(False)
        self.assertEqual((got, mg), (b"END\r\n", b"EN\r\n"))

    def test_multiget_miss_failover_per_key(self):
        self.start(extra={"read_failover_on_miss": "true"})
        keys = spread_keys("mm", 30)
        sets = self.replica_sets(keys)
        where = {}
        for j, k in enumerate(keys):
            kind = j % 3  # 0: on the primary only, 1: on the second only, 2: nowhere
            where[k] = kind
            if kind < 2:
                with self.cl.backends[sets[k][kind]].conn() as d:
                    self.assertEqual(d.request(set_cmd(k, b"at%d" % kind)), b"STORED\r\n")
        c = self.conn(self.port)
        expected = b"".join(b"VALUE %s 0 3\r\nat%d\r\n" % (k, where[k])
                            for k in keys if where[k] < 2) + b"END\r\n"
        self.assertEqual(c.request(b"get " + b" ".join(keys) + b"\r\n"), expected)
        st = self.backend_stats()
        total = sum(self.bstat(st, i, "failover_reads") for i in range(3))
        self.assertEqual(total, sum(1 for k in keys if where[k] > 0))  # one hop per primary miss

    def test_replicas_one_writes_one_server(self):
        self.start(replicas=1)
        keys = spread_keys("o", 20)
        c = self.conn(self.port)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"v")), b"STORED\r\n")
        time.sleep(0.2)  # a copy mcring sent in the background would have landed (there is none)
        for k in keys:
            self.assertEqual(len(self.holders(k)), 1)

    def test_contradictory_settings_refused(self):
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        cases = [({"replicas": 2, "hot_key_spread": 2}, "hot_key_spread"),
                 ({"replica_write_reply": "all"}, "replica_write_reply"),
                 ({"read_failover_on_miss": "true"}, "read_failover_on_miss"),
                 ({"replicas": 2, "replica_write_reply": "most"}, "replica_write_reply")]
        for extra, word in cases:
            path = os.path.join(tmp, "c.yml")
            with open(path, "w") as f:
                f.write(pool_yaml("alpha", 1, ["%s:%d:1" % (HOST, p) for p in (2, 3, 4)],
                                  extra=extra))
            res = run_mcring(["-t", "-c", path], timeout=10)
            self.assertNotEqual(res.returncode, 0, extra)
            self.assertIn(word, (res.stdout + res.stderr).decode(), extra)


class _DroppingForwarder:
    """A loopback TCP forwarder to a real memcached whose first `drops` connections are closed
    as soon as they carry a request: memcached closing a connection under a write."""

    def __init__(self, target_port, drops=1):
        import socket
        self.target = target_port
        self.drops = drops
        self.lsock = socket.socket()
        self.lsock.bind((HOST, 0))
        self.lsock.listen(16)
        self.port = self.lsock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        import socket
        self.lsock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                c, _ = self.lsock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if self.drops > 0:
                self.drops -= 1
                threading.Thread(target=self._drop, args=(c,), daemon=True).start()
            else:
                threading.Thread(target=self._pipe, args=(c,), daemon=True).start()

    @staticmethod
    def _drop(c):
        try:
            c.settimeout(10)
            c.recv(65536)
        except OSError:
            pass
        c.close()

    def _pipe(self, c):
        import selectors
        import socket
        try:
            u = socket.create_connection((HOST, self.target), timeout=5)
        except OSError:
            c.close()
            return
        sel = selectors.DefaultSelector()
        sel.register(c, selectors.EVENT_READ, u)
        sel.register(u, selectors.EVENT_READ, c)
        try:
            while not self.stop.is_set():
                for key, _ in sel.select(0.2):
                    d = key.fileobj.recv(65536)
                    if not d:
                        return
                    key.data.sendall(d)
        except OSError:
            pass
        finally:
            c.close()
            u.close()

    def close(self):
        self.stop.set()
        self.lsock.close()
        self.thread.join(5)


class TestClosedUnderWrite(IntegrationCase):

    def test_closed_connection_gets_an_md_not_a_flush(self):
        """memcached closing a connection under a replicated write (it may or may not have
        applied it): the key is deleted there on a fresh connection; the server is not flushed."""
        from harness import Mcring, Memcached, server_line
        a, b2 = Memcached(), Memcached()
        self.addCleanup(a.stop)
        self.addCleanup(b2.stop)
        fwd = _DroppingForwarder(b2.port, drops=0)
        self.addCleanup(fwd.close)
        tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, tmp)
        mc = Mcring([server_line(a.addr), server_line("%s:%d" % (HOST, fwd.port))], tmp,
                    extra={"replicas": 2})
        self.addCleanup(mc.stop)
        self.dump_log_on_failure(mc)
        c = self.conn(mc.port)
        # Both servers hold every key (replicas: 2 of 2). A value b2 keeps from before...
        self.assertEqual(c.request(set_cmd(b"kc", b"old")), b"STORED\r\n")
        wait_until(lambda: b2.get(b"kc") == b"old", timeout=10, what="the write at b2")
        # b2 restarts (mcring's idle connection to it closes) and gets the old value and
        # another key back directly; mcring's next connection is closed under its write.
        b2.restart()
        with b2.conn() as d:
            self.assertEqual(d.request(set_cmd(b"kc", b"old")), b"STORED\r\n")
            self.assertEqual(d.request(set_cmd(b"other", b"kept")), b"STORED\r\n")
        key = "alpha:%s:%d:connections" % (HOST, fwd.port)

        def closed():
            with Conn(HOST, mc.port) as d:
                return parse_stats(d.request(b"stats backends\r\n"))[key] == "0"
        wait_until(closed, timeout=10, what="mcring seeing its idle connection closed")
        fwd.drops = 1
        reply = c.request(set_cmd(b"kc", b"new"))
        self.assertEqual(reply, b"STORED\r\n")  # a's answer (primary policy)
        wait_until(lambda: b2.get(b"kc") != b"old", timeout=10, what="the md at b2")
        self.assertIsNone(b2.get(b"kc"))
        self.assertEqual(b2.get(b"other"), b"kept")  # deleted, not flushed
        with Conn(HOST, mc.port) as d:
            st = parse_stats(d.request(b"stats backends\r\n"))
        self.assertEqual(st["alpha:%s:%d:return_flushes" % (HOST, fwd.port)], "0")
        self.assertGreaterEqual(int(st["alpha:%s:%d:replica_write_failures" % (HOST, fwd.port)]), 1)


class TestEjectionReturn(ReplicationCase):

    def test_ejected_server_returns_flushed(self):
        """replicas: 1 with auto_eject_hosts: keys rerouted while a paused server was out of the
        ring are overwritten and deleted elsewhere; when it returns (it kept its memory), not
        one old value is read back."""
        import json
        self.start(replicas=1, timeout_ms=1500 if SANITIZED else 400,
                   extra={"auto_eject_hosts": "true", "server_failure_limit": 2,
                          "server_retry_timeout": 1000})
        keys = spread_keys("e", 300)
        c = self.conn(self.port, timeout=30)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"old")), b"STORED\r\n")
        mine = sorted(self.cl.backends[1].get_many(keys))
        self.assertGreater(len(mine), 20)
        self.cl.backends[1].pause()
        try:
            def ejected():
                # A get drives the failures that eject it; with unavailable_reads: miss (the
                # default) it answers END before and after, so the event tells.
                c.request(b"get " + mine[0] + b"\r\n", timeout=30)
                body = admin_http(self.cl.proxy.admin_port, path="/events")[1]
                return "eject" in [e["kind"] for e in json.loads(body)]
            wait_until(ejected, timeout=30, what="the ejection")
            model = {}
            for j, k in enumerate(mine[:30]):
                if j % 2:
                    self.assertEqual(c.request(b"delete " + k + b"\r\n"), b"NOT_FOUND\r\n")
                    model[k] = None
                else:
                    self.assertEqual(c.request(set_cmd(k, b"new")), b"STORED\r\n")
                    model[k] = b"new"
        finally:
            self.cl.backends[1].resume()

        def returned():
            body = admin_http(self.cl.proxy.admin_port, path="/events")[1]
            return [e["kind"] for e in json.loads(body)] == ["eject", "return"]
        deadline = time.monotonic() + 30
        seen_return = False
        while time.monotonic() < deadline and not seen_return:
            seen_return = returned()
            got = {k: v for k, v, _f, _c in
                   parse_values(c.request(b"get " + b" ".join(mine[:30]) + b"\r\n"))}
            for k in mine[:30]:
                self.assertNotEqual(got.get(k), b"old", k)
            time.sleep(0.05)
        self.assertTrue(seen_return, "the server never returned")
        # Back in the ring: its keys are its own again, and it was flushed before serving them.
        for _ in range(3):
            got = {k: v for k, v, _f, _c in
                   parse_values(c.request(b"get " + b" ".join(mine) + b"\r\n"))}
            for k in mine:
                self.assertNotEqual(got.get(k), b"old", k)
        st = self.backend_stats()
        self.assertGreaterEqual(self.bstat(st, 1, "return_flushes"), 1)


import test_binary_protocol as _binary  # noqa: E402  (a module name: not collected twice)


class TestRefusedReplicaWrite(ReplicationCase):

    def test_an_item_a_replica_refuses_is_deleted_there_and_nothing_is_flushed(self):
        """A replica that answers SERVER_ERROR to a write (too large for its -I, out of memory
        under -M) is reachable and lost one item: that key is deleted there (an md), the
        server is not flushed. (Found by the outside attack: one noreply set of 1 MiB, which
        mcring's item_size_max lets through and memcached -I 1m refuses, emptied both
        replicas with flush_all.)"""
        self.start()
        keys = spread_keys("keep", 90)
        c = self.conn(self.port, timeout=30)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"v")), b"STORED\r\n")
        self.assertEqual(c.request(set_cmd(b"grow", b"old")), b"STORED\r\n")
        held = sum(len(b.get_many(keys)) for b in self.cl.backends)
        self.assertEqual(held, 2 * len(keys))
        # memcached counts the item header and key against -I 1m, mcring's item_size_max only
        # the value: every replica refuses it.
        big = b"x" * 1048576
        self.assertEqual(c.request(b"set grow 0 0 1048576 noreply\r\n" + big + b"\r\nmn\r\n"),
                         b"MN\r\n")
        self.assertTrue(c.request(b"set grow 0 0 1048576\r\n" + big + b"\r\n")
                        .startswith(b"SERVER_ERROR"))
        # Nothing else was lost, no server was flushed, and no replica serves the old value.
        self.assertEqual(c.request(b"mn\r\n"), b"MN\r\n")
        wait_until(lambda: all(b.get(b"grow") is None for b in self.cl.backends),
                   what="the refused key deleted on every replica")
        self.assertEqual(sum(len(b.get_many(keys)) for b in self.cl.backends), held)
        for b in self.cl.backends:
            self.assertEqual(int(b.stats()["cmd_flush"]), 0)
        self.assertEqual(c.request(b"get grow\r\n"), b"END\r\n")
        st = self.backend_stats()
        self.assertGreater(sum(self.bstat(st, i, "replica_write_failures") for i in range(3)), 0)
        self.assertEqual(sum(self.bstat(st, i, "return_flushes") for i in range(3)), 0)


class TestGatReplicated(ReplicationCase):

    def test_gat_sets_the_ttl_on_every_replica(self):
        """gat/gats read one replica; the others get the same TTL (a touch), so a failover
        after it does not serve a key the client told to expire (found by the outside attack:
        the primary expired it, the second replica still served it)."""
        self.start()
        keys = spread_keys("gt", 12)
        sets = self.replica_sets(keys)
        c = self.conn(self.port)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"v")), b"STORED\r\n")
        half = len(keys) // 2
        self.assertEqual(len(parse_values(c.request(b"gat 1000 " + b" ".join(keys[:half]) +
                                                    b"\r\n"))), half)
        self.assertEqual(len(parse_values(c.request(b"gats 1000 " + b" ".join(keys[half:]) +
                                                    b"\r\n"))), len(keys) - half)

        def ttls():
            out = {}
            for k in keys:
                for i in sets[k]:
                    with self.cl.backends[i].conn() as d:
                        out[(k, i)] = d.request(b"mg " + k + b" t\r\n")
            return out

        def all_set():
            # memcached answers the remaining TTL: -1 means none (the set's 0 never changed).
            return all(r.startswith(b"HD t") and r != b"HD t-1\r\n" for r in ttls().values())
        wait_until(all_set, timeout=10, what="the gat's TTL on every replica")
        for (k, i), r in ttls().items():
            self.assertLessEqual(int(r[4:-2]), 1000, (k, i, r))


class TestSharedServers(IntegrationCase):

    def test_a_pool_that_missed_no_write_never_reads_the_old_values(self):
        """Two replicated pools over the same two memcached: one overwrites and deletes keys
        while a server is stopped; reading through the other pool afterwards must not return
        an old value (the stale state is the server's, not one pool's)."""
        from harness import Mcring, Memcached, free_port, server_line

        class TwoPools(Mcring):
            def write_config(self, port):
                self.second_port = free_port()
                with open(self.config_path, "w") as f:
                    f.write(pool_yaml("alpha", port, self.servers, timeout_ms=self.timeout_ms,
                                      extra=self.extra) +
                            pool_yaml("beta", self.second_port, self.servers,
                                      timeout_ms=self.timeout_ms, extra=self.extra))

        tmp = make_tmpdir("mcring-repl-pools-")
        self.addCleanup(remove_tmpdir, tmp)
        backs = [Memcached(), Memcached()]
        for b in backs:
            self.addCleanup(b.stop)
        proxy = TwoPools([server_line(b.addr) for b in backs], tmp,
                         timeout_ms=1500 if SANITIZED else 300, extra={"replicas": 2})
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        keys = spread_keys("sp", 60)
        x = self.conn(proxy.port, timeout=30)
        y = self.conn(proxy.second_port, timeout=30)
        for k in keys:
            self.assertEqual(x.request(set_cmd(k, b"v1")), b"STORED\r\n")
        # beta reads them once: its connections to both servers are up, as in production.
        self.assertEqual(len(parse_values(y.request(b"get " + b" ".join(keys) + b"\r\n"))),
                         len(keys))
        on_a = set(backs[0].get_many(keys))
        self.assertGreater(len(on_a), 10)
        backs[0].pause()
        model = {}
        try:
            for j, k in enumerate(keys):
                if j % 2:
                    self.assertEqual(x.request(b"delete " + k + b"\r\n"), b"DELETED\r\n")
                    model[k] = None
                else:
                    self.assertEqual(x.request(set_cmd(k, b"v2")), b"STORED\r\n")
                    model[k] = b"v2"
        finally:
            backs[0].resume()
        # beta, which wrote nothing, reads every key a few times over a bounded interval.
        deadline = time.monotonic() + 3.0
        rounds = 0
        while time.monotonic() < deadline or rounds < 3:
            got = {k: v for k, v, _f, _c in
                   parse_values(y.request(b"get " + b" ".join(keys) + b"\r\n"))}
            stale = [k for k in keys if got.get(k) is not None and got.get(k) != model[k]]
            self.assertEqual(stale, [], "beta read old values of %d keys" % len(stale))
            rounds += 1
            if rounds >= 50:
                break
            time.sleep(0.05)


class TestBinaryReplicated(_binary.BinaryProtocolTest):
    """Every binary-protocol test (translated to meta commands) with replicas: 2: the same
    answers, cas and delete-with-cas included."""

    def setUp(self):
        IntegrationCase.setUp(self)
        self.cl = self.cluster(n_backends=3, extra={"allow_flush_all": "true", "replicas": 2})
        self.port = self.cl.port


import test_commands as _commands  # noqa: E402
import test_multiget as _multiget  # noqa: E402

_ONE_OWNER = "asserts that a key lives on one backend: not so with replicas: 2"


class TestCommandsReplicated(_commands.CommandsTest):
    """The command suite (replies compared with memcached's) with replicas: 2."""
    CLUSTER_ARGS = {"n_backends": 3, "extra": {"allow_flush_all": "true", "replicas": 2}}

    @unittest.skip(_ONE_OWNER)
    def test_gets_cas_is_the_backends(self):
        pass


class TestMultigetReplicated(_multiget.MultiGetTest):
    """The multi-get suite (order, sizes, 1000 keys) with replicas: 2."""
    CLUSTER_ARGS = {"n_backends": 3, "extra": {"replicas": 2}}

    @unittest.skip(_ONE_OWNER)
    def test_gets_1000_keys_cas_matches_backends(self):
        pass

    @unittest.skip(_ONE_OWNER)
    def test_keys_spread_over_every_backend(self):
        pass


class TestChaos(ReplicationCase):

    def test_kill_and_restart_under_load(self):
        self.start(timeout_ms=500)
        rnd = random.Random(17)
        keys = spread_keys("k", 600)
        model = {}  # key -> value last written (None: deleted)
        c = self.conn(self.port, timeout=20)
        for i in range(0, len(keys), 100):
            chunk = keys[i:i + 100]
            c.send(b"".join(set_cmd(k, b"v0-" + k) for k in chunk))
            self.assertEqual(c.read_replies(len(chunk), 20), [b"STORED\r\n"] * len(chunk))
            for k in chunk:
                model[k] = b"v0-" + k
        sets = self.replica_sets(keys)
        frozen = keys[:300]  # never written again: reads of them must always hit
        mutable = keys[300:]
        stop = threading.Event()
        counts = {"gets": 0, "hits": 0, "errors": 0, "bad": []}
        lock = threading.Lock()

        def reader(seed):
            r = random.Random(seed)
            deadline = time.monotonic() + 60
            with Conn(HOST, self.port, timeout=20) as rc:
                while not stop.is_set() and time.monotonic() < deadline:
                    batch = [r.choice(frozen) for _ in range(20)]
                    rc.send(b"get " + b" ".join(batch) + b"\r\n" +
                            b"".join(b"get " + k + b"\r\n" for k in batch[:10]))
                    replies = rc.read_replies(11, 20)
                    with lock:
                        if len(replies) != 11:
                            counts["errors"] += 1
                            counts["bad"].append(replies[-1:])
                            return
                        for rep in replies:
                            if rep.startswith(b"SERVER_ERROR") or rep.startswith(b"ERROR"):
                                counts["errors"] += 1
                                counts["bad"].append(rep)
                        vals = parse_values(replies[0]) if replies[0].startswith((b"VALUE", b"END")) else []
                        counts["gets"] += len(batch)
                        counts["hits"] += len(vals)
                        for k, v, _f, _c in vals:
                            if v != b"v0-" + k:
                                counts["bad"].append((k, v))

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(3)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: counts["gets"] > 2000, timeout=30, what="load before the kill")
            self.cl.backends[1].kill()
            before = counts["gets"]
            # Writes during the outage: overwrite and delete mutable keys, pipelined.
            writes = rnd.sample(mutable, 200)
            for i in range(0, len(writes), 50):
                chunk = writes[i:i + 50]
                cmds, expect = [], []
                for k in chunk:
                    if rnd.random() < 0.3:
                        cmds.append(b"delete " + k + b"\r\n")
                        expect.append(b"DELETED\r\n")
                        model[k] = None
                    else:
                        v = b"v1-%d-" % rnd.randrange(1 << 30) + k
                        cmds.append(set_cmd(k, v))
                        expect.append(b"STORED\r\n")
                        model[k] = v
                c.send(b"".join(cmds))
                self.assertEqual(c.read_replies(len(chunk), 20), expect)
            wait_until(lambda: counts["gets"] > before + 3000, timeout=40,
                       what="reads during the outage")
            self.cl.backends[1].restart()
            # The restarted backend is reconnected (a write reaches it again).
            probe = next(k for k in mutable if k not in writes and 1 in sets[k])
            wait_until(lambda: (c.request(set_cmd(probe, b"probe")) == b"STORED\r\n" and
                                self.cl.backends[1].get(probe) == b"probe"),
                       timeout=30, what="a write reaching the restarted backend")
            model[probe] = b"probe"
            after = counts["gets"]
            wait_until(lambda: counts["gets"] > after + 2000, timeout=40, what="reads after the return")
        finally:
            stop.set()
            for t in threads:
                t.join(60)
        self.assertEqual(counts["errors"], 0, counts["bad"][:5])
        self.assertEqual(counts["bad"], [])
        # Every read of a key written before the crash hit (no key was deleted or evicted).
        self.assertEqual(counts["hits"], counts["gets"])
        # No read returns a value overwritten or deleted during the outage, key by key.
        for i in range(0, len(mutable), 100):
            chunk = mutable[i:i + 100]
            got = {k: v for k, v, _f, _c in parse_values(c.request(b"get " + b" ".join(chunk) + b"\r\n"))}
            for k in chunk:
                self.assertEqual(got.get(k), model[k], k)
            for k in chunk:
                r = c.request(b"mg " + k + b" v\r\n")
                self.assertEqual(r, b"EN\r\n" if model[k] is None else
                                 b"VA %d\r\n%s\r\n" % (len(model[k]), model[k]), k)

    def test_stopped_backend_never_serves_old_values(self):
        timeout = 1500 if SANITIZED else 400
        self.start(timeout_ms=timeout)
        keys = spread_keys("s", 300)
        sets = self.replica_sets(keys)
        c = self.conn(self.port, timeout=30)
        for k in keys:
            self.assertEqual(c.request(set_cmd(k, b"old-" + k)), b"STORED\r\n")
        victim = [k for k in keys if 1 in sets[k]]
        self.assertGreater(len(victim), 20)
        self.cl.backends[1].pause()
        try:
            model = {k: b"old-" + k for k in keys}
            changed = victim[:24]
            for j, k in enumerate(changed):
                if j % 3 == 0:
                    self.assertEqual(c.request(b"delete " + k + b"\r\n", timeout=30), b"DELETED\r\n")
                    model[k] = None
                else:
                    self.assertEqual(c.request(set_cmd(k, b"new-" + k), timeout=30), b"STORED\r\n")
                    model[k] = b"new-" + k
        finally:
            self.cl.backends[1].resume()
        # Backend 1 kept its memory: mcring must flush it on its return before it serves a
        # read. Reading through mcring all along, not one old value may come back.
        def check_all():
            for i in range(0, len(keys), 100):
                chunk = keys[i:i + 100]
                with Conn(HOST, self.port, timeout=30) as rc:  # new clients: several workers
                    got = {k: v for k, v, _f, _c in
                           parse_values(rc.request(b"get " + b" ".join(chunk) + b"\r\n"))}
                for k in chunk:
                    self.assertEqual(got.get(k), model[k], "key %r" % k)
            return True
        check_all()
        # Reads bring the server back (a stale server gets no read, but a connection attempt
        # that flushes it first); every read until then is checked too.
        def flushed():
            check_all()
            s = self.backend_stats()
            return s if self.bstat(s, 1, "return_flushes") >= 1 else None
        st = wait_until(flushed, timeout=30, what="the return flush")
        self.assertGreaterEqual(self.bstat(st, 1, "replica_write_failures"), 1)
        # The old values are gone from backend 1 (what it holds now was written after).
        for k, v in self.cl.backends[1].get_many(changed).items():
            self.assertNotEqual(v, b"old-" + k, k)
        for _ in range(3):
            check_all()
        for k in changed:
            r = c.request(b"mg " + k + b" v\r\n")
            self.assertEqual(r, b"EN\r\n" if model[k] is None else
                             b"VA %d\r\n%s\r\n" % (len(model[k]), model[k]), k)
        with open(self.cl.proxy.log_path, "rb") as f:
            self.assertIn(b"flushed (flush_all) before serving reads", f.read())


class TestChaosWorkers(TestChaos):
    """The chaos cases with 3 worker threads: every worker's servers share one freshness state
    (one flush per return, elected by compare-and-swap), and clients land on several workers."""
    THREADS = 3


if __name__ == "__main__":
    unittest.main()
