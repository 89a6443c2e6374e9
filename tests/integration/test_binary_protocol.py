"""Binary-protocol clients against mcring, which speaks only the text protocol.

memcached decides a connection's protocol on its first byte (0x80: binary). mcring read a
binary client's packets as text lines: a binary `set` whose value held
`payload\\r\\ndelete victim\\r\\nset injected 0 0 3\\r\\nyes\\r\\n` deleted `victim` and created
`injected` (memcached stores the value as data), and other binary requests got no answer, so the
client hung until its own timeout. Now such a connection is closed at its first byte, before any
of it is read as text.
"""

import socket
import struct
import time
import unittest

from harness import (HOST, IntegrationCase, Memcached, Mcring, make_tmpdir, remove_tmpdir,
                     requires_proxy, server_line)

INJECTION = b"payload\r\ndelete victim\r\nset injected 0 0 3\r\nyes\r\n"


def binary_packet(opcode, key=b"", value=b"", extras=b""):
    """A binary-protocol request: magic 0x80, opcode, key length, extras length, data type 0,
    vbucket 0, total body length, opaque, cas 0, then extras, key, value."""
    body = len(extras) + len(key) + len(value)
    header = struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, body,
                         0x1234, 0)
    return header + extras + key + value


def text_request(port, data, end=b"END\r\n"):
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(data)
        buf = b""
        while not buf.endswith(end):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf


@requires_proxy
class BinaryProtocolTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.addCleanup(remove_tmpdir, self.tmp)
        self.mc = Memcached(memory_mb=64)
        self.addCleanup(self.mc.stop)
        self.proxy = Mcring([server_line(self.mc.addr)], self.tmp)
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        self.port = self.proxy.port
        self.assertEqual(text_request(self.port, b"set victim 0 0 2\r\nok\r\n", b"\r\n"),
                         b"STORED\r\n")

    def assert_closed_fast(self, packet):
        """mcring closes the connection within 100 ms of the packet, answering nothing."""
        with socket.create_connection((HOST, self.port), timeout=5) as s:
            t0 = time.monotonic()
            s.sendall(packet)
            s.settimeout(2.0)
            try:
                data = s.recv(4096)
            except ConnectionResetError:
                data = b""
            waited = time.monotonic() - t0
        self.assertEqual(data, b"", "a binary request was answered as text")
        self.assertLess(waited, 0.1, "the binary client waited this long for its close")

    def test_binary_value_holding_text_commands_runs_nothing(self):
        extras = struct.pack(">II", 0, 0)  # flags, exptime
        self.assert_closed_fast(binary_packet(0x01, b"k", INJECTION, extras))  # SET
        self.assertEqual(text_request(self.port, b"get victim injected\r\n"),
                         b"VALUE victim 0 2\r\nok\r\nEND\r\n")
        direct = text_request(self.mc.port, b"get victim injected\r\n")
        self.assertEqual(direct, b"VALUE victim 0 2\r\nok\r\nEND\r\n", "the backend was changed")

    def test_binary_get_is_closed_at_once(self):
        self.assert_closed_fast(binary_packet(0x00, b"victim"))  # GET

    def test_pylibmc_binary_client_gets_an_error_not_a_hang(self):
        try:
            import pylibmc
        except ImportError:
            self.skipTest("python3-pylibmc is not installed")
        client = pylibmc.Client(["%s:%d" % (HOST, self.port)], binary=True,
                                behaviors={"connect_timeout": 2000, "receive_timeout": 2000000,
                                           "send_timeout": 2000000, "retry_timeout": 0})
        t0 = time.monotonic()
        with self.assertRaises(pylibmc.Error):
            client.set("k", INJECTION.decode())
        self.assertLess(time.monotonic() - t0, 1.0, "pylibmc waited for its timeout")
        self.assertEqual(text_request(self.port, b"get victim injected\r\n"),
                         b"VALUE victim 0 2\r\nok\r\nEND\r\n")

    def test_text_client_after_a_binary_one_is_served(self):
        self.assert_closed_fast(binary_packet(0x00, b"victim"))
        self.assertEqual(text_request(self.port, b"get victim\r\n"),
                         b"VALUE victim 0 2\r\nok\r\nEND\r\n")


if __name__ == "__main__":
    unittest.main()
