"""Backend replies a real memcached cannot be made to send on demand: an error line in
answer to a get, and garbage. A scripted backend (a few lines of Python speaking the text
protocol) stands in for memcached here, only here; every other test uses real ones.

- An error line answers every request whose keys shared that get line (coalesce_gets), and only
  those; the connection stays in sync and keeps serving.
- Garbage resets the connection: the retrievals in flight on it are sent again, one at a time,
  on a new connection; the one answered with garbage again fails with SERVER_ERROR, the others
  succeed, and the next requests go at once (not counted as the server's failure). The pool has
  `unavailable_reads: error` (with the default, that get would be a miss)."""

import json
import socket
import threading
import time
import unittest

from harness import HOST, Conn, IntegrationCase, Mcring, admin_http, make_tmpdir, remove_tmpdir, requires_proxy

POISON = b"poison"   # a get line with this key is answered with one error line
JUNK = b"junk"       # ... with a line that is not memcached's
ERROR_LINE = b"SERVER_ERROR out of memory storing object\r\n"


class ScriptedBackend:
    """Answers get/gets lines from a dict (hits in line order, then END), set with STORED,
    stats with END; in a line with POISON, the hits before it are followed by ERROR_LINE (no
    END); a line with JUNK gets garbage."""

    def __init__(self):
        self.store = {}
        self.connections = 0
        self.get_lines = []
        self.get_conns = set()
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stopping = False
        self.conns = []
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while not self.stopping:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                self.conns.append(c)
                cid = self.connections
            threading.Thread(target=self.serve, args=(c, cid), daemon=True).start()

    def get_connections(self):
        """How many connections sent get lines (mcring's stats poller has one of its own)."""
        with self.lock:
            return len(self.get_conns)

    def serve(self, c, cid):
        buf = b""
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                buf += d
                out = []
                while b"\r\n" in buf:
                    line, rest = buf.split(b"\r\n", 1)
                    parts = line.split()
                    if parts and parts[0] == b"set":
                        n = int(parts[4])
                        if len(rest) < n + 2:
                            break
                        with self.lock:
                            self.store[parts[1]] = (int(parts[2]), rest[:n])
                        buf = rest[n + 2:]
                        out.append(b"STORED\r\n")
                        continue
                    buf = rest
                    if parts and parts[0] in (b"get", b"gets"):
                        with self.lock:
                            self.get_lines.append(parts)
                            self.get_conns.add(cid)
                        if JUNK in parts[1:]:
                            out.append(b"WHAT IS THIS\r\n")
                            continue
                        # As memcached does when it fails mid-line: the hits before the
                        # failing key, then the error instead of the rest and END.
                        for k in parts[1:]:
                            if k == POISON:
                                out.append(ERROR_LINE)
                                break
                            with self.lock:
                                hit = self.store.get(k)
                            if hit is not None:
                                cas = b" 7" if parts[0] == b"gets" else b""
                                out.append(b"VALUE %s %d %d%s\r\n%s\r\n" % (k, hit[0], len(hit[1]), cas, hit[1]))
                        else:
                            out.append(b"END\r\n")
                    elif parts and parts[0] == b"stats":
                        out.append(b"END\r\n")
                    elif parts and parts[0] == b"version":
                        out.append(b"VERSION 1.6.18\r\n")
                    else:
                        out.append(b"ERROR\r\n")
                if out:
                    c.sendall(b"".join(out))
        except OSError:
            return
        finally:
            c.close()

    def stop(self):
        self.stopping = True
        self.sock.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()


def counters(proxy):
    return json.loads(admin_http(proxy.admin_port, "GET", "/stats")[1])["counters"]


