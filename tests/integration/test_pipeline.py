"""50 concurrent clients, each writing 100 pipelined mixed requests at once: every request is
answered exactly once, in order, with the right value (checked against a model of memcached).
Twice: with the default socket I/O (a loop pass's reads and writes in one io_uring submission
each, where the kernel allows it) and with --no-io-uring (a system call per socket); the start-up
line says which."""

import ctypes
import os
import random
import threading
import time
import unittest

from harness import HOST, Conn, SharedClusterCase, spread_keys

CLIENTS = 50
REQUESTS = 100
ROUNDS = 3


class Model:
    """Just enough of memcached's semantics for set/get/delete/incr/mg on numeric values."""

    def __init__(self):
        self.data = {}

    def step(self, rnd, keys):
        """One random request and the exact reply memcached gives it (b"" for noreply)."""
        op = rnd.choice(("set", "set", "setq", "get", "get", "mget", "delete", "incr", "incr",
                         "mg", "mg", "mgq"))
        k = rnd.choice(keys)
        if op in ("set", "setq"):
            v = b"%d" % rnd.randrange(0, 10**6)
            self.data[k] = v
            if op == "setq":
                return b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, len(v), v), b""
            return b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v), b"STORED\r\n"
        if op in ("get", "mget"):
            ks = [k] if op == "get" else rnd.sample(keys, 3)
            rep = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (x, len(self.data[x]), self.data[x])
                           for x in ks if x in self.data)
            return b"get %s\r\n" % b" ".join(ks), rep + b"END\r\n"
        if op == "delete":
            hit = self.data.pop(k, None) is not None
            return b"delete %s\r\n" % k, b"DELETED\r\n" if hit else b"NOT_FOUND\r\n"
        if op == "incr":
            d = rnd.randrange(1, 1000)
            if k not in self.data:
                return b"incr %s %d\r\n" % (k, d), b"NOT_FOUND\r\n"
            n = int(self.data[k]) + d
            old_len = len(self.data[k])
            self.data[k] = (b"%d" % n).ljust(old_len)  # memcached pads a shorter result in place
            return b"incr %s %d\r\n" % (k, d), b"%d\r\n" % n
        if op == "mg":
            opaque = rnd.randrange(1000)
            if k in self.data:
                v = self.data[k]
                return (b"mg %s k v O%d\r\n" % (k, opaque),
                        b"VA %d k%s O%d\r\n%s\r\n" % (len(v), k, opaque, v))
            return b"mg %s k v O%d\r\n" % (k, opaque), b"EN k%s O%d\r\n" % (k, opaque)
        # mgq: quiet meta get, a miss answers nothing
        if k in self.data:
            v = self.data[k]
            return b"mg %s v q\r\n" % k, b"VA %d\r\n%s\r\n" % (len(v), v)
        return b"mg %s v q\r\n" % k, b""


def io_uring_allowed():
    """Whether this process may set up an io_uring (io_uring_setup(2), x86-64's number 425):
    what mcring's start-up line should then say."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(425, 8, params)
    if fd < 0:
        return False
    os.close(fd)
    return True


class PipelineTest(SharedClusterCase):
    CLUSTER_ARGS = {"n_backends": 3}

    def expected_io_line(self):
        if io_uring_allowed():
            return "socket I/O: one io_uring submission for a loop pass's reads, one for its writes"
        return "socket I/O: a recv()/send() per connection: io_uring refused"

    def test_start_up_line_says_how_sockets_are_read_and_written(self):
        if self.cl.proxy is None:
            self.skipTest("direct mode: no mcring")
        self.assertIn(self.expected_io_line(), self.cl.proxy.log_tail(1 << 20))

    def run_client(self, cid, barrier, errors):
        rnd = random.Random(1000 + cid)
        keys = spread_keys(b"pipe:%d:" % cid, 12)  # over all backends
        model = Model()
        try:
            conn = Conn(HOST, self.cl.port, timeout=60)
        except OSError as e:
            errors.append("client %d: connect: %r" % (cid, e))
            return
        try:
            barrier.wait(timeout=30)
            for rnd_no in range(ROUNDS):
                reqs, want = [], []
                for _ in range(REQUESTS):
                    q, a = model.step(rnd, keys)
                    reqs.append(q)
                    want.append(a)
                # A trailing mn proves that nothing more (no late or duplicate reply) is pending.
                conn.send(b"".join(reqs) + b"mn\r\n")
                expected = b"".join(want) + b"MN\r\n"
                got = conn.recv_exact(len(expected), timeout=60)
                extra = conn.silence(0.05)
                if got != expected or extra:
                    i = next((j for j in range(min(len(got), len(expected))) if got[j] != expected[j]),
                             min(len(got), len(expected)))
                    errors.append("client %d round %d: %d/%d bytes, first difference at byte %d:\n"
                                  "  expected %r\n  got      %r\n  extra    %r"
                                  % (cid, rnd_no, len(got), len(expected), i,
                                     expected[max(0, i - 60):i + 80], got[max(0, i - 60):i + 80],
                                     extra[:200]))
                    return
        except Exception as e:  # noqa: BLE001 - report any client failure
            errors.append("client %d: %r" % (cid, e))
        finally:
            conn.close()

    def test_concurrent_pipelined_clients(self):
        errors = []
        barrier = threading.Barrier(CLIENTS)
        threads = [threading.Thread(target=self.run_client, args=(i, barrier, errors), daemon=True)
                   for i in range(CLIENTS)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=max(1.0, 150 - (time.monotonic() - t0)))
        hung = sum(t.is_alive() for t in threads)
        self.assertEqual(hung, 0, "%d client threads still waiting after 150 s" % hung)
        self.assertEqual(errors, [], "\n".join(errors[:5]))

    def test_many_connections_open_at_once(self):
        # 300 client connections open together; each is answered on its own socket.
        conns = [self.conn(self.cl, timeout=20) for _ in range(300)]
        for i, c in enumerate(conns):
            c.send(b"set mc:%d 0 0 %d\r\n%d\r\nget mc:%d\r\n" % (i, len(b"%d" % i), i, i))
        for i, c in enumerate(conns):
            want = b"STORED\r\nVALUE mc:%d 0 %d\r\n%d\r\nEND\r\n" % (i, len(b"%d" % i), i)
            self.assertEqual(c.recv_exact(len(want), 20), want, "connection %d" % i)
        for c in conns[::7]:
            c.close()
        self.assertTrue(conns[1].alive())

    def test_pipeline_split_at_every_byte(self):
        # One pipeline written a byte at a time (requests split anywhere) answers the same.
        model = Model()
        rnd = random.Random(7)
        keys = spread_keys("split:", 5)
        reqs, want = [], []
        for _ in range(30):
            q, a = model.step(rnd, keys)
            reqs.append(q)
            want.append(a)
        data = b"".join(reqs) + b"mn\r\n"
        expected = b"".join(want) + b"MN\r\n"
        c = self.conn(self.cl, timeout=30)
        for i in range(len(data)):
            c.send(data[i:i + 1])
            if i % 97 == 0:
                time.sleep(0.001)
        self.assertEqual(c.recv_exact(len(expected), timeout=30), expected)
        self.assertEqual(c.silence(0.05), b"")


class PipelineNoIoUringTest(PipelineTest):
    """The same clients with each socket read and written by its own system call."""

    CLUSTER_ARGS = {"n_backends": 3, "args": ("--no-io-uring",)}

    def expected_io_line(self):
        return "socket I/O: a recv()/send() per connection (--no-io-uring)"


if __name__ == "__main__":
    unittest.main()
