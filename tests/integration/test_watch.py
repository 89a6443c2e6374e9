"""Issue #30: `watch proxyreqs` on the data port (memcached's watch stream: one line per request
through the proxy, from every worker), the slow-request log (`slow_request_ms`, `/slow`,
`mcring_slow_requests_total`) and `log_keys` (plain, hash, none; bytes outside printable ASCII
escaped), against real memcached."""
import json
import re
import socket
import struct
import threading
import time
import unittest

import harness as h
from harness import IntegrationCase, requires_proxy

LINE_RE = re.compile(
    rb"^ts=(\d+)\.(\d{6}) gid=(\d+) type=proxy_req elapsed=(\d+) cmd=(\S+) key=(\S+)"
    rb"(?: keys=\d+)? status=(\S+) be=(\S+) client=(\S+)(?: route=(\S+))?$")
SKIPPED_RE = re.compile(rb"ts=\d+\.\d{6} gid=\d+ type=eventsskipped skipped=(\d+)")


def parse_watch_lines(data):
    """[dict] for every proxy_req line of `data`; raises on a line of neither known type."""
    out = []
    for line in data.split(b"\r\n"):
        if not line:
            continue
        m = LINE_RE.match(line)
        if m is None:
            if SKIPPED_RE.match(line):
                continue
            raise AssertionError("unexpected watch line %r" % line)
        out.append({"gid": int(m.group(3)), "elapsed": int(m.group(4)), "cmd": m.group(5),
                    "key": m.group(6), "status": m.group(7), "be": m.group(8),
                    "client": m.group(9), "route": m.group(10), "line": line})
    return out


class WatchReader:
    """Reads a watcher's socket on a thread of its own (bounded by `stop`), so the watcher keeps
    up with the load the test drives."""

    def __init__(self, sock):
        self.sock = sock
        self.data = b""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                d = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError:
                return
            if not d:
                return
            with self.lock:
                self.data += d

    def snapshot(self):
        with self.lock:
            return self.data

    def close(self):
        self.stop.set()
        self.thread.join(5)


def watcher(port, names=b" proxyreqs"):
    s = socket.create_connection((h.HOST, port), timeout=5)
    s.sendall(b"watch" + names + b"\r\n")
    got = b""
    deadline = time.monotonic() + 5
    while not got.endswith(b"\r\n") and time.monotonic() < deadline:
        got += s.recv(1)
    return s, got


def wait_for(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def binary_get(key, opaque=7):
    return struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(key), 0, 0, 0, len(key), opaque, 0) + key


@requires_proxy
class WatchStreamTest(IntegrationCase):
    """Every request through the proxy appears exactly once in the stream, in order per client
    connection, whichever worker served it."""

    def test_pipelined_load_every_request_once_in_order(self):
        cl = self.cluster(n_backends=2, extra={"allow_watch": "true", "log_keys": "plain"},
                          args=("--threads", "2"))
        wsock, ok = watcher(cl.port)
        self.addCleanup(wsock.close)
        self.assertEqual(ok, b"OK\r\n")
        reader = WatchReader(wsock)
        self.addCleanup(reader.close)
        n_conns, per_conn = 4, 300
        conns = [self.conn(cl) for _ in range(n_conns)]
        sent = {}  # client address -> [(cmd, key)] in the order sent
        for ci, c in enumerate(conns):
            local = "%s:%d" % c.sock.getsockname()[:2]
            order = []
            buf = b""
            for j in range(per_conn):
                key = b"w%d-%04d" % (ci, j)
                if j % 2 == 0:
                    buf += b"set " + key + b" 0 0 2\r\nvv\r\n"
                    order.append((b"set", key))
                else:
                    prev = b"w%d-%04d" % (ci, j - 1)
                    buf += b"get " + prev + b"\r\n"
                    order.append((b"get", prev))
            c.send(buf)
            sent[local.encode()] = order
        for ci, c in enumerate(conns):
            replies = c.read_replies(per_conn, timeout=20)
            self.assertEqual(len(replies), per_conn)
            for j, r in enumerate(replies):
                want = b"STORED\r\n" if j % 2 == 0 else (
                    b"VALUE w%d-%04d 0 2\r\nvv\r\nEND\r\n" % (ci, j - 1))
                self.assertEqual(r, want)
        total = n_conns * per_conn

        def seen():
            lines = [l for l in parse_watch_lines(reader.snapshot()) if l["key"].startswith(b"w")]
            return lines if len(lines) >= total else None
        lines = wait_for(seen, timeout=20) or parse_watch_lines(reader.snapshot())
        print("\nwatch lines for %d pipelined requests over %d connections (2 workers): %d; "
              "first: %r" % (total, n_conns, len(lines), lines[0]["line"] if lines else None))
        self.assertEqual(len(lines), total)
        got = {}
        for l in lines:
            got.setdefault(l["client"], []).append((l["cmd"], l["key"]))
        self.assertEqual(got, sent)  # exactly once each, in order per connection
        gids = [l["gid"] for l in lines]
        self.assertEqual(gids, sorted(gids))
        backends = {b.addr.encode() for b in cl.backends}
        for l in lines:
            self.assertIn(l["be"], backends)
            self.assertEqual(l["status"], b"STORED" if l["cmd"] == b"set" else b"VALUE")


