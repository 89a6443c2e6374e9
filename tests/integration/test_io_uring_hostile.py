"""Hostile clients against the batched socket I/O (one io_uring submission per loop pass for the
reads of every readable plain socket, one for the writes; proxy/net/io_batch.h): many sockets
readable in the same pass, some of them reset, half-closed, trickling a byte at a time, or not
reading their large replies, and a backend frozen while batches are in flight. Every reply must
reach its own client exactly once and in order (checked against test_pipeline's Model), nobody is
starved, and the proxy serves on afterwards. Run with io_uring and again with --no-io-uring."""

import random
import selectors
import signal
import socket
import struct
import time
import unittest

from harness import HOST, SharedClusterCase, proc_fd_count, set_cmd, spread_keys, split_all
from test_pipeline import Model


def raw_conn(port):
    s = socket.create_connection((HOST, port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)
    return s


def reset(sock):
    """Close with an RST (SO_LINGER 0): whatever the proxy still sends it is refused."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        sock.close()


def pipeline(model, rnd, keys, n):
    reqs, want = [], []
    for _ in range(n):
        q, a = model.step(rnd, keys)
        reqs.append(q)
        want.append(a)
    return b"".join(reqs) + b"mn\r\n", b"".join(want) + b"MN\r\n"


def exchange(socks, outgoing, expected, deadline, readers=None):
    """Drives every socket at once: writes outgoing[i] (all of it), reads until len(expected[i])
    bytes came. readers: indexes that read at all (others only write). Returns the bytes got."""
    sel = selectors.DefaultSelector()
    got = [bytearray() for _ in socks]
    pos = [0] * len(socks)
    readers = set(range(len(socks))) if readers is None else set(readers)
    for i, s in enumerate(socks):
        ev = (selectors.EVENT_WRITE if outgoing[i] else 0) | (
            selectors.EVENT_READ if i in readers else 0)
        if ev:
            sel.register(s, ev, i)
    open_ = len(sel.get_map())
    while open_ and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=0.2):
            i = key.data
            s = socks[i]
            if ev & selectors.EVENT_WRITE and pos[i] < len(outgoing[i]):
                try:
                    pos[i] += s.send(outgoing[i][pos[i]:pos[i] + 65536])
                except BlockingIOError:
                    pass
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(1 << 20)
                except BlockingIOError:
                    data = None
                if data == b"":
                    readers.discard(i)
                elif data:
                    got[i] += data
            want = (selectors.EVENT_WRITE if pos[i] < len(outgoing[i]) else 0) | (
                selectors.EVENT_READ if i in readers and len(got[i]) < len(expected[i]) else 0)
            if want != key.events:
                if want:
                    sel.modify(s, want, i)
                else:
                    sel.unregister(s)
                    open_ -= 1
    sel.close()
    return got


class IoUringHostileTest(SharedClusterCase):
    CLUSTER_ARGS = {"n_backends": 3}

    def setUp(self):
        super().setUp()
        self.raw_socks = []

    def tearDown(self):
        for s in self.raw_socks:
            s.close()
        super().tearDown()

    def open_raw(self, n):
        socks = [raw_conn(self.cl.port) for _ in range(n)]
        self.raw_socks += socks
        return socks

    def assert_serves(self):
        c = self.conn(self.cl, timeout=10)
        self.assertEqual(c.request(b"set alive 0 0 2\r\nok\r\nget alive\r\n", timeout=10),
                         b"STORED\r\n")
        self.assertEqual(c.read_reply(timeout=10), b"VALUE alive 0 2\r\nok\r\nEND\r\n")

    def wait_fds(self, limit):
        deadline = time.monotonic() + 15
        n = proc_fd_count(self.cl.endpoint_pid)
        while n > limit and time.monotonic() < deadline:
            time.sleep(0.05)
            n = proc_fd_count(self.cl.endpoint_pid)
        return n

    def diff(self, i, got, want):
        j = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
                 min(len(got), len(want)))
        return "client %d: %d/%d bytes, first difference at %d: expected %r got %r" % (
            i, len(got), len(want), j, bytes(want[max(0, j - 40):j + 60]),
            bytes(got[max(0, j - 40):j + 60]))

    def test_a_third_reset_mid_pipeline(self):
        # 300 clients pipeline 40 mixed requests each, all at once; every third writes only part
        # of its pipeline (cut anywhere) and resets. The others get exactly their own replies.
        if self.cl.proxy is None:
            self.skipTest("direct mode: no mcring")
        base_fds = proc_fd_count(self.cl.endpoint_pid)
        n, per, rounds = 300, 40, 2
        rnd = random.Random(11)
        models = [Model() for _ in range(n)]
        keys = [spread_keys(b"rst:%d:" % i, 4) for i in range(n)]
        checked = replies = 0
        for r in range(rounds):
            socks = self.open_raw(n)
            out, want, resets = [], [], []
            for i in range(n):
                data, exp = pipeline(models[i], rnd, keys[i], per)
                if i % 3 == r % 3:
                    data = data[:rnd.randrange(1, len(data))]
                    exp = b""
                    resets.append(i)
                out.append(data)
                want.append(exp)
            # The resetting ones write their part first, then reset while the others' batches run.
            for i in resets:
                try:
                    socks[i].send(out[i])
                except BlockingIOError:
                    pass
            readers = [i for i in range(n) if i not in set(resets)]
            for i in readers:  # half of each pipeline in, then the resets land among them
                try:
                    sent = socks[i].send(out[i][:len(out[i]) // 2])
                    out[i] = out[i][sent:]
                except BlockingIOError:
                    pass
            deadline = time.monotonic() + 30
            for i in resets:
                reset(socks[i])
                out[i] = b""
            got = exchange(socks, out, want, deadline, readers)
            for i in readers:
                self.assertEqual(bytes(got[i]), want[i], self.diff(i, got[i], want[i]))
                checked += 1
                replies += per
            for i in readers:
                socks[i].close()
            # The reset clients' keys are unknown now: start their models again on new keys.
            for i in resets:
                models[i] = Model()
                keys[i] = spread_keys(b"rst:%d:%d:" % (i, r), 4)
        fds = self.wait_fds(base_fds + 20)
        print("\n  reset storm: %d connections x %d rounds, a third reset; %d pipelines (%d "
              "requests) answered exactly; proxy fds %d -> %d"
              % (n, rounds, checked, replies, base_fds, fds))
        self.assertLessEqual(fds, base_fds + 20, "connections of reset clients left open")
        self.assert_serves()

    def test_byte_at_a_time_across_many_connections(self):
        # 200 connections each write a pipeline a byte per round, all connections per round:
        # every loop pass sees many sockets with one byte each.
        n = 200
        rnd = random.Random(5)
        socks = self.open_raw(n)
        out, want = [], []
        for i in range(n):
            data, exp = pipeline(Model(), rnd, spread_keys(b"drip:%d:" % i, 3), 4)
            out.append(data)
            want.append(exp)
        longest = max(len(d) for d in out)
        for p in range(longest):
            for i in range(n):
                if p < len(out[i]):
                    socks[i].setblocking(True)
                    socks[i].sendall(out[i][p:p + 1])
                    socks[i].setblocking(False)
        got = exchange(socks, [b""] * n, want, time.monotonic() + 30)
        for i in range(n):
            self.assertEqual(bytes(got[i]), want[i], self.diff(i, got[i], want[i]))
            socks[i].close()
        print("\n  drip: %d connections x %d bytes a byte at a time, %d sends, all answered"
              % (n, sum(len(d) for d in out), sum(len(d) for d in out)))

    def test_half_close_after_pipelining(self):
        # 150 clients pipeline 30 requests and shut their writing side at once: every reply,
        # then EOF from the proxy.
        n = 150
        rnd = random.Random(9)
        socks = self.open_raw(n)
        want = []
        for i in range(n):
            data, exp = pipeline(Model(), rnd, spread_keys(b"half:%d:" % i, 3), 30)
            socks[i].setblocking(True)
            socks[i].sendall(data)
            socks[i].shutdown(socket.SHUT_WR)
            socks[i].setblocking(False)
            want.append(exp)
        # Read past the replies until EOF: expected + 1 byte more that must never come.
        got = exchange(socks, [b""] * n, [w + b"?" for w in want], time.monotonic() + 30)
        for i in range(n):
            self.assertEqual(bytes(got[i]), want[i], self.diff(i, got[i], want[i]))
        eofs = 0
        for s in socks:
            s.setblocking(True)
            s.settimeout(10)
            eofs += s.recv(1) == b""
            s.close()
        print("\n  half-close: %d clients x 30 requests, all answered, %d EOFs" % (n, eofs))
        self.assertEqual(eofs, n)

    def test_slow_readers_of_large_multigets_do_not_starve_others(self):
        # 12 clients ask twice for 16 x 200 KB values (6.4 MB each) and do not read; 20 fast
        # clients must still get 30 round trips each answered meanwhile. Then the slow ones read:
        # every whole reply is their own (or memcached's SERVER_ERROR when the memory budget
        # refuses it), and a partial one is the start of their own, never another's bytes.
        big = 200 * 1000
        keys = spread_keys(b"big:", 16)
        vals = {k: bytes([65 + i]) * big for i, k in enumerate(keys)}
        setter = self.conn(self.cl, timeout=30)
        for k in keys:
            self.assertEqual(setter.request(b"set %s 0 0 %d\r\n%s\r\n" % (k, big, vals[k]),
                                            timeout=30), b"STORED\r\n")
        mget = b"get %s\r\n" % b" ".join(keys)
        mget_reply = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, big, vals[k]) for k in keys) + \
            b"END\r\n"
        slow = self.open_raw(12)
        for s in slow:
            s.setblocking(True)
            s.sendall(mget * 2)
            s.setblocking(False)
        fast = self.open_raw(20)
        served = 0
        deadline = time.monotonic() + 30
        for r in range(30):
            out, want = [], []
            for i in range(len(fast)):
                v = b"%d-%d" % (i, r)
                out.append(b"set fast:%d 0 0 %d\r\n%s\r\nget fast:%d\r\n" % (i, len(v), v, i))
                want.append(b"STORED\r\nVALUE fast:%d 0 %d\r\n%s\r\nEND\r\n" % (i, len(v), v))
            got = exchange(fast, out, want, deadline)
            for i in range(len(fast)):
                self.assertEqual(bytes(got[i]), want[i], "fast client %d round %d starved or "
                                 "wrong: %s" % (i, r, self.diff(i, got[i], want[i])))
            served += len(fast)
        got = exchange(slow, [b""] * len(slow), [mget_reply * 2] * len(slow),
                       time.monotonic() + 20)
        whole = refused = 0
        for i, g in enumerate(got):
            replies, left = split_all(bytes(g))
            for rep in replies:
                if rep.startswith(b"SERVER_ERROR out of memory"):
                    refused += 1
                else:
                    self.assertEqual(rep, mget_reply, "slow client %d: not its reply: %s"
                                     % (i, self.diff(i, rep, mget_reply)))
                    whole += 1
            self.assertTrue(mget_reply.startswith(left), "slow client %d: a partial reply not "
                            "its own: %s" % (i, self.diff(i, left, mget_reply)))
            self.assertGreater(len(g), 0, "slow client %d got nothing" % i)
        print("\n  fairness: 12 slow readers x %d bytes asked; %d fast round trips served "
              "meanwhile; slow readers then got %d whole replies, %d refused (memory budget), "
              "%d bytes in all" % (len(mget_reply) * 2, served, whole, refused,
                                   sum(len(g) for g in got)))

    def test_near_megabyte_values_split_across_reads(self):
        # 12 clients each set and get back a 1,000,000-byte value written in random pieces.
        n, size = 12, 1000 * 1000
        rnd = random.Random(3)
        socks = self.open_raw(n)
        out, want = [], []
        for i in range(n):
            v = bytes(rnd.randrange(97, 123) for _ in range(64)) * (size // 64) + b"z" * (size % 64)
            out.append(b"set mb:%d 0 0 %d\r\n%s\r\nget mb:%d\r\nmn\r\n" % (i, size, v, i))
            want.append(b"STORED\r\nVALUE mb:%d 0 %d\r\n%s\r\nEND\r\nMN\r\n" % (i, size, v))
        # Pieces of random sizes, round-robin over the sockets.
        pos = [0] * n
        while any(pos[i] < len(out[i]) for i in range(n)):
            for i in range(n):
                if pos[i] < len(out[i]):
                    k = rnd.choice((1, 7, 1000, 65536, 300000))
                    socks[i].setblocking(True)
                    socks[i].sendall(out[i][pos[i]:pos[i] + k])
                    socks[i].setblocking(False)
                    pos[i] += k
        got = exchange(socks, [b""] * n, want, time.monotonic() + 30)
        for i in range(n):
            self.assertEqual(bytes(got[i]), want[i], self.diff(i, got[i], want[i]))
            socks[i].close()
        print("\n  large values: %d clients x %d-byte value set and got back whole" % (n, size))

    def start_gets_on_own_values(self, prefix, seed, n=100, per=30):
        """30 keys each holding its own name; n raw clients each asking `per` of them (then
        mn), the first half of each pipeline sent. Returns (keys, socks, asked, rest to send)."""
        keys = spread_keys(prefix, 30)
        setter = self.conn(self.cl, timeout=10)
        for k in keys:
            self.assertEqual(setter.request(set_cmd(k, k), timeout=10), b"STORED\r\n")
        socks = self.open_raw(n)
        rnd = random.Random(seed)
        asked = [[rnd.choice(keys) for _ in range(per)] for _ in range(n)]
        out = [b"".join(b"get %s\r\n" % k for k in a) + b"mn\r\n" for a in asked]
        for s_, o in zip(socks, out):
            s_.send(o[:len(o) // 2])
        return keys, socks, asked, [o[len(o) // 2:] for o in out]

    def check_gets_on_own_values(self, socks, asked, got):
        """Reads on until each client has its MN (20 s), then checks that every get had exactly
        one reply, in order: its own key's value, a miss or a SERVER_ERROR. Returns (values,
        misses, errors)."""
        deadline = time.monotonic() + 20
        for i, s_ in enumerate(socks):
            while not got[i].endswith(b"MN\r\n") and time.monotonic() < deadline:
                got[i] += exchange([s_], [b""], [b"\0" * (len(got[i]) + 1)],
                                   time.monotonic() + 0.5)[0]
        values = misses = errors = 0
        for i, a in enumerate(asked):
            replies, left = split_all(bytes(got[i]))
            self.assertEqual(left, b"", "client %d: a partial reply" % i)
            self.assertEqual(len(replies), len(a) + 1, "client %d: %d replies for %d requests"
                             % (i, len(replies), len(a) + 1))
            self.assertEqual(replies[-1], b"MN\r\n")
            for k, rep in zip(a, replies):
                if rep.startswith(b"VALUE"):
                    self.assertEqual(rep, b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(k), k),
                                     "client %d: a reply for another key" % i)
                    values += 1
                elif rep == b"END\r\n":
                    misses += 1
                else:
                    self.assertTrue(rep.startswith(b"SERVER_ERROR"), "client %d: %r"
                                    % (i, rep[:100]))
                    errors += 1
        return values, misses, errors

    def test_backend_frozen_then_continued_under_pipelines(self):
        # 100 clients pipeline 30 gets over all backends; one backend is stopped (SIGSTOP) while
        # they are in flight and continued later. Every request gets exactly one reply, in
        # order (a value, a miss or a SERVER_ERROR); afterwards service is exact again.
        if self.cl.proxy is None:
            self.skipTest("direct mode: no mcring")
        keys, socks, asked, rest = self.start_gets_on_own_values(b"frz:", 4)
        victim = self.cl.backends[1]
        victim.proc.send_signal(signal.SIGSTOP)
        try:
            # Read until each has its MN (timeout_ms is 1000: the stopped backend's share fails).
            got = exchange(socks, rest, [b"\0" * (1 << 30)] * len(socks), time.monotonic() + 3)
        finally:
            victim.proc.send_signal(signal.SIGCONT)
        values, _, errors = self.check_gets_on_own_values(socks, asked, got)
        for s_ in socks:
            s_.close()
        print("\n  frozen backend: %d clients x %d gets: %d values, %d errors, no lost, "
              "duplicate or foreign replies" % (len(socks), len(asked[0]), values, errors))
        # Continued: every key answers its own value again (a stale reply would show here).
        c = self.conn(self.cl, timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            c.send(b"".join(b"get %s\r\n" % k for k in keys))
            replies = [c.read_reply(timeout=10) for _ in keys]
            if all(r.startswith(b"VALUE") for r in replies):
                break
            time.sleep(0.1)
        for k, rep in zip(keys, replies):
            self.assertEqual(rep, b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(k), k))

    def test_backend_killed_and_restarted_under_pipelines(self):
        # 100 clients pipeline 30 gets; one backend is killed (SIGKILL) while they are in
        # flight, then started again (empty) on its port. Every request gets exactly one reply
        # in order, never another key's value; then the restarted backend serves again.
        if self.cl.proxy is None:
            self.skipTest("direct mode: no mcring")
        keys, socks, asked, rest = self.start_gets_on_own_values(b"kill:", 8)
        victim = self.cl.backends[2]
        victim.kill()
        got = exchange(socks, rest, [b"\0" * (1 << 30)] * len(socks), time.monotonic() + 1)
        victim.restart()
        values, misses, errors = self.check_gets_on_own_values(socks, asked, got)
        print("\n  killed backend: %d clients x %d gets: %d values, %d misses or errors, no "
              "lost, duplicate or foreign replies" % (len(socks), len(asked[0]), values,
                                                      misses + errors))
        c = self.conn(self.cl, timeout=10)
        deadline = time.monotonic() + 15
        ok = False
        while not ok and time.monotonic() < deadline:
            c.send(b"".join(set_cmd(k, k) for k in keys))
            ok = all(c.read_reply(timeout=10) == b"STORED\r\n" for _ in keys)
            if not ok:
                time.sleep(0.2)
        self.assertTrue(ok, "the restarted backend is not served again")
        c.send(b"".join(b"get %s\r\n" % k for k in keys))
        for k in keys:
            self.assertEqual(c.read_reply(timeout=10),
                             b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, len(k), k))

    def test_throttled_pipeliners_get_every_reply_in_order(self):
        # 16 clients each write 400 gets of 20 KB values (8 MB of replies) without reading, so
        # the proxy stops reading them (throttled) while their bytes are in a loop pass's
        # receives; half of them then shut their writing side (an EOF behind a throttle); then
        # they read. Every request is answered once, in order: its value, or memcached's
        # SERVER_ERROR if the memory budget refused it; the half-closed ones then get EOF.
        n, per, size = 16, 300, 20 * 1000
        keys = spread_keys(b"thr:", 5)
        setter = self.conn(self.cl, timeout=10)
        for i, k in enumerate(keys):
            self.assertEqual(setter.request(set_cmd(k, bytes([97 + i]) * size), timeout=10),
                             b"STORED\r\n")
        value_reply = {k: b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (k, size, bytes([97 + i]) * size)
                       for i, k in enumerate(keys)}
        rnd = random.Random(12)
        asked = [[rnd.choice(keys) for _ in range(per)] for _ in range(n)]
        out = [b"".join(b"get %s\r\n" % k for k in a) + b"mn\r\n" for a in asked]
        socks = self.open_raw(n)
        pos = [0] * n
        # Write without reading until the proxy stops taking bytes (or 2 s).
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(p < len(o) for p, o in zip(pos, out)):
            moved = 0
            for i, s in enumerate(socks):
                try:
                    k = s.send(out[i][pos[i]:pos[i] + 4096])
                    pos[i] += k
                    moved += k
                except BlockingIOError:
                    pass
            if not moved:
                time.sleep(0.01)
        taken = sum(pos)
        half_closed = [i for i in range(n) if i % 2 and pos[i] == len(out[i])]
        for i in half_closed:
            socks[i].shutdown(socket.SHUT_WR)
        want_len = [sum(len(value_reply[k]) for k in a) + 4 for a in asked]
        got = exchange(socks, [o[p:] for o, p in zip(out, pos)], [b"\0" * w for w in want_len],
                       time.monotonic() + 30)
        values = refused = 0
        for i in range(n):
            replies, left = split_all(bytes(got[i]))
            self.assertEqual(left, b"", "client %d: a partial reply" % i)
            self.assertEqual(len(replies), per + 1, "client %d: %d replies for %d requests"
                             % (i, len(replies), per + 1))
            self.assertEqual(replies[-1], b"MN\r\n")
            for j, (k, rep) in enumerate(zip(asked[i], replies)):
                if rep.startswith(b"SERVER_ERROR out of memory"):
                    refused += 1
                else:
                    self.assertEqual(rep, value_reply[k], "client %d request %d: %s"
                                     % (i, j, self.diff(i, rep, value_reply[k])))
                    values += 1
        eofs = 0
        for i in half_closed:
            socks[i].setblocking(True)
            socks[i].settimeout(10)
            eofs += socks[i].recv(1) == b""
        print("\n  throttled pipeliners: %d clients x %d gets of %d bytes; %d request bytes taken "
              "before they read; %d values, %d refused (memory budget), in order; %d/%d "
              "half-closed got EOF" % (n, per, size, taken, values, refused, eofs,
                                       len(half_closed)))
        self.assertEqual(eofs, len(half_closed))


class IoUringHostileNoIoUringTest(IoUringHostileTest):
    """The same with a system call per socket: the two must behave alike."""

    CLUSTER_ARGS = {"n_backends": 3, "args": ("--no-io-uring",)}


if __name__ == "__main__":
    unittest.main()
