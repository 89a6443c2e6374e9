"""An outside attack on this round's features (TLS listener, binary protocol, hot-key views,
what-if), each finding turned into a test that failed on the code it was found on:

- one byte of a ClientHello on a TLS port spun its worker at 100% and stopped it serving every
  other client (OpenSSL's read-ahead buffer held a partial record, SSL_has_pending said so, and
  the read event was re-activated for ever);
- a binary client's key "x\r\nEND\r\n..." made hot forged lines in other clients' `stats
  hotkeys` replies;
- keys that are not UTF-8 made /hotkeys (and a what-if error) invalid JSON, and control bytes or
  non-ASCII in a key made `hot_key_metrics: plain`'s /metrics invalid Prometheus text."""

import json
import os
import socket
import ssl
import time
import unittest

import harness as h  # noqa: E402
import binary_wire as bw  # noqa: E402
from test_tls import make_ca, make_cert  # noqa: E402

HOST = h.HOST


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


class TlsHandshakeStall(unittest.TestCase):
    """A TLS listener: a client that sends part of a ClientHello (even one byte) must not stop
    the worker thread from serving every other client, nor spin a core."""

    @classmethod
    def setUpClass(cls):
        if h.DIRECT:
            raise unittest.SkipTest("mcring's TLS listener")
        cls.tmp = h.make_tmpdir()
        d = os.path.join(cls.tmp, "certs")
        os.mkdir(d)
        make_ca(d, "ca")
        make_cert(d, "proxy", "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
        cls.ca = os.path.join(d, "ca.crt")
        cls.mc = h.Memcached()
        cls.tls_port = h.free_port()
        cls.proxy = h.Mcring([h.server_line(cls.mc.addr)], cls.tmp,
                             extra={"tls_listen": "%s:%d" % (HOST, cls.tls_port),
                                    "tls_cert": "certs/proxy.crt", "tls_key": "certs/proxy.key"},
                             args=["--threads", "1"])

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.mc.stop()
        h.remove_tmpdir(cls.tmp)

    def _stall_then_serve(self, partial):
        stall = socket.create_connection((HOST, self.tls_port), timeout=5)
        try:
            stall.sendall(partial)
            time.sleep(0.3)
            c0 = cpu_ticks(self.proxy.pid)
            # A plaintext client of the same worker is answered at once.
            with h.Conn(HOST, self.proxy.port, timeout=2.0) as c:
                c.send(b"version\r\n")
                got = c.recv_until(lambda b: b.endswith(b"\r\n"), timeout=2.0)
            self.assertTrue(got.startswith(b"VERSION "), got)
            # A well-behaved TLS client completes its handshake and is served.
            ctx = ssl.create_default_context(cafile=self.ca)
            s = ctx.wrap_socket(socket.create_connection((HOST, self.tls_port), timeout=2.0),
                                server_hostname="localhost")
            try:
                s.sendall(b"version\r\n")
                self.assertTrue(s.recv(100).startswith(b"VERSION "))
            finally:
                s.close()
            time.sleep(1.0)
            used = cpu_ticks(self.proxy.pid) - c0
            hz = os.sysconf("SC_CLK_TCK")
            self.assertLess(used, hz, "mcring used %d ticks in ~1s with one stalled "
                            "handshake (busy loop)" % used)
        finally:
            stall.close()

    def test_one_byte_of_client_hello_does_not_block_worker(self):
        # Repro: connect to the TLS port, send b"\x16", keep the socket open.
        self._stall_then_serve(b"\x16")

    def test_half_client_hello_does_not_block_worker(self):
        # A TLS record header announcing 512 bytes and one byte of handshake.
        self._stall_then_serve(bytes.fromhex("160301020001"))


def strict_json(tc, data):
    """json.loads, reported as a test failure (not an error) with the offending bytes."""
    try:
        return json.loads(data)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        pos = getattr(e, "start", None) or getattr(e, "pos", 0) or 0
        tc.fail("not valid JSON (%s) near %r" % (e, data[max(0, pos - 40):pos + 20]))


def drive_hot(port, keys, seconds=2.2):
    """Binary gets of `keys` (equal shares) for `seconds`: each becomes a hot key."""
    conn = bw.BinaryConn(port, timeout=5)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            data = b"".join(bw.packet(bw.GET, key=k, opaque=1) for k in keys for _ in range(20))
            conn.send(data + bw.packet(bw.NOOP, opaque=999))
            conn.until(999)
    finally:
        conn.close()


def prom_label_values(line):
    """The raw (escaped) label values of one Prometheus sample line."""
    out, i = [], line.index(b"{") + 1
    while True:
        q = line.index(b'="', i) + 2
        j, val = q, bytearray()
        while line[j:j + 1] != b'"':
            if line[j:j + 1] == b"\\":
                val += line[j:j + 2]
                j += 2
            else:
                val += line[j:j + 1]
                j += 1
        out.append(bytes(val))
        i = j + 1
        if line[i:i + 1] != b",":
            return out
        i += 1


class HotKeyOutputEscaping(unittest.TestCase):
    """Hot keys come from clients: whatever bytes a key holds, /hotkeys must stay JSON, /metrics
    (hot_key_metrics: plain) must stay Prometheus text, `stats hotkeys` must stay STAT lines."""

    def setUp(self):
        self.c = h.Cluster(n_backends=2, extra={"hot_key_metrics": "plain"})
        self.addCleanup(self.c.close)

    def test_hotkeys_json_valid_with_invalid_utf8_key(self):
        # Repro: get of the key b"\xff\xfebad" (legal in memcached's text protocol too: any byte
        # but space/control) as ~30% of the traffic; then GET /hotkeys.
        drive_hot(self.c.port, [b"\xff\xfebad", b"plain"])
        status, body = h.admin_http(self.c.proxy.admin_port, path="/hotkeys")
        self.assertEqual(status, 200)
        self.assertIn(b"bad", body)  # the key is listed...
        doc = strict_json(self, body)  # ...and the view is still JSON (RFC 8259: UTF-8)
        self.assertTrue(doc["pools"]["alpha"])

    def test_text_client_invalid_utf8_key_breaks_hotkeys_json(self):
        # The same through the text protocol, so no binary client is needed.
        with self.c.conn() as t:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.2:
                t.send(b"get \xc0\xafk other\r\n" * 50)
                t.recv_until(lambda b: b.count(b"END\r\n") >= 50, timeout=5)
        status, body = h.admin_http(self.c.proxy.admin_port, path="/hotkeys")
        self.assertEqual(status, 200)
        strict_json(self, body)

    def test_metrics_plain_hot_key_label_is_valid_prometheus(self):
        # Repro: a binary get of b"ctl\x01key" made hot; mcring wrote key="ctl\u0001key": `\u` is
        # not an escape of the Prometheus text format (only \\ \" \n), so the scrape fails.
        drive_hot(self.c.port, [b"ctl\x01key", b"\xff\xfeutf", b"ok"])
        status, body = h.admin_http(self.c.proxy.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        lines = [l for l in body.split(b"\n") if l.startswith(b"mcring_hot_key_rate{")]
        self.assertTrue(lines, "no mcring_hot_key_rate sample")
        for line in lines:
            for v in prom_label_values(line):
                v.decode("utf-8")  # label values are UTF-8
                i = 0
                while i < len(v):
                    if v[i:i + 1] == b"\\":
                        self.assertIn(v[i + 1:i + 2], (b"\\", b'"', b"n"),
                                      "invalid escape in %r" % line)
                        i += 2
                    else:
                        self.assertGreaterEqual(v[i], 0x20, "raw control byte in %r" % line)
                        i += 1

    def test_stats_hotkeys_not_forged_by_binary_key(self):
        # Repro: a binary client makes the key b"x\r\nEND\r\nSTAT forged 1" hot (binary keys may
        # hold any byte); `stats hotkeys` then printed it raw: the reply ended early at the
        # forged END and the reader took the rest as the answer to its next request.
        drive_hot(self.c.port, [b"x\r\nEND\r\nSTAT forged 1", b"y"])
        with self.c.conn() as t:
            t.send(b"stats hotkeys\r\nversion\r\n")
            buf = t.recv_until(lambda b: b"VERSION " in b, timeout=5)
        stats, _, rest = buf.partition(b"END\r\n")
        for line in stats.split(b"\r\n")[:-1]:
            self.assertTrue(line.startswith(b"STAT "), "not a STAT line: %r" % line)
        self.assertTrue(rest.startswith(b"VERSION "), "after the first END: %r" % rest[:80])
        self.assertNotIn(b"STAT forged", buf)


class WhatIfJson(unittest.TestCase):
    def test_whatif_error_is_json_with_invalid_utf8(self):
        # Repro: POST /whatif/alpha with the body b"\x00\xff\n": the 400 body echoes the line with
        # the raw 0xff byte, which json.loads refuses (the console then shows a parse error).
        c = h.Cluster(n_backends=1)
        self.addCleanup(c.close)
        ap = c.proxy.admin_port
        body = b"\x00\xff\n"
        with socket.create_connection((HOST, ap), timeout=5) as s:
            s.sendall(b"POST /whatif/alpha HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n"
                      b"Connection: close\r\n\r\n" % (ap, len(body)) + body)
            data = b""
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                d = s.recv(65536)
                if not d:
                    break
                data += d
        head, _, payload = data.partition(b"\r\n\r\n")
        self.assertIn(b" 400 ", head.split(b"\r\n")[0])
        strict_json(self, payload)


if __name__ == "__main__":
    unittest.main()