@requires_proxy
class SlowWatcherTest(IntegrationCase):
    """A watcher that reads nothing for 10 s loses lines (bounded buffer), costs the data path
    nothing, and is told how many it lost when it reads again."""

    def test_stalled_watcher_bounded_and_told(self):
        cl = self.cluster(n_backends=2, extra={"allow_watch": "true", "log_keys": "plain"},
                          args=("--threads", "2"))
        wsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.addCleanup(wsock.close)
        wsock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        wsock.settimeout(5)
        wsock.connect((h.HOST, cl.port))
        wsock.sendall(b"watch proxyreqs\r\n")
        self.assertEqual(wsock.recv(4), b"OK\r\n")
        conns = [self.conn(cl) for _ in range(4)]
        batch = b"".join(b"set s%03d 0 0 8\r\n12345678\r\nget s%03d\r\n" % (i, i)
                         for i in range(100))
        want = b"".join(b"STORED\r\nVALUE s%03d 0 8\r\n12345678\r\nEND\r\n" % i
                        for i in range(100))

        def round_trip(c):
            c.send(batch)
            got = c.recv_exact(len(want), timeout=10)
            return got == want

        for c in conns:  # warm: the process's steady size before the stall
            self.assertTrue(round_trip(c))
        rss0 = h.proc_rss_kb(cl.proxy.pid)
        errors = requests = 0
        start = time.monotonic()
        rounds = 0
        while time.monotonic() - start < 10.0 and rounds < 100000:
            for c in conns:
                if not round_trip(c):
                    errors += 1
                requests += 200
            rounds += 1
        rss1 = h.proc_rss_kb(cl.proxy.pid)
        print("\nstalled watcher for %.1f s: %d requests, %d errors, proxy RSS %d -> %d KiB"
              % (time.monotonic() - start, requests, errors, rss0, rss1))
        self.assertEqual(errors, 0)
        # Each line is ~150 bytes: unbounded, this load's lines would be far above the bound.
        self.assertGreater(requests * 150, 64 << 20 if not h.SANITIZED else 0)
        if not h.SANITIZED:
            self.assertLess(rss1 - rss0, 16 * 1024)
        # Reading again: the lines that fitted, then how many were lost.
        data = b""
        deadline = time.monotonic() + 10
        wsock.settimeout(0.5)
        while not SKIPPED_RE.search(data) and time.monotonic() < deadline:
            try:
                d = wsock.recv(1 << 20)
            except socket.timeout:
                continue
            if not d:
                break
            data += d
        m = SKIPPED_RE.search(data)
        self.assertIsNotNone(m)
        delivered = len(parse_watch_lines(data[:m.start()]))  # whole lines only
        skipped = int(m.group(1))
        print("watcher read %d lines (%d bytes: its buffer, its socket's) then %r"
              % (delivered, m.start(), m.group(0)))
        self.assertGreater(skipped, 0)
        # Every request is a line delivered or one counted lost, none twice.
        self.assertEqual(delivered + skipped, requests + 4 * 200)
        # And the stream goes on after the loss is reported.
        self.assertTrue(round_trip(conns[0]))
        more = b""
        deadline = time.monotonic() + 5
        while b"key=s099" not in more and time.monotonic() < deadline:
            try:
                more += wsock.recv(1 << 20)
            except socket.timeout:
                pass
        self.assertIn(b"type=proxy_req", more)


@requires_proxy
class WatchRefusedTest(IntegrationCase):
    def test_refused_without_allow_watch(self):
        cl = self.cluster(n_backends=1)
        c = self.conn(cl)
        self.assertEqual(c.request(b"watch proxyreqs\r\n"), b"CLIENT_ERROR watch not allowed\r\n")
        self.assertEqual(c.request(b"watch\r\n"), b"CLIENT_ERROR watch not allowed\r\n")
        self.assertEqual(c.request(b"watch nosuchstream\r\n"), b"ERROR\r\n")
        # Refused, the connection is an ordinary one still.
        self.assertEqual(c.request(b"get nokey\r\n"), b"END\r\n")

    def test_requests_after_watch_are_ignored(self):
        cl = self.cluster(n_backends=1, extra={"allow_watch": "true"})
        w = self.conn(cl)
        # memcached hands a watcher's connection to its logger: what follows `watch` is not
        # answered (here the get would be, were it served, and set would store).
        w.send(b"watch proxyreqs\r\nset ignored 0 0 1\r\nx\r\n")
        self.assertEqual(w.recv_exact(4, timeout=5), b"OK\r\n")
        w.send(b"get ignored\r\n")
        self.assertEqual(w.silence(0.3), b"")
        self.assertEqual(self.conn(cl).request(b"get ignored\r\n"), b"END\r\n")


