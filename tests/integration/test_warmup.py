"""Warm migration: with `warmup_window`, a membership change does not turn moved keys
into misses. Real memcached backends; owners come from `mcring route` on the same configs.

- WarmReadTest: every warmed key is still a hit right after 4 -> 5, values, flags and TTLs are
  copied to the new server; mg, gets and gat are answered in their own formats.
- WriteRaceTest: writes and deletes after the reload are never undone by the previous server's
  old value (sequential and pipelined in one write).
- EventTest: the membership event says warm-up was on, and measures no miss spike.
- WindowTest: after the window, unread moved keys are plain misses and the previous topology's
  servers are let go; a second change closes the first window; warmup_max_inflight bounds the
  second hops.
"""

import json
import os
import signal
import time
import unittest

from harness import (Conn, HOST, IntegrationCase, Mcring, Memcached, admin_http, cache_aside_load_running,
                     make_tmpdir, parse_stats, parse_values, pool_yaml, remove_tmpdir,
                     requires_proxy, run_mcring, server_line, set_many_raw, spread_keys,
                     free_port)

N_KEYS = 1200


def admin_stats_generation(admin_port):
    """The config generation the admin endpoint reports (/stats JSON)."""
    status, body = admin_http(admin_port)
    if status != 200:
        return -1
    return int(json.loads(body).get("config_generation", -1))


