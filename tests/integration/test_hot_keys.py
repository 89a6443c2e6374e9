"""Hot-key detection: GET /hotkeys, `stats hotkeys`, /metrics and hot-key events, under a load
with 30% of its requests on one key, against real memcached backends.

The load sends pipelined batches of single-key gets and records when each batch went out, so a
test can count the hot key's true requests inside the window /hotkeys reports and compare rates.
"""

import json
import random
import re
import threading
import time
import unittest

from harness import IntegrationCase, admin_http, parse_stats

HOT = b"celebrity"


class HotLoad:
    """Pipelined gets, `share` of them on HOT, the rest uniform over `keys` keys; bounded by
    `limit_s` and `max_batches`. Records (send time, hot requests) per batch."""

    def __init__(self, conn, share=0.3, keys=5000, batch=100, limit_s=8.0, max_batches=200000,
                 seed=18, distinct=False):
        self.conn, self.share, self.keys, self.batch = conn, share, keys, batch
        self.limit_s, self.max_batches, self.distinct = limit_s, max_batches, distinct
        self.rng = random.Random(seed)
        self.sent = []  # (unix time the batch was sent, hot keys in it, keys in it)
        self.stop = threading.Event()
        self.error = None
        self.counter = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self.started = time.time()
        self.thread.start()
        return self

    def _batch(self):
        parts, hot = [], 0
        for _ in range(self.batch):
            if self.rng.random() < self.share:
                parts.append(b"get " + HOT + b"\r\n")
                hot += 1
            else:
                if self.distinct:
                    self.counter += 1
                    k = self.counter
                else:
                    k = self.rng.randrange(self.keys)
                parts.append(b"get key:%d\r\n" % k)
        return b"".join(parts), hot

    def _run(self):
        try:
            deadline = time.monotonic() + self.limit_s
            for _ in range(self.max_batches):
                if self.stop.is_set() or time.monotonic() > deadline:
                    break
                data, hot = self._batch()
                self.sent.append((time.time(), hot, self.batch))
                self.conn.send(data)
                self.conn.read_replies(self.batch, timeout=10)
        except Exception as e:  # reported by the test
            self.error = e

    def finish(self, wait=False):
        """Stops the load (or, with wait, lets it run to its bounds) and joins it."""
        if not wait:
            self.stop.set()
        self.thread.join(self.limit_s + 20)
        if self.error:
            raise self.error

    def hot_rate(self, start_ms, end_ms):
        """The hot key's true requests per second inside [start_ms, end_ms)."""
        n = sum(h for t, h, _ in self.sent if start_ms <= t * 1000 < end_ms)
        return n / ((end_ms - start_ms) / 1000.0)


def hotkeys(cluster):
    status, body = admin_http(cluster.proxy.admin_port, path="/hotkeys")
    assert status == 200, (status, body)
    return json.loads(body)


class HotKeyDetectionTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.cl = self.cluster(n_backends=3)
        self.c = self.conn(self.cl, timeout=10)
        self.c.request(b"set " + HOT + b" 0 0 5\r\nhello\r\n")

    def wait_hot(self, load, within_s):
        """Polls /hotkeys until HOT is listed first; returns (seconds after load start, doc)."""
        deadline = time.time() + within_s + 5  # the assertion below says how long it took
        doc = None
        while time.time() < deadline:
            doc = hotkeys(self.cl)
            keys = doc["pools"].get("alpha", [])
            if keys and keys[0]["key"] == HOT.decode() and keys[0]["share"] > 0.2:
                return time.time() - load.started, doc
            time.sleep(0.05)
        self.fail("hot key never listed first: %r" % (doc,))

    def test_hot_key_is_named_first_with_its_rate_within_two_seconds(self):
        load = HotLoad(self.c).start()
        try:
            took, doc = self.wait_hot(load, 2.0)
            self.assertLessEqual(took, 2.0, "named after %.2f s" % took)
            # The next full window, compared with what the load really sent in it.
            first_end = doc["windows"]["alpha"]["end_ms"]
            deadline = time.time() + 5
            while time.time() < deadline:
                doc = hotkeys(self.cl)
                w = doc["windows"]["alpha"]
                # The backends' rates need two of the watch's one-second samples.
                if w["end_ms"] > first_end and w["load_imbalance"] > 0:
                    break
                time.sleep(0.05)
            reply = self.conn(self.cl).request(b"stats hotkeys\r\n")
        finally:
            load.finish()
        w = doc["windows"]["alpha"]
        top = doc["pools"]["alpha"][0]
        self.assertEqual(top["key"], HOT.decode())
        true_rate = load.hot_rate(w["start_ms"], w["end_ms"])
        self.assertGreater(true_rate, 0)
        self.assertLess(abs(top["rate"] - true_rate) / true_rate, 0.10,
                        "reported %.1f/s, sent %.1f/s in [%d, %d)" %
                        (top["rate"], true_rate, w["start_ms"], w["end_ms"]))
        self.assertAlmostEqual(top["share"], 0.3, delta=0.05)
        self.assertLessEqual(top["error"], top["rate"] * 0.1)
        # The server the key goes to, as mcring routes it.
        owner = [i for i, b in enumerate(self.cl.backends) if b.get(HOT) is not None]
        self.assertEqual(top["backends"], [self.cl.backends[owner[0]].addr])
        # 30% on one of three servers: it carries 30% + 70%/3 of the requests, 1.6x the mean.
        self.assertGreater(w["load_imbalance"], 1.3)
        self.assertLessEqual(w["memory_bytes"], w["memory_bound_bytes"])
        # `stats hotkeys` over the memcached port says the same.
        self.assertTrue(reply.endswith(b"END\r\n"), reply)
        first = re.search(rb"STAT hotkey:alpha:1 key=(\S+) rate=([\d.]+) share=([\d.]+)", reply)
        self.assertIsNotNone(first, reply)
        self.assertEqual(first.group(1), HOT)
        self.assertAlmostEqual(float(first.group(3)), 0.3, delta=0.05)
        self.assertRegex(reply, rb"STAT hotkeys:alpha enabled=1 window_start_ms=\d+ ")

    def test_a_hot_key_is_an_event_when_it_heats_and_when_it_cools(self):
        load = HotLoad(self.c, limit_s=4.0).start()
        try:
            self.wait_hot(load, 3.0)
        finally:
            load.finish()
        deadline = time.time() + 10
        kinds = []
        while time.time() < deadline:
            events = [e for e in hotkeys(self.cl)["events"] if e["pool"] == "alpha"]
            kinds = [e["kind"] for e in events]
            if "cooled" in kinds:
                break
            time.sleep(0.1)
        self.assertEqual(kinds[:2], ["hot", "cooled"], kinds)
        hot = events[0]
        # hot_key_metrics is off: events and logs show the key hashed.
        self.assertRegex(hot["key"], r"^xxh3:[0-9a-f]{16}$")
        self.assertGreaterEqual(hot["share"], 0.1)
        self.assertIn("hot key hot: pool 'alpha' key xxh3:", self.cl.log_tail())

    def test_a_scan_of_distinct_keys_stays_within_the_memory_bound(self):
        before = hotkeys(self.cl)["windows"]["alpha"]
        load = HotLoad(self.c, share=0.05, distinct=True, limit_s=6.0, max_batches=1500).start()
        load.finish(wait=True)
        sent = sum(n for _, _, n in load.sent)
        self.assertGreaterEqual(sent, 50000)
        deadline = time.time() + 3
        while time.time() < deadline:
            w = hotkeys(self.cl)["windows"]["alpha"]
            if w["memory_bytes"] > 0:
                break
            time.sleep(0.05)
        self.assertGreater(w["memory_bytes"], 0)
        self.assertLessEqual(w["memory_bytes"], w["memory_bound_bytes"])
        if before["memory_bytes"]:
            self.assertEqual(w["memory_bytes"], before["memory_bytes"])


class HotKeyConfigTest(IntegrationCase):
    def test_metrics_show_hashed_keys_only_when_asked(self):
        cl = self.cluster(n_backends=2, extra={"hot_key_metrics": "hashed"})
        c = self.conn(cl, timeout=10)
        load = HotLoad(c, limit_s=3.0).start()
        try:
            deadline = time.time() + 5
            body = b""
            while time.time() < deadline:
                _, body = admin_http(cl.proxy.admin_port, path="/metrics")
                if re.search(rb'mcring_hot_key_rate\{pool="alpha",key="xxh3:[0-9a-f]{16}"\} [1-9]',
                             body):
                    break
                time.sleep(0.1)
        finally:
            load.finish()
        self.assertRegex(body, rb'mcring_hot_key_rate\{pool="alpha",key="xxh3:[0-9a-f]{16}"\} ')
        self.assertNotIn(HOT, body)
        self.assertRegex(body, rb'mcring_hot_key_top_share\{pool="alpha"\} 0\.[1-9]')
        self.assertRegex(body, rb'mcring_pool_request_rate_imbalance\{pool="alpha"\} ')
        rates = re.findall(rb"^mcring_hot_key_rate\{", body, re.M)
        self.assertLessEqual(len(rates), 5)

    def test_default_metrics_name_no_key_and_detection_can_be_off(self):
        cl = self.cluster(n_backends=2)
        c = self.conn(cl, timeout=10)
        HotLoad(c, limit_s=1.5).start().finish(wait=True)
        _, body = admin_http(cl.proxy.admin_port, path="/metrics")
        self.assertNotRegex(body, rb"^mcring_hot_key_rate\{", "off by default")
        self.assertIn(b"# TYPE mcring_hot_key_rate gauge", body)

        off = self.cluster(n_backends=2, extra={"hot_keys": "false"})
        c2 = self.conn(off, timeout=10)
        HotLoad(c2, limit_s=1.5).start().finish(wait=True)
        time.sleep(1.2)  # a window boundary passes: nothing may be published for the pool
        doc = hotkeys(off)
        self.assertEqual(doc["pools"]["alpha"], [])
        self.assertFalse(doc["windows"]["alpha"]["enabled"])
        reply = self.conn(off).request(b"stats hotkeys\r\n")
        self.assertIn(b"STAT hotkeys:alpha enabled=0 ", reply)
        self.assertNotIn(b"STAT hotkey:alpha:1", reply)