@requires_proxy
class SlowRequestTest(IntegrationCase):
    """A request held by a stopped server appears in the slow log with its key and elapsed
    time: the log line, /slow and mcring_slow_requests_total."""

    def held_get(self, cl, key, hold=0.4):
        c = self.conn(cl)
        self.assertEqual(c.request(b"set " + key + b" 0 0 1\r\nx\r\n"), b"STORED\r\n")
        cl.backends[0].pause()
        try:
            c.send(b"get " + key + b"\r\n")
            time.sleep(hold)  # the server is stopped: the request is held this long at least
        finally:
            cl.backends[0].resume()
        self.assertEqual(c.read_reply(timeout=10), b"VALUE " + key + b" 0 1\r\nx\r\nEND\r\n")

    def slow_view(self, cl):
        _, body = h.admin_http(cl.proxy.admin_port, path="/slow")
        return json.loads(body)

    def test_held_request_in_slow_log(self):
        cl = self.cluster(n_backends=1, timeout_ms=5000,
                          extra={"slow_request_ms": 100, "log_keys": "plain"})
        self.held_get(cl, b"slowkey")
        doc = wait_for(lambda: (lambda d: d if d["requests"] else None)(self.slow_view(cl)))
        print("\n/slow: %s" % json.dumps(doc))
        self.assertIsNotNone(doc)
        s = doc["requests"][0]  # newest first: the held get
        self.assertEqual((s["pool"], s["cmd"], s["key"], s["status"], s["backend"]),
                         ("alpha", "get", "slowkey", "VALUE", cl.backends[0].addr))
        self.assertGreaterEqual(s["elapsed_us"], 300000)
        self.assertEqual(doc["pools"], [{"pool": "alpha", "slow_request_ms": 100,
                                         "count": len(doc["requests"])}])
        log = wait_for(lambda: (lambda t: t if "get key slowkey" in t else None)(cl.log_tail()))
        line = [l for l in log.splitlines() if "slow request:" in l and " get key " in l][0]
        print("log: %s" % line)
        self.assertRegex(line, r"slow request: pool 'alpha' get key slowkey took \d{6,} us "
                               r"\(slow_request_ms 100\), server %s, client 127\.0\.0\.1:\d+, "
                               r"status VALUE" % re.escape(cl.backends[0].addr))
        _, metrics = h.admin_http(cl.proxy.admin_port, path="/metrics")
        self.assertIn(b'mcring_slow_requests_total{pool="alpha"} %d\n' % len(doc["requests"]),
                      metrics)
        # Only requests over the threshold are listed (fast ones are not).
        c = self.conn(cl)
        for _ in range(20):
            self.assertEqual(c.request(b"get slowkey\r\n"),
                             b"VALUE slowkey 0 1\r\nx\r\nEND\r\n")
        self.assertTrue(all(r["elapsed_us"] > 100000 for r in self.slow_view(cl)["requests"]))
        self.console_shows(cl, "slowkey")

    def console_shows(self, cl, key):
        """The console's slow-requests panel lists the request (headless Chromium, if here)."""
        from headless_browser import Browser, chromium_path
        if chromium_path() is None:
            print("chromium not installed: console panel not checked")
            return
        b = Browser()
        self.addCleanup(b.close)
        b.navigate("http://%s:%d/" % (h.HOST, cl.proxy.admin_port))
        b.wait_for("document.body && document.body.dataset.loaded === '1'", what="first data")
        self.assertFalse(b.evaluate("document.getElementById('slow').hidden"))
        rows = b.evaluate("[...document.querySelectorAll('#slow tbody tr')].map("
                          "(r) => [...r.cells].map((c) => c.textContent))")
        print("console slow panel: %s" % rows)
        self.assertEqual(rows[0][1:4], ["alpha", "get", key])
        self.assertGreaterEqual(float(rows[0][4]), 300)
        self.assertEqual(list(b.console_errors), [], "the page logged errors")

    def check_hidden(self, mode, shown_re):
        cl = self.cluster(n_backends=1, timeout_ms=5000,
                          extra={"slow_request_ms": 100, "log_keys": mode,
                                 "allow_watch": "true"})
        wsock, ok = watcher(cl.port)
        self.addCleanup(wsock.close)
        self.assertEqual(ok, b"OK\r\n")
        reader = WatchReader(wsock)
        self.addCleanup(reader.close)
        self.held_get(cl, b"secretkey")
        lines = wait_for(lambda: [l for l in parse_watch_lines(reader.snapshot())
                                  if l["cmd"] == b"get"])
        doc = wait_for(lambda: (lambda d: d if d["requests"] else None)(self.slow_view(cl)))
        log = cl.log_tail()
        print("\nlog_keys %s: watch %r; /slow key %r" % (mode, lines[0]["line"],
                                                        doc["requests"][0]["key"]))
        self.assertRegex(lines[0]["key"].decode(), shown_re)
        self.assertRegex(doc["requests"][0]["key"], shown_re)
        self.assertIn("slow request:", log)
        self.assertNotIn(b"secretkey", reader.snapshot())
        self.assertNotIn("secretkey", json.dumps(doc))
        self.assertNotIn("secretkey", log)

    def test_log_keys_hash_hides_key(self):
        self.check_hidden("hash", r"^xxh3:[0-9a-f]{16}$")

    def test_log_keys_none_hides_key(self):
        self.check_hidden("none", r"^-$")


