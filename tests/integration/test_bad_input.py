"""Bad input: the endpoint answers memcached's own bytes and keeps the connection usable exactly
where memcached does (each case is also sent to a plain memcached and must match it)."""

import time
import unittest

from harness import SharedClusterCase

K251 = b"k" * 251
K250 = b"k" * 250
MIB = 1024 * 1024

# (name, request, expected reply bytes): each request ends with "mn\r\n", so the expected bytes end
# with "MN\r\n" and prove the connection is still usable and in sync afterwards.
CASES = [
    ("unknown command", b"bogus\r\n", b"ERROR\r\n"),
    ("unknown command with args", b"bogus a b c\r\n", b"ERROR\r\n"),
    ("uppercase command", b"GET foo\r\n", b"ERROR\r\n"),
    ("empty line", b"\r\n", b"ERROR\r\n"),
    ("binary garbage", b"\x00\xff\x80\r\n", b"ERROR\r\n"),
    ("get without key", b"get\r\n", b"ERROR\r\n"),
    ("mg without key", b"mg\r\n", b"ERROR\r\n"),
    ("set missing length", b"set k 0 0\r\n", b"ERROR\r\n"),
    ("touch missing exptime", b"touch k\r\n", b"ERROR\r\n"),
    ("verbosity missing level", b"verbosity\r\n", b"ERROR\r\n"),
    ("verbosity noreply (no level)", b"verbosity noreply\r\n", b""),  # memccapable sends this
    ("verbosity bad level", b"verbosity abc\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("verbosity two args", b"verbosity 1 2\r\n", b"OK\r\n"),
    ("verbosity many args", b"verbosity foo bar my\r\n", b"ERROR\r\n"),
    ("stats unknown group", b"stats bogus\r\n", b"ERROR\r\n"),
    ("set bad flags (data line is then a command)", b"set k abc 0 1\r\nx\r\n",
     b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("set negative flags", b"set k -1 0 1\r\nx\r\n",
     b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("set bad length", b"set k 0 0 abc\r\nx\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("set negative length", b"set k 0 0 -1\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("set length 2^32-1", b"set k 0 0 4294967295\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("set too many tokens", b"set k 0 0 1 noreply extra\r\nx\r\n", b"ERROR\r\nERROR\r\n"),
    ("cas missing cas unique", b"cas k 0 0 1\r\nx\r\n", b"ERROR\r\nERROR\r\n"),
    ("incr bad delta", b"incr k abc\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n"),
    ("incr negative delta", b"incr k -1\r\n", b"CLIENT_ERROR invalid numeric delta argument\r\n"),
    ("incr delta over 2^64", b"incr k 99999999999999999999\r\n",
     b"CLIENT_ERROR invalid numeric delta argument\r\n"),
    ("touch bad exptime", b"touch k abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n"),
    ("gat bad exptime", b"gat abc k\r\n", b"CLIENT_ERROR invalid exptime argument\r\n"),
    ("delete with time", b"delete k 5\r\n",
     b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"),
    ("flush_all bad delay", b"flush_all abc\r\n", b"CLIENT_ERROR invalid exptime argument\r\n"),
    ("ms without length", b"ms foo\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("ms bad length", b"ms foo bar\r\nx\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("mg bad base64 key", b"mg !!!! b v\r\n", b"CLIENT_ERROR error decoding key\r\n"),
    # Keys longer than 250 bytes.
    ("get key > 250", b"get " + K251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("multi-get with one key > 250", b"get a " + K251 + b" b\r\n",
     b"CLIENT_ERROR bad command line format\r\n"),
    ("gat key > 250", b"gat 0 " + K251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("set key > 250 (data line is then a command)", b"set " + K251 + b" 0 0 1\r\nx\r\n",
     b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("delete key > 250", b"delete " + K251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("incr key > 250", b"incr " + K251 + b" 1\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("touch key > 250", b"touch " + K251 + b" 1\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("mg key > 250", b"mg " + K251 + b" v\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    ("ms key > 250", b"ms " + K251 + b" 1\r\nx\r\n", b"CLIENT_ERROR bad command line format\r\nERROR\r\n"),
    ("get 5000-byte key", b"get " + b"x" * 5000 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n"),
    # Data blocks whose last two bytes are not \r\n: value + 2 bytes are dropped, the rest is
    # read as the next command line.
    ("bad data chunk (too long by 1)", b"set k 0 0 1\r\nxy\r\nget k\r\n",
     b"CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n"),
    ("bad data chunk (too long by 2)", b"set k 0 0 1\r\nxyz\r\nget k\r\n",
     b"CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n"),
    ("bad data chunk ms", b"ms k 1\r\nxy\r\nmg k v\r\n", b"CLIENT_ERROR bad data chunk\r\nERROR\r\nEN\r\n"),
    # noreply silences the CLIENT_ERROR too, not the ERROR for the leftover "\n".
    ("bad data chunk noreply", b"set k 0 0 1 noreply\r\nxy\r\n", b"ERROR\r\n"),
    # Accepted oddities, answered as memcached does.
    ("bare LF line ends", b"set k 0 0 1\nx\r\nget k\n", b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n"),
    ("extra spaces between keys", b"get  nosuch1   nosuch2 \r\n", b"END\r\n"),
    ("set 6th token not noreply", b"set k 0 0 1 extra\r\nx\r\n", b"STORED\r\n"),
    ("delete 0 noreply", b"delete k 0 noreply\r\n", b""),
    ("key of exactly 250 bytes", b"set " + K250 + b" 0 0 1\r\nx\r\nget " + K250 + b"\r\n",
     b"STORED\r\nVALUE " + K250 + b" 0 1\r\nx\r\nEND\r\n"),
    # A last token starting with "HTTP/" hangs up only in the last branch of memcached's command
    # dispatch (HTTP_HANGUPS below); these lines never reach it, or have another last token.
    ("HTTP/ after a g command", b"gxx / HTTP/1.0\r\n", b"ERROR\r\n"),
    ("HTTP/ after an s command", b"sxx HTTP/1.0\r\n", b"ERROR\r\n"),
    ("HTTP/ after a one-byte command", b"H HTTP/1.1\r\n", b"ERROR\r\n"),
    ("HTTP/ after a two-byte m command", b"mx HTTP/1.1\r\n", b"ERROR\r\n"),
    ("HTTP/ after watch", b"watch HTTP/1.1\r\n", b"ERROR\r\n"),
    ("HTTP/ after lru", b"lru HTTP/1.1\r\n", b"ERROR\r\n"),
    ("HTTP/ after extstore", b"extstore HTTP/1.1\r\n", b"ERROR\r\n"),
    ("http/ in lower case", b"FOO http/1.1\r\n", b"ERROR\r\n"),
    ("HTTP without slash", b"FOO HTTPx\r\n", b"ERROR\r\n"),
    ("HTTP/ not the last token", b"FOO HTTP/1.1 x\r\n", b"ERROR\r\n"),
    ("HTTP/ after a tab", b"FOO\tHTTP/1.0\r\n", b"ERROR\r\n"),
    ("HTTP/ after a NUL", b"GET /\x00 HTTP/1.0\r\n", b"ERROR\r\n"),
    ("HTTP/ as 24th token", b"FOO " + b"a " * 22 + b"HTTP/1.0\r\n", b"ERROR\r\n"),
    ("get with HTTP/ key", b"get / HTTP/1.0\r\n", b"END\r\n"),
    ("delete HTTP/ key", b"delete HTTP/1.1\r\n", b"NOT_FOUND\r\n"),
]

# memcached hangs up at once, without a reply, on a line whose command it does not know and whose
# last token (of at most 23) starts with "HTTP/": a browser page cannot talk to the cache across
# protocols (memcached's t/malicious-commands.t has the first three).
HTTP_HANGUPS = [
    b"GET / HTTP/1.0\r\n",
    b"PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1\r\n",
    b"DELETE HTTP/1.1\r\n",
    b"POST /cache HTTP/1.1\r\nHost: 127.0.0.1:11211\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1\r\n",
    b"Get HTTP/1.1\r\n",
    b"mxx HTTP/1.1\r\n",
    b"FOO HTTP/\r\n",
    b"FOO HTTP/1.1 \r\n",
    b"   GET / HTTP/1.0   \r\n",
    b"GET / HTTP/1.0\n",
    b"GET / HTTP/1.0\r\r\n",
    b"FOO HTTP/1.0\x00junk\r\n",
    b"FOO " + b"a " * 21 + b"HTTP/1.0 b\r\n",  # the 23rd token: memcached stops there
]


class BadInputTest(SharedClusterCase):
    # As the reference memcached (no -F): a bad flush_all delay is an error of its own.
    CLUSTER_ARGS = {"n_backends": 3, "extra": {"allow_flush_all": "true"}}
    REFERENCE = True

    def exchange(self, conn, req, expected_len, timeout=5.0):
        conn.send(req)
        return conn.recv_exact(expected_len, timeout) + conn.silence(0.05)

    def check(self, name, req, expected, timeout=5.0):
        """req + mn on a fresh connection to both; both must answer expected + MN."""
        want = expected + b"MN\r\n"
        with self.ref.conn() as r, self.cl.conn() as c:
            ref_got = self.exchange(r, req + b"mn\r\n", len(want), timeout)
            self.assertEqual(ref_got, want, "[%s] the test's expectation is not what memcached "
                             "answers" % name)
            got = self.exchange(c, req + b"mn\r\n", len(want), timeout)
            self.assertEqual(got, want, "[%s] request %r" % (name, req[:120]))
            self.assertTrue(c.alive(), "[%s] connection unusable afterwards" % name)

    def test_cases(self):
        for name, req, expected in CASES:
            with self.subTest(name):
                self.check(name, req, expected)

    def test_control_chars_in_key_are_key_bytes(self):
        # memcached splits the line on spaces only, so \x01, \t, \x7f or a "\r" left before the
        # line's "\r\n" are key bytes (load generators such as memcaslap send such keys).
        for k in (b"a\x01b", b"a\tb", b"a\x7fb", b"\x10\x1f" * 4 + b"k", b"a\r"):
            with self.subTest(k):
                with self.cl.conn() as c:
                    c.send(b"set " + k + b" 0 0 1\r\nx\r\nget " + k + b"\r\nmn\r\n")
                    got = c.recv_until(lambda b: b.endswith(b"MN\r\n"))
                self.assertEqual(got, b"STORED\r\nVALUE " + k + b" 0 1\r\nx\r\nEND\r\nMN\r\n")

    def test_too_large_value(self):
        for size in (MIB + 1, 2 * MIB):
            with self.subTest(size=size):
                req = b"set big 0 0 %d\r\n" % size + b"x" * size + b"\r\nget big\r\n"
                self.check("too large %d" % size, req,
                           b"SERVER_ERROR object too large for cache\r\nEND\r\n", timeout=20)
        # Exactly 1 MiB: not over item_size_max, but memcached (item header overhead) refuses it.
        self.check("1 MiB", b"set big 0 0 %d\r\n" % MIB + b"y" * MIB + b"\r\n",
                   b"SERVER_ERROR object too large for cache\r\n", timeout=20)
        self.check("too large ms", b"ms big %d\r\n" % (MIB + 1) + b"x" * (MIB + 1) + b"\r\n",
                   b"SERVER_ERROR object too large for cache\r\n", timeout=20)
        self.check("too large noreply", b"set big 0 0 %d noreply\r\n" % (MIB + 1) + b"x" * (MIB + 1)
                   + b"\r\n", b"", timeout=20)

    def test_too_large_value_split_writes(self):
        # The oversize value arrives in many small writes; it is swallowed whole, then in sync.
        size = MIB + 4096
        for conn, name in ((self.ref.conn(), "memcached"), (self.cl.conn(), "endpoint")):
            with conn:
                conn.send(b"set big 0 0 %d\r\n" % size)
                data = b"z" * size + b"\r\n"
                for i in range(0, len(data), 65536):
                    conn.send(data[i:i + 65536])
                conn.send(b"get big\r\nmn\r\n")
                want = b"SERVER_ERROR object too large for cache\r\nEND\r\nMN\r\n"
                self.assertEqual(conn.recv_exact(len(want), 20) + conn.silence(0.05), want, name)

    def test_too_large_set_removes_old_value(self):
        # memcached unlinks the old item when a set (or ms) is refused as too large, so no stale
        # value survives; add/replace/append/prepend/cas leave it.
        v = b"x" * (MIB + 1)
        cases = [
            ("set", b"set big 0 0 1\r\nA\r\nset big 0 0 %d\r\n%s\r\nget big\r\n" % (len(v), v),
             b"STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n"),
            ("ms", b"ms big 1\r\nA\r\nms big %d\r\n%s\r\nmg big v\r\n" % (len(v), v),
             b"HD\r\nSERVER_ERROR object too large for cache\r\nEN\r\n"),
            ("append", b"set big 0 0 1\r\nA\r\nappend big 0 0 %d\r\n%s\r\nget big\r\n" % (len(v), v),
             b"STORED\r\nSERVER_ERROR object too large for cache\r\nVALUE big 0 1\r\nA\r\nEND\r\n"),
        ]
        for name, req, want in cases:
            with self.subTest(name):
                self.check(name, req, want, timeout=20)

    def test_line_under_2048_without_newline_yet(self):
        # 2000 bytes of a line, a pause, then its end: not closed, answered normally.
        for conn in (self.ref.conn(), self.cl.conn()):
            with conn:
                conn.send(b"x" * 2000)
                time.sleep(0.2)
                conn.send(b"\r\nmn\r\n")
                self.assertEqual(conn.recv_exact(11) + conn.silence(0.05), b"ERROR\r\nMN\r\n")

    def test_long_line_without_newline_closes(self):
        # memcached hangs up without a word on more than 2048 bytes without a newline, unless
        # they start (after at most 100 spaces) with "get " or "gets " (getset.t: "incr" and
        # 2048 spaces).
        for req in (b"x" * 5000, b"set " + b"k" * 4000, b"mg " + b"k" * 3000, b"x" * 2100,
                    b"incr" + b" " * 2048, b" " * 101 + b"get a" + b" " * 2048):
            with self.subTest(len=len(req), start=req[:4]):
                for conn, name in ((self.ref.conn(), "memcached"), (self.cl.conn(), "endpoint")):
                    with conn:
                        conn.send(req)
                        data, closed = conn.wait_closed(5)
                        self.assertTrue(closed, "%s: connection not closed after %d bytes without "
                                        "a newline, got %r" % (name, len(req), data[:200]))
                        self.assertEqual(data, b"", name)
                with self.cl.conn() as c2:  # everyone else unaffected
                    self.assertTrue(c2.alive())

    def test_long_line_after_pipelined_requests(self):
        # The replies to what came before are written, in order, then the connection closes.
        req = (b"set lp 0 0 2\r\nhi\r\nget lp a b c d e f\r\nmn\r\n" + b"incr" + b" " * 2048)
        got = {}
        for conn, name in ((self.ref.conn(), "memcached"), (self.cl.conn(), "endpoint")):
            with conn:
                conn.send(req)
                data, closed = conn.wait_closed(5)
                self.assertTrue(closed, name)
                got[name] = data
        self.assertEqual(got["memcached"], b"STORED\r\nVALUE lp 0 2\r\nhi\r\nEND\r\nMN\r\n")
        self.assertEqual(got["endpoint"], got["memcached"])

    def test_http_request_lines_hang_up(self):
        for req in HTTP_HANGUPS:
            with self.subTest(req=req[:40]):
                for conn, name in ((self.ref.conn(), "memcached"), (self.cl.conn(), "endpoint")):
                    with conn:
                        conn.send(req)
                        data, closed = conn.wait_closed(5)
                        self.assertEqual((data, closed), (b"", True), "%s answered %r" % (name, req))
                with self.cl.conn() as c2:
                    self.assertTrue(c2.alive())

    def test_http_line_after_pipelined_requests(self):
        # A browser's request behind valid commands: their replies first, in order, then the
        # hang-up; nothing after the HTTP line is answered.
        req = (b"set hp 0 0 2\r\nhi\r\nget hp a b c d e f\r\nmn\r\n"
               b"GET / HTTP/1.1\r\nHost: x\r\n\r\nmn\r\n")
        got = {}
        for conn, name in ((self.ref.conn(), "memcached"), (self.cl.conn(), "endpoint")):
            with conn:
                conn.send(req)
                data, closed = conn.wait_closed(5)
                self.assertTrue(closed, "%s kept the connection: %r" % (name, data))
                got[name] = data
        self.assertEqual(got["memcached"], b"STORED\r\nVALUE hp 0 2\r\nhi\r\nEND\r\nMN\r\n")
        self.assertEqual(got["endpoint"], got["memcached"])

    def test_long_get_line_is_not_closed(self):
        # get/gets lines may be longer than 2048 bytes (many keys), in pieces.
        keys = [b"lk%d" % i for i in range(3000)]
        line = b"get " + b" ".join(keys) + b"\r\n"
        for conn in (self.ref.conn(), self.cl.conn()):
            with conn:
                for i in range(0, len(line), 1000):
                    conn.send(line[i:i + 1000])
                    time.sleep(0.002)
                conn.send(b"mn\r\n")
                self.assertEqual(conn.recv_exact(9, 10) + conn.silence(0.05), b"END\r\nMN\r\n")


if __name__ == "__main__":
    unittest.main()