@requires_proxy
class WarmupCase(IntegrationCase):

    def start(self, n_backends, active, window_ms, extra=None, threads=2):
        """n_backends memcacheds; mcring over the first `active`, warm-up window window_ms."""
        self.tmp = make_tmpdir("mcring-warmup-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = []
        for _ in range(n_backends):
            m = Memcached()
            self.addCleanup(m.stop)
            self.backends.append(m)
        opts = {"warmup_window": window_ms}
        opts.update(extra or {})
        # A generous backend timeout: these tests assert zero errors, and a shared 2-vCPU
        # machine can stall a process for a second (backend faults are test_chaos's subject).
        self.proxy = Mcring(self.lines(active), self.tmp, extra=opts, timeout_ms=5000,
                            args=["--threads", str(threads)])
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        self.c = self.conn(self.proxy.port)
        return self.proxy

    def lines(self, n):
        return [server_line(m.addr) for m in self.backends[:n]]

    def stats(self):
        return parse_stats(self.c.request(b"stats\r\n"))

    def apply_config(self, text):
        """Replaces the config file with `text` (atomically) and applies it (SIGHUP); returns
        once the admin endpoint reports the new generation (read there, not on the data port,
        whose pool the new config may remove)."""
        gen = admin_stats_generation(self.proxy.admin_port)
        tmp = self.proxy.config_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, self.proxy.config_path)
        os.kill(self.proxy.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if admin_stats_generation(self.proxy.admin_port) > gen:
                # Workers switch between requests: one round trip later every worker has it.
                time.sleep(0.1)
                return
            time.sleep(0.02)
        self.fail("the new config was not applied")

    def reload(self, n):
        """Rewrites the config with the first n backends and applies it."""
        self.proxy.servers = self.lines(n)
        self.apply_config(pool_yaml(self.proxy.pool, self.proxy.port, self.proxy.servers,
                                    timeout_ms=self.proxy.timeout_ms, extra=self.proxy.extra))

    def owners(self, n, keys):
        """{key: backend index} under a config of the first n backends."""
        path = os.path.join(self.tmp, "route-%d.yml" % n)
        with open(path, "w") as f:
            f.write(pool_yaml("alpha", 1, self.lines(n)))
        r = run_mcring(["route", "-c", path], input_bytes=b"\n".join(keys) + b"\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        index = {m.addr: i for i, m in enumerate(self.backends)}
        out = {}
        for line in r.stdout.decode().splitlines():
            key, addr = line.split("\t")[:2]
            out[key.encode()] = index[addr]
        self.assertEqual(len(out), len(keys))
        return out

    def moved_keys(self, keys, before, after):
        a, b = self.owners(before, keys), self.owners(after, keys)
        return [k for k in keys if a[k] != b[k]], a, b

    def get_all(self, keys, batch=50):
        """{key: (value, flags)} for the keys mcring returns, via multi-key gets."""
        out = {}
        for i in range(0, len(keys), batch):
            r = self.c.request(b"get " + b" ".join(keys[i:i + batch]) + b"\r\n", timeout=10)
            for k, v, flags, _cas in parse_values(r):
                out[k] = (v, flags)
        return out

    def counter(self, name):
        return int(self.stats()[name])


class WarmReadTest(WarmupCase):

    def test_warmed_keys_stay_hits_after_adding_a_server(self):
        self.start(5, 4, window_ms=30000)
        keys = spread_keys("w", N_KEYS)
        # Values carry their flags; a third of them a TTL, to see it copied.
        for i, k in enumerate(keys):
            ttl = 3600 if i % 3 == 0 else 0
            self.c.send(b"set %s %d %d %d\r\n%s\r\n" % (k, i % 7, ttl, len(k) + 2, b"v-" + k))
        replies = self.c.read_replies(len(keys), timeout=20)
        self.assertEqual(set(replies), {b"STORED\r\n"})
        moved, _before, after = self.moved_keys(keys, 4, 5)
        self.assertGreater(len(moved), N_KEYS // 10, "4 -> 5 should move ~1/5 of the keys")

        self.reload(5)
        got = self.get_all(keys)
        missing = [k for k in keys if k not in got]
        self.assertEqual(missing, [], "%d of %d keys (%d moved) missed right after the reload"
                         % (len(missing), len(keys), len(moved)))
        for i, k in enumerate(keys):
            self.assertEqual(got[k], (b"v-" + k, i % 7), k)
        st = self.stats()
        self.assertEqual(int(st["warmup_hits"]), len(moved), st)
        self.assertEqual(int(st["warmup_copies"]), len(moved), st)
        self.assertEqual(int(st["warmup_windows_open"]), 2, "one window per worker thread")

        # The copies are on the new server, with their flags and (remaining) TTL.
        new = self.backends[4]
        on_new = new.get_many(moved)
        self.assertEqual(sorted(on_new), sorted(moved))
        with new.conn() as c:
            for i, k in enumerate(keys):
                if after[k] != 4 or k not in moved:
                    continue
                r = c.request(b"mg %s f t\r\n" % k)
                flags, ttl = r.split()[1:3]
                self.assertEqual(flags, b"f%d" % (i % 7))
                if i % 3 == 0:
                    self.assertTrue(3500 <= int(ttl[1:]) <= 3600, r)
                else:
                    self.assertEqual(ttl, b"t-1", r)
        # A second read is a plain hit on the new server: no more warm-up fetches.
        fetches = self.counter("warmup_fetches")
        self.assertEqual(len(self.get_all(keys)), len(keys))
        self.assertEqual(self.counter("warmup_fetches"), fetches)

    def test_meta_get_gets_and_gat_in_their_own_formats(self):
        self.start(5, 4, window_ms=30000)
        keys = spread_keys("m", 400)
        moved, before, _after = self.moved_keys(keys, 4, 5)
        self.assertGreaterEqual(len(moved), 5)
        set_many_raw(self.c, {k: b"val-" + k for k in keys})
        k_mg, k_hd, k_gets, k_gat = moved[:4]
        # What memcached itself answers, asked on the key's (previous) server before the change.
        with self.backends[before[k_mg]].conn() as c:
            want_mg = c.request(b"mg %s s v f t k Oop1\r\n" % k_mg)
        with self.backends[before[k_hd]].conn() as c:
            want_hd = c.request(b"mg %s f k\r\n" % k_hd)
        self.reload(5)
        self.assertEqual(self.c.request(b"mg %s s v f t k Oop1\r\n" % k_mg), want_mg)
        self.assertEqual(self.c.request(b"mg %s f k\r\n" % k_hd), want_hd)
        self.assertEqual(self.c.request(b"mg %snope v\r\n" % k_mg), b"EN\r\n")
        # A moved key the previous server does not have either: the new server's own EN.
        k_gone = moved[4]
        with self.backends[before[k_gone]].conn() as c:
            self.assertEqual(c.request(b"delete %s\r\n" % k_gone), b"DELETED\r\n")
        self.assertEqual(self.c.request(b"mg %s v k Oq7\r\n" % k_gone),
                         b"EN k%s Oq7\r\n" % k_gone)
        vals = parse_values(self.c.request(b"gets %s\r\n" % k_gets))
        self.assertEqual([(v[0], v[1], v[2]) for v in vals], [(k_gets, b"val-" + k_gets, 0)])
        self.assertIsNotNone(vals[0][3], "gets returns a CAS")
        vals = parse_values(self.c.request(b"gat 100 %s\r\n" % k_gat))
        self.assertEqual([v[1] for v in vals], [b"val-" + k_gat])
        with self.backends[4].conn() as c:
            for k in (k_mg, k_hd, k_gets, k_gat):
                if _after[k] == 4:
                    self.assertTrue(c.request(b"mg %s v\r\n" % k).startswith(b"VA "), k)
            if _after[k_gat] == 4:
                ttl = int(c.request(b"mg %s t\r\n" % k_gat).split()[1][1:])
                self.assertTrue(90 <= ttl <= 100, "gat's exptime is the copy's TTL: %d" % ttl)


class WriteRaceTest(WarmupCase):

    def test_writes_and_deletes_after_the_reload_win(self):
        self.start(5, 4, window_ms=30000)
        keys = spread_keys("r", 800)
        moved, before, after = self.moved_keys(keys, 4, 5)
        self.assertGreaterEqual(len(moved), 40)
        set_many_raw(self.c, {k: b"old-" + k for k in keys})
        self.reload(5)
        q = len(moved) // 4
        sets, deletes, piped_del, piped_set = (moved[:q], moved[q:2 * q], moved[2 * q:3 * q],
                                               moved[3 * q:])

        # Sequential: write, then read.
        for k in sets:
            self.assertEqual(self.c.request(b"set %s 0 0 %d\r\nnew-%s\r\n" % (k, len(k) + 4, k)),
                             b"STORED\r\n")
            self.assertEqual(parse_values(self.c.request(b"get %s\r\n" % k))[0][1], b"new-" + k)
        for k in deletes:
            # Not copied yet, but the key existed: DELETED, as memcached would say.
            self.assertEqual(self.c.request(b"delete %s\r\n" % k), b"DELETED\r\n")
            self.assertEqual(self.c.request(b"get %s\r\n" % k), b"END\r\n")

        # Pipelined in one write: a read whose warm-up fetch is in flight when the write or
        # delete arrives must not copy the old value over it.
        batch = b"".join(b"get %s\r\ndelete %s\r\nget %s\r\n" % (k, k, k) for k in piped_del)
        self.c.send(batch)
        replies = self.c.read_replies(3 * len(piped_del), timeout=10)
        for i, k in enumerate(piped_del):
            first, deleted, last = replies[3 * i:3 * i + 3]
            self.assertIn(first, (b"END\r\n", b"VALUE %s 0 %d\r\nold-%s\r\nEND\r\n"
                                  % (k, len(k) + 4, k)))
            self.assertIn(deleted, (b"DELETED\r\n", b"NOT_FOUND\r\n"))
            self.assertEqual(last, b"END\r\n", k)
        batch = b"".join(b"get %s\r\nset %s 0 0 %d\r\nnew-%s\r\nget %s\r\n"
                         % (k, k, len(k) + 4, k, k) for k in piped_set)
        self.c.send(batch)
        replies = self.c.read_replies(3 * len(piped_set), timeout=10)
        for i, k in enumerate(piped_set):
            self.assertEqual(replies[3 * i + 1], b"STORED\r\n")
            self.assertEqual(parse_values(replies[3 * i + 2])[0][1], b"new-" + k)

        # Later, from another connection: nothing old came back anywhere.
        time.sleep(0.3)
        got = self.get_all(moved)
        for k in sets + piped_set:
            self.assertEqual(got.get(k, (None,))[0], b"new-" + k, k)
        for k in deletes + piped_del:
            self.assertNotIn(k, got, "deleted key %r came back" % k)
        # The previous servers no longer hold any written or deleted key (no stale value for a
        # rollback to resurrect).
        for k in moved:
            self.assertIsNone(self.backends[before[k]].get(k), k)
        st = self.stats()
        self.assertGreaterEqual(int(st["warmup_invalidations"]), len(moved), st)


class EventTest(WarmupCase):

    def test_event_reports_no_spike_with_warmup(self):
        self.start(5, 4, window_ms=30000)
        keys = spread_keys("e", 4000)
        set_many_raw(self.c, {k: b"v" * 32 for k in keys})
        moved, _b, _a = self.moved_keys(keys, 4, 5)
        with cache_aside_load_running(self.proxy.port, keys, 11) as counts:
            time.sleep(4)  # a baseline
            self.reload(5)
            time.sleep(5)
        self.assertEqual(counts["errors"], 0)
        self.assertEqual(counts["hits"], counts["gets"], "every read was a hit, across the change")
        status, body = admin_http(self.proxy.admin_port, path="/events")
        self.assertEqual(status, 200)
        events = json.loads(body)
        self.assertEqual(len(events), 1, body)
        e = events[0]
        print("moved %d of %d keys; measurement: %s; verdict: %s"
              % (len(moved), len(keys), e["measurement"], e["verdict"]))
        self.assertEqual(e["warmup_window_ms"], 30000)
        self.assertIn("warm-up 30000 ms", e["verdict"])
        m = e["measurement"]
        self.assertTrue(m["baseline_valid"], m)
        self.assertFalse(m["spike"], m)
        self.assertLess(m["peak_miss_ratio"], 0.02, m)
        self.assertGreater(self.counter("warmup_hits"), 0)
        with Conn(HOST, self.proxy.port) as c:
            self.assertIn(b" warmup_ms=30000", c.request(b"stats events\r\n"))


class WindowTest(WarmupCase):

    def test_after_the_window_unread_keys_are_misses_and_old_servers_are_released(self):
        self.start(5, 5, window_ms=1500)
        keys = spread_keys("x", 600)
        set_many_raw(self.c, {k: b"x" for k in keys})
        moved, before, _after = self.moved_keys(keys, 5, 4)   # remove the 5th server
        self.assertGreater(len(moved), 40)
        removed = self.backends[4]
        self.reload(4)
        # During the window a moved key is served from the removed (still running) server.
        self.assertEqual(len(self.get_all(moved[:10])), 10)
        self.assertGreaterEqual(int(removed.stats()["curr_connections"]), 2,
                                "mcring talks to the removed server during the window")
        self.assertEqual(self.counter("warmup_windows_open"), 2)
        time.sleep(2.0)
        self.assertEqual(self.counter("warmup_windows_open"), 0)
        fetches = self.counter("warmup_fetches")
        got = self.get_all(moved[10:])
        self.assertEqual(got, {}, "after the window, unread moved keys are plain misses")
        self.assertEqual(self.counter("warmup_fetches"), fetches)
        # The previous topology's servers were let go: only our own stats connection is left.
        deadline = time.monotonic() + 5
        conns = None
        while time.monotonic() < deadline:
            conns = int(removed.stats()["curr_connections"])
            if conns == 1:
                break
            time.sleep(0.05)
        self.assertEqual(conns, 1, "mcring still connected to the removed server")

    def test_a_second_change_closes_the_first_window(self):
        self.start(6, 4, window_ms=30000, threads=1)
        keys = spread_keys("s", 3000)
        set_many_raw(self.c, {k: b"s-" + k for k in keys})
        o4, o5, o6 = self.owners(4, keys), self.owners(5, keys), self.owners(6, keys)
        # Moved by 4 -> 5 and not by 5 -> 6: after the second change its owner did not change,
        # so only the placement just before the latest change (5) is consulted: a miss.
        stay = [k for k in keys if o4[k] != o5[k] and o5[k] == o6[k]]
        # Moved by both: read during the first window (copied to its 5-server owner), then
        # warmed again from there after the second change.
        twice = [k for k in keys if o4[k] != o5[k] and o5[k] != o6[k]]
        self.assertGreater(len(stay), 5)
        self.assertGreater(len(twice), 5)
        self.reload(5)
        self.assertEqual(len(self.get_all(twice)), len(twice))
        self.reload(6)
        self.assertEqual(self.counter("warmup_windows_open"), 1)
        self.assertEqual(len(self.get_all(twice)), len(twice))
        self.assertEqual(self.get_all(stay), {})

    def test_max_inflight_bounds_second_hops(self):
        self.start(5, 4, window_ms=30000, extra={"warmup_max_inflight": 1}, threads=1)
        keys = spread_keys("i", 600)
        set_many_raw(self.c, {k: b"i" for k in keys})
        moved, _b, _a = self.moved_keys(keys, 4, 5)
        self.assertGreater(len(moved), 40)
        self.reload(5)
        r = self.c.request(b"get " + b" ".join(moved[:40]) + b"\r\n")
        self.assertEqual(len(parse_values(r)), 1, "one fetch in flight at a time: one warm hit")
        st = self.stats()
        self.assertEqual(int(st["warmup_fetches"]), 1, st)
        self.assertEqual(int(st["warmup_skips"]), 39, st)



class ReloadDuringFetchTest(WarmupCase):

    def test_pool_removed_while_a_fetch_is_in_flight(self):
        """A reload that removes the pool while a warm-up fetch to the key's previous server is
        in flight: the fetch's reply used to route the copy with the removed pool (empty server
        list) and touch a freed server: ASan's heap-use-after-free, SIGFPE in a release build."""
        self.start(3, 2, window_ms=30000, threads=1)
        keys = spread_keys("r", 300)
        for k in keys:
            self.c.send(b"set %s 0 0 2\r\nok\r\n" % k)
        self.assertEqual(set(self.c.read_replies(len(keys), timeout=20)), {b"STORED\r\n"})
        moved, before, _after = self.moved_keys(keys, 2, 3)
        self.assertTrue(moved)
        self.reload(3)
        key = moved[0]
        previous = self.backends[before[key]]
        fetches = self.counter("warmup_fetches")
        previous.pause()
        resumed = False
        try:
            client = self.conn(self.proxy.port, timeout=10)
            client.send(b"get %s\r\n" % key)  # misses on its new server, then asks `previous`
            deadline = time.monotonic() + 5
            while self.counter("warmup_fetches") == fetches and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertGreater(self.counter("warmup_fetches"), fetches, "no fetch was sent")
            # Remove the pool: a config whose only pool has another name and port.
            beta_port = free_port()
            self.apply_config(pool_yaml("beta", beta_port, self.lines(3), timeout_ms=5000))
            time.sleep(0.1)  # the worker switches between requests
            previous.resume()
            resumed = True
            # The fetch's reply arrives now. The client gets its value or a close, never a crash.
            reply = client.read_reply(timeout=5)
            self.assertIn(reply, (b"", b"VALUE %s 0 2\r\nok\r\nEND\r\n" % key), reply)
        finally:
            if not resumed:
                previous.resume()
        beta = self.conn(beta_port)
        self.assertEqual(beta.request(b"get %s\r\n" % key)[-5:], b"END\r\n")
        self.assertIsNone(self.proxy.proc.poll(), "mcring died")

    def test_pool_removed_then_added_again_with_another_placement(self):
        """Found by test_reload_fuzz (seed 15): a pool removed by one reload and added again by
        the next, with another placement and warm-up on, opened a window from its placement
        before the removal over its drained (empty) server list; the first key asked read past
        that list: SIGSEGV in WarmupWindow::previousOwner."""
        self.start(3, 2, window_ms=30000, threads=1)
        beta_port = free_port()
        keys = spread_keys("readd", 20)
        alpha = lambda n: pool_yaml("alpha", self.proxy.port, self.lines(n), timeout_ms=5000,
                                    extra={"warmup_window": 30000})
        self.apply_config(pool_yaml("beta", beta_port, self.lines(3), timeout_ms=5000))  # alpha gone
        self.apply_config(alpha(3) + pool_yaml("beta", beta_port, self.lines(3), timeout_ms=5000))
        c = self.conn(self.proxy.port)
        for k in keys:
            self.assertEqual(c.request(b"set %s 0 0 1\r\nx\r\n" % k), b"STORED\r\n")
            self.assertEqual(c.request(b"get %s\r\n" % k), b"VALUE %s 0 1\r\nx\r\nEND\r\n" % k)
        self.assertIsNone(self.proxy.proc.poll(), "mcring died")


if __name__ == "__main__":
    unittest.main()