class RoutedMcring(h.Mcring):
    """A routed listener (`front`, allow_watch) whose routes go to pool `users`."""

    def write_config(self, port):
        with open(self.config_path, "w") as f:
            f.write("users:\n  servers:\n    - %s\n"
                    "front:\n  listen: %s:%d\n  allow_watch: true\n  log_keys: plain\n"
                    "  routes:\n    - prefix: \"user:\"\n      pool: users\n"
                    "    - default: users\n" % (self.servers[0], h.HOST, port))


@requires_proxy
class WatchRoutedTest(IntegrationCase):
    def test_route_named_on_a_routed_listener(self):
        self.start_memcacheds(1)
        mc = RoutedMcring(self.servers, self.tmp)
        self.addCleanup(mc.stop)
        self.dump_log_on_failure(mc)
        wsock, ok = watcher(mc.port)
        self.addCleanup(wsock.close)
        self.assertEqual(ok, b"OK\r\n")
        reader = WatchReader(wsock)
        self.addCleanup(reader.close)
        c = self.conn(mc.port)
        self.assertEqual(c.request(b"get user:1\r\n"), b"END\r\n")
        self.assertEqual(c.request(b"get other\r\n"), b"END\r\n")
        lines = wait_for(lambda: (lambda ls: ls if len(ls) >= 2 else None)(
            parse_watch_lines(reader.snapshot())))
        print("\nrouted watch lines: %r" % [l["line"] for l in lines])
        self.assertEqual([(l["key"], l["route"]) for l in lines],
                         [(b"user:1", b"user:"), (b"other", b"default")])
        self.assertEqual({l["be"] for l in lines}, {self.backends[0].addr.encode()})


@requires_proxy
class WatchEscapeTest(IntegrationCase):
    """Keys with bytes outside printable ASCII (a binary-protocol key, a base64 meta key) are
    written escaped, never raw."""

    def test_binary_and_base64_keys_escaped(self):
        cl = self.cluster(n_backends=2, extra={"allow_watch": "true", "log_keys": "plain"})
        wsock, ok = watcher(cl.port)
        self.addCleanup(wsock.close)
        self.assertEqual(ok, b"OK\r\n")
        reader = WatchReader(wsock)
        self.addCleanup(reader.close)
        bkey = b"bin\x01\xff\n key"
        b = self.conn(cl)
        b.send(binary_get(bkey))
        resp = b.recv_exact(24, timeout=5)
        self.assertEqual(len(resp), 24)
        m = self.conn(cl)
        # base64 of b"m64\x00\x7f\r\n"
        self.assertEqual(m.request(b"mg bTY0AH8NCg== b v\r\n"), b"EN\r\n")
        lines = wait_for(lambda: (lambda ls: ls if len(ls) >= 2 else None)(
            parse_watch_lines(reader.snapshot())))
        data = reader.snapshot()
        print("\nwatch lines: %r" % [l["line"] for l in lines])
        keys = {l["key"] for l in lines}
        self.assertIn(rb"bin\x01\xff\x0a\x20key", keys)
        self.assertIn(rb"m64\x00\x7f\x0d\x0a", keys)
        for line in data.split(b"\r\n"):
            self.assertFalse(any(c < 0x20 or c >= 0x7f for c in line), line)


if __name__ == "__main__":
    unittest.main()