def uniform_trickle(conn, keys, per_key_rate, seconds, prefix=b"u:"):
    """Gets of `keys` keys in turn, each about `per_key_rate` times a second, for `seconds`
    (bounded in time and count: pipelined ticks of 100 ms, each answered before the next)."""
    per_tick = max(1, int(keys * per_key_rate / 10))
    sent, i = 0, 0
    t0 = time.monotonic()
    for tick in range(int(seconds * 10)):
        data = b"".join(b"get %s%d\r\n" % (prefix, (i + j) % keys) for j in range(per_tick))
        i += per_tick
        conn.send(data)
        conn.read_replies(per_tick, timeout=10)
        sent += per_tick
        pause = t0 + (tick + 1) * 0.1 - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # paces the load (no timing assertion)
    return sent


class HotKeyNoiseTest(IntegrationCase):
    """Issue #27: on a nearly idle pool, keys at a few requests a second were hot-key events
    (their share of a tiny total is large), and uniform keys whose error bound exceeds their
    rate filled the hot-key list. A genuinely hot key must still be reported."""

    def listed(self, cl):
        doc = hotkeys(cl)
        return doc, doc["pools"].get("alpha", [])

    def test_low_rate_uniform_traffic_is_no_event_and_lists_nothing_insignificant(self):
        cl = self.cluster(n_backends=3)
        c = self.conn(cl, timeout=10)
        events_before = len(hotkeys(cl)["events"])
        # An idle pool: 5 keys at 2 requests/s each (each 20% of a pool's 10 requests/s).
        sent_idle = uniform_trickle(c, 5, 2, 3.5, prefix=b"idle:")
        # Many keys: 2,000 at 3 requests/s each; a window (1 s) sees 6,000 requests over 2,000
        # keys, far more keys than a sketch monitors (hot_key_capacity 128).
        listings = []
        t0 = time.monotonic()
        sent_uniform = 0
        while time.monotonic() - t0 < 3.5:
            sent_uniform += uniform_trickle(c, 2000, 3, 0.5)
            listings.append(self.listed(cl)[1])
        reply = self.conn(cl).request(b"stats hotkeys\r\n")
        doc, last = self.listed(cl)
        events = [e for e in doc["events"][events_before:] if e["pool"] == "alpha"]
        with open(cl.proxy.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        shown = [k for l in listings for k in l]
        print("\nlow-rate traffic: %d idle gets (5 keys), %d uniform gets (2,000 keys); "
              "events %d, hot-key log lines %d, rows listed over %d reads of /hotkeys: %d "
              "(uniform keys: %d, with error >= rate: %d)" %
              (sent_idle, sent_uniform, len(events), log.count("hot key hot:"), len(listings),
               len(shown), sum(1 for k in shown if k["key"].startswith("u:")),
               sum(1 for k in shown if k["error"] >= k["rate"])))
        self.assertEqual(events, [])
        self.assertNotIn("hot key hot:", log)
        for k in shown:
            self.assertLess(k["error"], k["rate"], "listed without significance: %r" % k)
        # A uniform key's 3/s is 0.05% of the pool's requests, below what the sketch can tell
        # apart from its error (1/hot_key_capacity): it is never listed.
        self.assertFalse([k for k in shown if k["key"].startswith("u:")], last)
        self.assertNotIn(b"key=u:", reply)
        self.assertRegex(reply, rb"STAT hotkeys:alpha enabled=1 ")

        # A genuinely hot key is still named and is an event.
        load = HotLoad(c, limit_s=4.0).start()
        try:
            deadline = time.time() + 8
            hot = []
            while time.time() < deadline:
                doc, keys = self.listed(cl)
                hot = [e for e in doc["events"][events_before:] if e["kind"] == "hot"]
                if hot and keys and keys[0]["key"] == HOT.decode():
                    break
                time.sleep(0.05)
        finally:
            load.finish()
        self.assertEqual(len(hot), 1, hot)
        self.assertEqual(keys[0]["key"], HOT.decode())
        self.assertIn("hot key hot: pool 'alpha' key xxh3:", cl.log_tail())


class HotKeyLogInjectionTest(IntegrationCase):
    """Issue #27: with hot_key_metrics: plain, a hot binary-protocol key holding LF wrote a
    forged log line (a NUL cut it short). Logs and events must show such bytes escaped; every
    JSON view says X-Content-Type-Options: nosniff."""

    KEY = b"evil\n[2026-01-01 00:00:00.000] error  forged line\x00tail\x80\xff"
    ESCAPED = r"evil\x0a[2026-01-01\x2000:00:00.000]\x20error\x20\x20forged\x20line\x00tail\x80\xff"

    def test_hot_binary_key_is_escaped_in_log_and_events(self):
        from test_hostile_features import drive_hot
        cl = self.cluster(n_backends=2, extra={"hot_key_metrics": "plain", "log_keys": "plain"})
        drive_hot(cl.proxy.port, [self.KEY, b"other"])
        deadline = time.time() + 5
        events = []
        while time.time() < deadline and not events:
            events = [e for e in hotkeys(cl)["events"] if e["kind"] == "hot"]
            time.sleep(0.05)
        _, body = admin_http(cl.proxy.admin_port, path="/hotkeys")
        with open(cl.proxy.log_path, "rb") as f:
            log = f.read()
        lines = [l for l in log.split(b"\n") if b"hot key hot" in l or b"forged" in l]
        print("\nlog lines: %r\nevents: %r" % (lines, [e["key"] for e in events]))
        self.assertTrue(events)
        self.assertIn(self.ESCAPED, [e["key"] for e in events])
        self.assertIn(self.ESCAPED.encode(), log)
        for line in log.split(b"\n"):
            self.assertFalse(line.startswith(b"[2026-01-01"), "forged line: %r" % line)
            self.assertFalse(any(b < 0x20 and b != 0x09 or b >= 0x80 for b in line),
                             "raw byte in log line %r" % line)
        doc = json.loads(body)
        for e in doc["events"]:
            self.assertFalse(any(ord(ch) < 0x20 or ord(ch) >= 0x80 for ch in e["key"]), e)

    def test_log_keys_hash_hides_keys_that_metrics_show(self):
        """hot_key_metrics: plain shows the key in /hotkeys; the log line still follows log_keys
        (default hash): one setting decides what the logs hold."""
        from test_hostile_features import drive_hot
        cl = self.cluster(n_backends=2, extra={"hot_key_metrics": "plain"})
        key = b"hotsecret"
        drive_hot(cl.proxy.port, [key, b"other"])
        deadline = time.time() + 5
        events = []
        while time.time() < deadline and not events:
            events = [e for e in hotkeys(cl)["events"] if e["kind"] == "hot"]
            time.sleep(0.05)
        with open(cl.proxy.log_path, "rb") as f:
            log = f.read()
        lines = [l for l in log.split(b"\n") if b"hot key hot" in l]
        print("\nevents: %r; log lines: %r" % ([e["key"] for e in events], lines))
        self.assertIn("hotsecret", [e["key"] for e in events])
        self.assertTrue(lines)
        self.assertTrue(all(b"key xxh3:" in l for l in lines), lines)
        self.assertNotIn(key, log)

    def test_json_views_say_nosniff(self):
        import socket
        from harness import HOST
        cl = self.cluster(n_backends=1)
        port = cl.proxy.admin_port
        paths = [("GET", "/stats"), ("GET", "/reloads"), ("GET", "/events"),
                 ("GET", "/backends"), ("GET", "/timeline"), ("GET", "/hotkeys"),
                 ("POST", "/whatif/alpha"), ("POST", "/reload")]
        seen = {}
        for method, path in paths:
            body = b"servers:\n  - 127.0.0.1:1:1\n" if path.startswith("/whatif") else b""
            with socket.create_connection((HOST, port), timeout=5) as s:
                s.sendall(b"%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n"
                          b"Connection: close\r\n\r\n" % (method.encode(), path.encode(), port,
                                                          len(body)) + body)
                data = b""
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    d = s.recv(65536)
                    if not d:
                        break
                    data += d
            head = data.partition(b"\r\n\r\n")[0].lower()
            seen[path] = (head.split(b"\r\n")[0], b"content-type: application/json" in head,
                          b"x-content-type-options: nosniff" in head)
        print("\n" + "\n".join("%s %r" % (p, v) for p, v in seen.items()))
        for path, (status, is_json, nosniff) in seen.items():
            self.assertTrue(is_json, (path, status))
            self.assertTrue(nosniff, (path, status))


if __name__ == "__main__":
    unittest.main()