@requires_proxy
class BackendRepliesTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir("mcring-replies-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backend = ScriptedBackend()
        self.addCleanup(self.backend.stop)
        # One worker: every client's gets meet in one thread's lines.
        self.proxy = Mcring(["%s:%d:1" % (HOST, self.backend.port)], self.tmp, timeout_ms=2000,
                            args=["--threads", "1"], extra={"unavailable_reads": "error"})
        self.addCleanup(self.proxy.stop)
        self.dump_log_on_failure(self.proxy)
        self.setup = Conn(HOST, self.proxy.port, timeout=10)
        self.addCleanup(self.setup.close)
        for i in range(20):
            v = b"value-%d" % i
            self.assertEqual(self.setup.request(b"set k%d %d 0 %d\r\n%s\r\n" % (i, i, len(v), v)),
                             b"STORED\r\n")

    def value(self, i):
        v = b"value-%d" % i
        return b"VALUE k%d %d %d\r\n%s\r\nEND\r\n" % (i, i, len(v), v)

    def test_error_line_answers_exactly_the_requests_that_shared_it(self):
        clients = [Conn(HOST, self.proxy.port, timeout=10) for _ in range(12)]
        for c in clients:
            self.addCleanup(c.close)
        shared_with_poison = 0
        for rnd in range(20):
            # Each client pipelines a hit, another get and a miss; client 0's middle get is the
            # poison. Which of them share the poison's line depends on what mcring reads in one
            # pass; the backend's log tells.
            for i, c in enumerate(clients):
                mid = b"get %s\r\n" % POISON if i == 0 else b"get k%d\r\n" % ((i + rnd) % 20)
                c.send(b"get k%d\r\n" % i + mid + b"get nokey%d\r\n" % i)
            for i, c in enumerate(clients):
                got = c.read_replies(3, timeout=10)
                self.assertEqual(len(got), 3, (i, got))
                first, mid, last = got
                # A request whose key rode in a poison line gets the error, memcached's answer to
                # the whole line: after the units it already streamed, if any (as memcached
                # answers a get line that fails after its hits); every other request gets its
                # exact answer.
                for rep, want in ((first, self.value(i)), (last, b"END\r\n")):
                    if rep.endswith(ERROR_LINE) and want.startswith(rep[:-len(ERROR_LINE)]):
                        shared_with_poison += 1
                    else:
                        self.assertEqual(rep, want, (rnd, i))
                if i == 0:
                    self.assertEqual(mid, ERROR_LINE)
                elif mid == ERROR_LINE:
                    shared_with_poison += 1
                else:
                    self.assertEqual(mid, self.value((i + rnd) % 20), (rnd, i))
        # Every poison line really carried other requests' keys, and each of them got the error.
        with self.backend.lock:
            poison_lines = [p for p in self.backend.get_lines if POISON in p[1:]]
        self.assertEqual(len(poison_lines), 20)
        others = sum(len(p) - 2 for p in poison_lines)
        print("\nshared lines: %d other keys rode with the poison in %d lines; %d replies were the"
              " error" % (others, len(poison_lines), shared_with_poison))
        self.assertGreater(others, 0, "the poison never shared a line: nothing tested")
        self.assertEqual(shared_with_poison, others)
        # In sync and still on its first connection.
        self.assertEqual(self.setup.request(b"get k3\r\n"), self.value(3))
        self.assertEqual(self.backend.get_connections(), 1)
        self.assertEqual(counters(self.proxy)["backend_protocol_errors"], 0)

    def test_garbage_resets_the_connection_and_only_its_requests_fail(self):
        c = Conn(HOST, self.proxy.port, timeout=10)
        self.addCleanup(c.close)
        c.send(b"get k1\r\nget %s\r\nget k2\r\n" % JUNK)
        got = c.read_replies(3, timeout=10)
        # Whatever was in flight when the garbage came (the junk get's line may carry k1's and
        # k2's keys too) is sent again, one request at a time, on a new connection: k1 and k2 are
        # answered; the junk get, garbage again and first in line then, fails. Nothing is answered
        # wrong.
        self.assertEqual(got[0], self.value(1), got)
        self.assertEqual(got[1][:13], b"SERVER_ERROR ", got)
        self.assertEqual(got[2], self.value(2), got)
        self.assertEqual(counters(self.proxy)["backend_protocol_errors"], 2)
        # Not counted as the server's failure: no backoff, the next request is served at once.
        self.assertEqual(c.request(b"get k4\r\n", timeout=5), self.value(4))
        self.assertEqual(self.backend.get_connections(), 3)


if __name__ == "__main__":
    unittest.main()
