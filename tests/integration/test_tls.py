"""TLS and memcached's authentication, end to end.

Backends are real memcached processes started with -Z (TLS, certificates generated here with
`openssl req`) and -Y (ASCII authentication); clients are Python's ssl module and
`openssl s_client`. One mcring serves two TLS-only pools:
  alpha  TLS listener, clients must authenticate (client_auth_file); servers over TLS with
         mcring's own credentials (server_auth_file), except one plaintext server (tls=off)
  beta   mutual TLS (tls_verify_client), no client authentication
"""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import unittest

import harness as h
from harness import HOST

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


def run_openssl(args, cwd):
    subprocess.run([OPENSSL] + args, cwd=cwd, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)


def make_ca(d, name):
    run_openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", name + ".key", "-out", name + ".crt", "-days", "2",
                 "-subj", "/CN=" + name], d)


def make_cert(d, name, ca, cn, san=None):
    """A key and a certificate for `cn` signed by `ca` (files name.key, name.crt)."""
    run_openssl(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn], d)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        if san:
            f.write("subjectAltName=%s\n" % san)
        else:
            f.write("extendedKeyUsage=clientAuth\n")
    run_openssl(["x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
                 "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", ext], d)


class TlsMemcached(h.Memcached):
    """memcached with -Z and -Y: ready once a TLS client authenticates and gets VERSION."""

    def __init__(self, certs, auth_file, tls=True, require_client_cert=False):
        self.certs, self.tls, self.client_cert = certs, tls, require_client_cert
        args = ["-Y", auth_file]
        if tls:
            opts = "ssl_chain_cert=%s,ssl_key=%s" % (os.path.join(certs, "backend.crt"),
                                                    os.path.join(certs, "backend.key"))
            if require_client_cert:  # SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                opts += ",ssl_verify_mode=2,ssl_ca_cert=%s" % os.path.join(certs, "ca.crt")
            args += ["-Z", "-o", opts]
        super().__init__(extra_args=args)

    def _wait_ready(self, proc, port, timeout, host=HOST):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            try:
                s = socket.create_connection((host, port), timeout=0.5)
                if self.tls:
                    ctx = ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))
                    if self.client_cert:
                        ctx.load_cert_chain(os.path.join(self.certs, "client.crt"),
                                            os.path.join(self.certs, "client.key"))
                    s = ctx.wrap_socket(s, server_hostname="localhost")
                with s:
                    s.settimeout(1.0)
                    s.sendall(b"set a 0 0 14\r\nmcring hunter2\r\nversion\r\n")
                    got = b""
                    while b"VERSION " not in got:
                        chunk = s.recv(100)
                        if not chunk:
                            break
                        got += chunk
                    if b"VERSION " in got:
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def get(self, key):
        raise NotImplementedError("TLS backend: read it through mcring")


def values(reply):
    """{key: value} of a retrieval reply."""
    return {k: v for k, v, _flags, _cas in h.parse_values(reply)}


def auth_cmd(token, line=b"set auth 0 0", suffix=b""):
    """memcached's ASCII authentication: a set carrying "user password"."""
    return line + b" %d" % len(token) + suffix + b"\r\n" + token + b"\r\n"


def recv_reply(s, done, timeout=10.0):
    """Reads from socket `s` until done(buffer) or EOF (then b'<EOF>' is appended)."""
    s.settimeout(timeout)
    buf = b""
    deadline = time.monotonic() + timeout
    while not done(buf) and time.monotonic() < deadline:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, ssl.SSLError, BrokenPipeError) as e:
            return buf + b"<" + type(e).__name__.encode() + b">"
        except socket.timeout:
            break
        if not chunk:
            return buf + b"<EOF>"
        buf += chunk
    return buf


def line_done(buf):
    return buf.endswith(b"\r\n")


def end_done(buf):
    return buf.endswith(b"END\r\n") or buf.startswith(b"CLIENT_ERROR") and buf.endswith(b"\r\n")


class TlsAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if h.DIRECT:
            raise unittest.SkipTest("mcring's TLS listeners and authentication")
        cls.tmp = h.make_tmpdir()
        d = cls.certs = os.path.join(cls.tmp, "certs")
        os.mkdir(d)
        make_ca(d, "ca")
        make_ca(d, "rogue")  # a CA nobody trusts
        make_cert(d, "backend", "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
        make_cert(d, "proxy1", "ca", "mcring-1", "DNS:localhost,IP:127.0.0.1")
        make_cert(d, "proxy2", "ca", "mcring-2", "DNS:localhost,IP:127.0.0.1")
        make_cert(d, "client", "ca", "good-client")
        make_cert(d, "badclient", "rogue", "bad-client")
        cls.server_auth = os.path.join(cls.tmp, "memcached.auth")
        with open(cls.server_auth, "w") as f:
            f.write("mcring:hunter2\n")
        os.chmod(cls.server_auth, 0o644)
        cls.client_auth = os.path.join(cls.tmp, "clients.auth")
        with open(cls.client_auth, "w") as f:
            f.write("alice:s3cret\nbob:pw2\n")
        # The listener's files, swapped by test_cert_swap_under_load.
        shutil.copy(os.path.join(d, "proxy1.crt"), os.path.join(cls.tmp, "listener.crt"))
        shutil.copy(os.path.join(d, "proxy1.key"), os.path.join(cls.tmp, "listener.key"))
        cls.backends = [TlsMemcached(d, cls.server_auth), TlsMemcached(d, cls.server_auth),
                        TlsMemcached(d, cls.server_auth, tls=False),
                        TlsMemcached(d, cls.server_auth, require_client_cert=True)]
        cls.beta_port = h.free_port()
        cls.gamma_port = h.free_port()
        cls.delta_port = h.free_port()
        with open(os.path.join(cls.tmp, "wrong.auth"), "w") as f:
            f.write("mcring:not-the-password\n")
        # alpha: two TLS servers and a plaintext one (tls=off); beta: one that requires mcring's
        # client certificate.
        servers = [h.server_line(cls.backends[0].addr), h.server_line(cls.backends[1].addr),
                   h.server_line(cls.backends[2].addr) + " tls=off"]
        extra = {
            "listen_tls": "true",
            "tls_cert": "listener.crt",
            "tls_key": "listener.key",
            "client_auth_file": "clients.auth",
            "server_tls": "true",
            "server_tls_ca": "certs/ca.crt",
            "server_auth_file": "memcached.auth",
        }
        beta = "\n".join([
            "beta:",
            "  listen: %s:%d" % (HOST, cls.beta_port),
            "  listen_tls: true",
            "  tls_cert: certs/proxy1.crt",
            "  tls_key: certs/proxy1.key",
            "  tls_ca: certs/ca.crt",
            "  tls_verify_client: true",
            "  server_tls: true",
            "  server_tls_ca: certs/ca.crt",
            "  server_tls_name: localhost",
            "  server_tls_cert: certs/client.crt",  # its server requires a client certificate
            "  server_tls_key: certs/client.key",
            "  server_auth_file: memcached.auth",
            "  servers:",
            "    - %s" % h.server_line(cls.backends[3].addr),
        ]) + "\n"
        # gamma: the server's certificate does not carry the name mcring expects; delta: the
        # server refuses mcring's credentials. Both plaintext towards their clients.
        beta += "\n".join([
            "gamma:",
            "  listen: %s:%d" % (HOST, cls.gamma_port),
            "  server_tls: true",
            "  server_tls_ca: certs/ca.crt",
            "  server_tls_name: not-this-server.example",
            "  server_auth_file: memcached.auth",
            "  servers:",
            "    - %s" % h.server_line(cls.backends[0].addr),
            "delta:",
            "  listen: %s:%d" % (HOST, cls.delta_port),
            "  server_tls: true",
            "  server_tls_ca: certs/ca.crt",
            "  server_auth_file: wrong.auth",
            "  servers:",
            "    - %s" % h.server_line(cls.backends[1].addr),
        ]) + "\n"

        class TwoPools(h.Mcring):
            def write_config(self, port):
                super().write_config(port)
                with open(self.config_path, "a") as f:
                    f.write(beta)

        cls.proxy = TwoPools(servers, cls.tmp, extra=extra, args=["-v", "3"])
        cls.port = cls.proxy.port

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "proxy", None):
            cls.proxy.stop()
        for b in getattr(cls, "backends", []):
            b.stop()
        if getattr(cls, "tmp", None):
            h.remove_tmpdir(cls.tmp)

    # ---------------------------------------------------------------- helpers

    def client_context(self, cert=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.certs, "ca.crt"))
        if cert:
            ctx.load_cert_chain(os.path.join(self.certs, cert + ".crt"),
                                os.path.join(self.certs, cert + ".key"))
        return ctx

    def tls_conn(self, port=None, cert=None, authenticate=True):
        s = socket.create_connection((HOST, port or self.port), timeout=10)
        s = self.client_context(cert).wrap_socket(s, server_hostname="localhost")
        if authenticate and (port or self.port) == self.port:
            s.sendall(auth_cmd(b"alice s3cret"))
            self.assertEqual(recv_reply(s, line_done), b"STORED\r\n")
        return s

    def request(self, s, data, done=end_done):
        s.sendall(data)
        return recv_reply(s, done)

    def metric(self, name):
        status, body = h.admin_http(self.proxy.admin_port, path="/metrics")
        self.assertEqual(status, 200)
        for line in body.decode().splitlines():
            if line.startswith("mcring_%s_total " % name):
                return int(float(line.split()[1]))
        self.fail("no metric %s" % name)

    # ---------------------------------------------------------------- clients

    def test_python_ssl_set_get_multiget(self):
        """Set, get and a multi-get over all three servers (two TLS, one plaintext)."""
        keys = ["py:%d" % i for i in range(40)]
        with self.tls_conn() as s:
            self.assertTrue(s.version() in ("TLSv1.2", "TLSv1.3"))
            for k in keys:
                v = ("value-of-" + k).encode()
                self.assertEqual(self.request(s, h.set_cmd(k, v), line_done), b"STORED\r\n")
            for k in keys[:5]:
                reply = self.request(s, b"get " + k.encode() + b"\r\n")
                self.assertEqual(values(reply), {k.encode(): ("value-of-" + k).encode()})
            reply = self.request(s, b"get " + " ".join(keys).encode() + b"\r\n")
            self.assertEqual(values(reply),
                             {k.encode(): ("value-of-" + k).encode() for k in keys})

    def test_large_values_pipelined(self):
        """Values from 1 byte to 1 MiB, pipelined, through TLS on both sides: many TLS records
        per value, partial writes, bytes OpenSSL holds after a readiness event."""
        sizes = [1, 1000, 16383, 16385, 65536, 300000, 1000000]
        items = {"big:%d" % n: os.urandom(n // 2 + 1).hex().encode()[:n] for n in sizes}
        with self.tls_conn() as s:
            s.sendall(b"".join(h.set_cmd(k, v) for k, v in items.items()))
            got = recv_reply(s, lambda b: b.count(b"STORED\r\n") == len(items), timeout=30)
            self.assertEqual(got, b"STORED\r\n" * len(items))
            keys = list(items)
            s.sendall(b"".join(b"get " + k.encode() + b"\r\n" for k in keys) +
                      b"get " + " ".join(keys).encode() + b"\r\n")
            total = 2 * sum(len(v) for v in items.values())
            reply = recv_reply(s, lambda b: len(b) > total and b.endswith(b"END\r\n") and
                               b.count(b"END\r\n") >= len(keys) + 1, timeout=30)
            unit = {k: b"VALUE %s 0 %d\r\n%s\r\n" % (k.encode(), len(v), v)
                    for k, v in items.items()}
            expected = b"".join(unit[k] + b"END\r\n" for k in keys)
            expected += b"".join(unit[k] for k in keys) + b"END\r\n"
            self.assertEqual(len(reply), len(expected))
            self.assertTrue(reply == expected)  # (not assertEqual: 2.7 MB of diff)

    def test_openssl_s_client(self):
        keys = [b"sc:%d" % i for i in range(12)]
        script = auth_cmd(b"alice s3cret")
        script += b"".join(h.set_cmd(k.decode(), b"v-" + k) for k in keys)
        script += b"get " + keys[0] + b"\r\n"
        script += b"get " + b" ".join(keys) + b"\r\n"
        script += b"quit\r\n"
        out = subprocess.run(
            [OPENSSL, "s_client", "-connect", "%s:%d" % (HOST, self.port), "-CAfile",
             os.path.join(self.certs, "ca.crt"), "-servername", "localhost",
             "-verify_return_error", "-quiet"],
            input=script, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertIn(b"verify return:1", out.stderr)
        body = out.stdout
        self.assertTrue(body.startswith(b"STORED\r\n" * (1 + len(keys))), body[:200])
        rest = body[len(b"STORED\r\n") * (1 + len(keys)):]
        first_end = rest.index(b"END\r\n") + 5
        self.assertEqual(values(rest[:first_end]), {keys[0]: b"v-" + keys[0]})
        self.assertEqual(values(rest[first_end:]), {k: b"v-" + k for k in keys})

    def test_plaintext_client_refused_others_unaffected(self):
        with self.tls_conn() as good:
            self.assertEqual(self.request(good, h.set_cmd("pt", b"1"), line_done), b"STORED\r\n")
            before = self.metric("client_tls_failures")
            with socket.create_connection((HOST, self.port), timeout=10) as plain:
                plain.sendall(auth_cmd(b"alice s3cret") + b"get pt\r\n")
                got = recv_reply(plain, lambda b: False)
                self.assertNotIn(b"STORED", got)
                self.assertNotIn(b"VALUE", got)
                self.assertTrue(got.endswith(b">"), got)  # closed (EOF or reset)
            self.assertEqual(values(self.request(good, b"get pt\r\n")), {b"pt": b"1"})
            deadline = time.monotonic() + 10
            while self.metric("client_tls_failures") == before and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertGreater(self.metric("client_tls_failures"), before)

    def test_mutual_tls_bad_certificate_refused(self):
        with self.tls_conn(self.beta_port, cert="client") as good:
            self.assertEqual(self.request(good, h.set_cmd("mt", b"ok"), line_done), b"STORED\r\n")
            for cert in ("badclient", None):
                refused = False
                try:
                    s = self.tls_conn(self.beta_port, cert=cert)
                    # TLS 1.3: the client's handshake ends before the server checks its
                    # certificate; the refusal arrives as an alert on the first read.
                    got = self.request(s, b"get mt\r\n")
                    refused = b"VALUE" not in got and got.endswith(b">")
                    s.close()
                except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
                    refused = True
                self.assertTrue(refused, cert)
            self.assertEqual(values(self.request(good, b"get mt\r\n")), {b"mt": b"ok"})
        with self.tls_conn(self.beta_port, cert="client") as again:
            self.assertEqual(values(self.request(again, b"get mt\r\n")), {b"mt": b"ok"})

    def test_backend_name_verified_and_credentials_refused(self):
        """A server whose certificate lacks the expected name, or that refuses mcring's
        credentials, is a failed connect: a write gets a SERVER_ERROR, a read a miss
        (unavailable_reads: miss, the default), never the value."""
        for port, why in ((self.gamma_port, "certificate verify failed"),
                          (self.delta_port, "refused mcring's server_auth_file credentials")):
            with socket.create_connection((HOST, port), timeout=10) as s:
                reply = self.request(s, b"set anything 0 0 1\r\nx\r\n", line_done)
                self.assertTrue(reply.startswith(b"SERVER_ERROR"), reply)
                self.assertEqual(self.request(s, b"get anything\r\n", line_done), b"END\r\n")
            deadline = time.monotonic() + 10
            while why not in self.proxy.log_tail(1 << 20) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertIn(why, self.proxy.log_tail(1 << 20))
        self.assertNotIn("not-the-password", self.proxy.log_tail(1 << 20))

    def test_bad_files_are_config_errors_naming_the_file(self):
        """`mcring -t` and a start both refuse a mismatched key or a malformed -Y file."""
        cfg = os.path.join(self.tmp, "bad.yml")
        bad_auth = os.path.join(self.tmp, "bad.auth")
        with open(bad_auth, "w") as f:
            f.write("alice:s3cret\nno colon here\n")
        for extra, needle in (
                ({"tls_cert": "certs/proxy1.crt", "tls_key": "certs/proxy2.key"},
                 "tls_key: key %s does not match certificate %s" % (
                     os.path.join(self.certs, "proxy2.key"), os.path.join(self.certs, "proxy1.crt"))),
                ({"tls_cert": "certs/missing.crt", "tls_key": "certs/proxy1.key"},
                 "certificate %s: cannot read" % os.path.join(self.certs, "missing.crt")),
                ({"tls_cert": "certs/proxy1.crt", "tls_key": "certs/proxy1.key",
                  "client_auth_file": "bad.auth"},
                 "%s: line 2 is not 'user:password'" % bad_auth)):
            extra = dict(extra, listen_tls="true")
            with open(cfg, "w") as f:
                f.write(h.pool_yaml("bad", h.free_port(), [h.server_line(self.backends[2].addr)],
                                    extra=extra))
            checked = h.run_mcring(["-t", "-c", cfg])
            self.assertEqual(checked.returncode, 1, checked.stdout)
            self.assertIn(needle, checked.stderr.decode())
            started = h.run_mcring(["-c", cfg, "-s", "0"], timeout=20)
            self.assertNotEqual(started.returncode, 0)
            self.assertIn(needle, started.stderr.decode())
            self.assertNotIn("s3cret", started.stderr.decode() + checked.stderr.decode())

    # ---------------------------------------------------------------- authentication

    # What a client sends, one part at a time; each part's answer must be memcached's.
    EXCHANGES = [
        [b"get foo\r\n", b"version\r\n"],
        [auth_cmd(b"alice wrong"), b"get foo\r\n"],
        [auth_cmd(b"abc"), b"get foo\r\n"],
        [auth_cmd(b"alice s3cret"), b"get nothing-here\r\n"],
        [auth_cmd(b" alice  s3cret extra", b"set anything 5 100", b" noreply"),
         b"get nothing-here\r\n"],
        [b"add a 0 0 12\r\nalice s3cret\r\n", b"get foo\r\nget foo\r\n"],
        [b"set a 0 0 12\r\nalice s3cretXY", b"get foo\r\n"],
        [b"get foo\r\nget bar\r\n", auth_cmd(b"bob pw2"), b"get nothing-here\r\n"],
        [auth_cmd(b"bob\tpw2"), auth_cmd(b"bob wrong"), auth_cmd(b"bob pw2"),
         b"get nothing-here\r\n"],
        [b"set a 0 0 bad\r\n", b"get foo\r\n"],
    ]

    def exchange(self, s, parts):
        answers = []
        for part in parts:
            s.sendall(part)
            answers.append(recv_reply(s, lambda b: b.endswith(b"\r\n"), timeout=1.0))
        return answers

    def test_credentials_answered_as_memcached_does(self):
        """The same exchanges against memcached -Y (plaintext, same users) and mcring."""
        auth = os.path.join(self.tmp, "direct.auth")
        with open(auth, "w") as f:
            f.write("alice:s3cret\nbob:pw2\nmcring:hunter2\n")  # the last for its ready probe
        os.chmod(auth, 0o644)
        direct = TlsMemcached(self.certs, auth, tls=False)
        try:
            for parts in self.EXCHANGES:
                with socket.create_connection((HOST, direct.port), timeout=5) as m:
                    expected = self.exchange(m, parts)
                with self.tls_conn(authenticate=False) as s:
                    got = self.exchange(s, parts)
                self.assertEqual(got, expected, parts)
        finally:
            direct.stop()

    def test_wrong_or_missing_credentials_nothing_works(self):
        with self.tls_conn() as writer:
            self.request(writer, h.set_cmd("secret-key", b"secret-value"), line_done)
        before = self.metric("client_auth_failures")
        with self.tls_conn(authenticate=False) as s:
            self.assertEqual(self.request(s, b"get secret-key\r\n", line_done),
                             b"CLIENT_ERROR unauthenticated\r\n")
            self.assertEqual(self.request(s, b"set a 0 0 11\r\nalice wrong\r\n", line_done),
                             b"CLIENT_ERROR authentication failure\r\n")
            for cmd in (b"get secret-key\r\n", b"delete secret-key\r\n", b"stats\r\n",
                        b"mg secret-key v\r\n", b"incr secret-key 1\r\n"):
                self.assertEqual(self.request(s, cmd, line_done),
                                 b"CLIENT_ERROR unauthenticated\r\n", cmd)
            # A set is taken as another attempt (memcached's rule), never as a write.
            self.assertEqual(self.request(s, h.set_cmd("secret-key", b"overwritten"), line_done),
                             b"CLIENT_ERROR bad authentication token format\r\n")
        self.assertGreater(self.metric("client_auth_failures"), before)
        with self.tls_conn() as s:
            self.assertEqual(values(self.request(s, b"get secret-key\r\n")),
                             {b"secret-key": b"secret-value"})
        # Credentials never reach the log or the metrics.
        log = self.proxy.log_tail(1 << 20)
        status, metrics = h.admin_http(self.proxy.admin_port, path="/metrics")
        status2, stats = h.admin_http(self.proxy.admin_port, path="/stats")
        for text in (log.encode(), metrics, stats):
            for secret in (b"s3cret", b"hunter2", b"pw2"):
                self.assertNotIn(secret, text)

    def test_binary_client_cannot_skip_authentication(self):
        """A binary request (magic 0x80) where clients must authenticate: memcached -Y serves
        text only and answers CLIENT_ERROR unauthenticated; so does mcring, and a binary get of
        a stored key returns nothing of it."""
        import struct
        with self.tls_conn() as writer:
            self.request(writer, h.set_cmd("binary-secret", b"do-not-leak"), line_done)
        key = b"binary-secret"
        # A noop: memcached answers its header at once (a get with a body it leaves unanswered
        # until more bytes come, a quirk not copied).
        noop = struct.pack(">BBHBBHIIQ", 0x80, 0x0a, 0, 0, 0, 0, 0, 7, 0)
        get = struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(key), 0, 0, 0, len(key), 7, 0) + key
        auth = os.path.join(self.tmp, "direct-bin.auth")
        with open(auth, "w") as f:
            f.write("alice:s3cret\nmcring:hunter2\n")
        os.chmod(auth, 0o644)
        direct = TlsMemcached(self.certs, auth, tls=False)
        try:
            with socket.create_connection((HOST, direct.port), timeout=5) as m:
                expected = self.binary_then_auth(m, noop)
        finally:
            direct.stop()
        # memcached keeps the connection, and refuses even a text authentication on it after.
        self.assertEqual(expected, [b"CLIENT_ERROR unauthenticated\r\n"] * 2)
        with self.tls_conn(authenticate=False) as s:
            got = self.binary_then_auth(s, noop)
        self.assertEqual(got, expected)
        with self.tls_conn(authenticate=False) as s:
            got = self.binary_then_auth(s, get)
        self.assertEqual(got, expected)  # the stored value never comes back

    @staticmethod
    def binary_then_auth(s, get):
        s.sendall(get)
        first = recv_reply(s, line_done)
        s.sendall(auth_cmd(b"alice s3cret"))
        return [first, recv_reply(s, line_done)]

    # ---------------------------------------------------------------- reload

    def peer_cn(self):
        with self.tls_conn(authenticate=False) as s:
            return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]

    def reload_count(self):
        with self.tls_conn() as s:
            reply = self.request(s, b"stats reloads\r\n")
        return len(h.parse_reloads(reply))

    def wait_cn(self, cn, timeout=15.0):
        deadline = time.monotonic() + timeout
        while self.peer_cn() != cn and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.peer_cn()

    def swap_listener_files(self, name):
        """Puts certs/<name>.crt and .key in place of the listener's, each by rename."""
        for ext in ("crt", "key"):
            tmp = os.path.join(self.tmp, "listener.%s.tmp" % ext)
            shutil.copy(os.path.join(self.certs, "%s.%s" % (name, ext)), tmp)
            os.rename(tmp, os.path.join(self.tmp, "listener." + ext))

    def test_cert_swap_by_file_watch(self):
        """Renewing the certificate files is enough: they are watched like the config file."""
        self.assertEqual(self.wait_cn("mcring-1"), "mcring-1")
        try:
            self.swap_listener_files("proxy2")
            self.assertEqual(self.wait_cn("mcring-2"), "mcring-2")
        finally:
            self.swap_listener_files("proxy1")
        self.assertEqual(self.wait_cn("mcring-1"), "mcring-1")

    def test_cert_swap_under_load(self):
        """New certificate by SIGHUP while clients run: no request fails, old connections stay,
        new ones see the new certificate; then a mismatched key is refused, the last good one
        keeps serving, and the error names the file."""
        self.assertEqual(self.wait_cn("mcring-1"), "mcring-1")
        stop = threading.Event()
        errors, counts = [], [0, 0]
        progress = [0]  # requests done by all threads (a rough count is enough)

        def wait_progress(more, timeout=20.0):
            target = progress[0] + more
            deadline = time.monotonic() + timeout
            while progress[0] < target and not errors and time.monotonic() < deadline:
                time.sleep(0.02)

        def load(i):
            try:
                s = self.tls_conn()
                n = 0
                while not stop.is_set() and n < 200000:
                    k = "load-%d-%d" % (i, n % 50)
                    if self.request(s, h.set_cmd(k, b"x%d" % n), line_done) != b"STORED\r\n":
                        errors.append("set %s" % k)
                    got = values(self.request(s, b"get " + k.encode() + b"\r\n"))
                    if got != {k.encode(): b"x%d" % n}:
                        errors.append("get %s: %r" % (k, got))
                    n += 1
                    progress[0] += 1
                    if n % 25 == 0:  # new connections too, through the swap
                        s.close()
                        s = self.tls_conn()
                counts[i] = n
                s.close()
            except Exception as e:  # noqa: BLE001 - any failure is the test's failure
                errors.append(repr(e))

        threads = [threading.Thread(target=load, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        try:
            old = self.tls_conn()
            wait_progress(300)
            reloads = self.reload_count()
            self.swap_listener_files("proxy2")
            os.kill(self.proxy.pid, signal.SIGHUP)
            self.assertEqual(self.wait_cn("mcring-2"), "mcring-2")
            self.assertGreater(self.reload_count(), reloads)
            wait_progress(300)  # more load, on old and new connections, after the swap
            # A connection made before the swap still works.
            self.assertEqual(self.request(old, h.set_cmd("old-conn", b"1"), line_done),
                             b"STORED\r\n")
            # A key that does not match the certificate: rejected, mcring-2 keeps serving.
            reloads = self.reload_count()
            shutil.copy(os.path.join(self.certs, "proxy1.key"),
                        os.path.join(self.tmp, "listener.key.tmp"))
            os.rename(os.path.join(self.tmp, "listener.key.tmp"),
                      os.path.join(self.tmp, "listener.key"))
            os.kill(self.proxy.pid, signal.SIGHUP)
            deadline = time.monotonic() + 15
            while self.reload_count() == reloads and time.monotonic() < deadline:
                time.sleep(0.05)
            with self.tls_conn() as s:
                records = h.parse_reloads(self.request(s, b"stats reloads\r\n"))
            self.assertEqual(records[-1]["result"], "failed", records[-1])
            self.assertEqual(self.peer_cn(), "mcring-2")
            self.assertIn("does not match", self.proxy.log_tail(1 << 20))
            self.assertIn(os.path.join(self.tmp, "listener.key"), self.proxy.log_tail(1 << 20))
            self.assertTrue(records, records)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
            self.swap_listener_files("proxy1")
            os.kill(self.proxy.pid, signal.SIGHUP)
        self.assertEqual(errors, [])
        self.assertGreater(sum(counts), 0)
        self.assertEqual(self.request(old, b"get old-conn\r\n"),
                         b"VALUE old-conn 0 1\r\n1\r\nEND\r\n")
        old.close()


if __name__ == "__main__":
    unittest.main()
