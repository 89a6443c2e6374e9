"""memcached's binary protocol for the tests: request packets, and a connection that reads
response packets (bounded in time, never sleeping)."""

import socket
import struct
import time

from harness import HOST

GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH, GETQ, NOOP, VERSION, GETK, GETKQ, \
    APPEND, PREPEND, STAT, SETQ, ADDQ, REPLACEQ, DELETEQ, INCRQ, DECRQ, QUITQ, FLUSHQ, APPENDQ, \
    PREPENDQ, VERBOSITY, TOUCH, GAT, GATQ = range(0x1f)
SASL_LIST, SASL_AUTH, SASL_STEP, GATK, GATKQ = 0x20, 0x21, 0x22, 0x23, 0x24

HEADER = struct.Struct(">BBHBBHIIQ")


def packet(opcode, key=b"", value=b"", extras=b"", opaque=0, cas=0, magic=0x80, body=None):
    """A request: header (magic, opcode, key length, extras length, data type, vbucket, body
    length, opaque, cas), then extras, key, value. `body` overrides the body length."""
    n = len(extras) + len(key) + len(value) if body is None else body
    return HEADER.pack(magic, opcode, len(key), len(extras), 0, 0, n, opaque, cas) + \
        extras + key + value


def store_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def arith_extras(delta, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def touch_extras(exptime):
    return struct.pack(">I", exptime)


def parse(buf):
    """Whole response packets at the front of buf: ([(opcode, status, opaque, cas, extras, key,
    value)], rest)."""
    out = []
    at = 0
    while len(buf) - at >= 24:
        magic, op, kl, el, _dt, status, bl, opaque, cas = HEADER.unpack_from(buf, at)
        if len(buf) - at < 24 + bl:
            break
        body = bytes(buf[at + 24:at + 24 + bl])
        out.append((op, status, opaque, cas, body[:el], body[el:el + kl], body[el + kl:]))
        at += 24 + bl
    return out, buf[at:]


class BinaryConn:
    """A client connection that sends packets and reads whole responses."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.timeout = timeout
        self.buf = bytearray()
        self.parsed = []  # responses read past what was asked for
        self.raw = bytearray()  # every byte received, for byte-for-byte comparisons

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no response in time; have %r" % self.buf[:200])
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed; have %r" % self.buf[:200])
        self.buf += chunk
        self.raw += chunk

    def _next(self, deadline):
        while not self.parsed:
            got, rest = parse(self.buf)
            if got:
                self.buf = bytearray(rest)
            self.parsed += got
            if not self.parsed:
                self._fill(deadline)
        return self.parsed.pop(0)

    def read(self, n):
        """Exactly n response packets."""
        deadline = time.monotonic() + self.timeout
        return [self._next(deadline) for _ in range(n)]

    def until(self, opaque, limit=100000):
        """Responses up to and including the one with `opaque` (a noop closing quiet requests)."""
        deadline = time.monotonic() + self.timeout
        out = []
        for _ in range(limit):
            out.append(self._next(deadline))
            if out[-1][2] == opaque:
                return out
        raise AssertionError("no response with opaque %d in %d" % (opaque, limit))

    def call(self, *args, **kw):
        self.send(packet(*args, **kw))
        return self.read(1)[0]

    def wait_closed(self, timeout=5.0):
        """True once the peer closes (reading and keeping what arrives before)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self._fill(deadline)
            except ConnectionError:
                return True
            except (TimeoutError, socket.timeout):
                return False
            except ConnectionResetError:
                return True
        return False

