"""Reload fuzz: seeded random topologies applied by reload while clients run.

Each step writes a random config (servers added, removed and reweighted, named or not; pools
`beta` and `gamma` added and removed beside `alpha`; hash, distribution, coalesce_gets,
server_connections and warm-up windows changed) or a bad file (invalid YAML, an unknown hash, no
servers, two pools on one port), then reloads by SIGHUP or POST /reload, a quarter of the time
with one memcached stopped (SIGSTOP) across the reload so that requests and warm-up fetches are
in flight on what the reload removes. Meanwhile:

  - checkers on every present pool pipeline batches of set/get/multi-get/gets/mg/gat/delete/mn on
    keys of their own, whose values name the key and the client: every reply must be well formed
    and in order, and a value must be the one this client stored for that key (a reply meant for
    another client or key shows up as a wrong key or value). A miss is allowed (a reload may move
    a key between its set and its get), and so is SERVER_ERROR (counted and printed);
  - disconnectors send a 200-key multi-get of a 40 KB value and close without reading (or after
    reading a little), or half a set;
  - after every step the proxy must still be running.

After the last step a fixed topology is applied and keys set through mcring must land where
`mcring route` says, and be read back. Under `make test` this runs against the ASan/UBSan build,
whose reports fail the run (the Makefile collects them). MCRING_RELOAD_FUZZ_SEED picks the seed
(default 15); the seed is printed so a failure can be replayed.
"""

import os
import random
import signal
import socket
import sys
import threading
import time
import unittest

from harness import (HOST, SANITIZED, ConfigDir, Conn, IntegrationCase, Memcached, Mcring,
                     admin_http, free_port, make_tmpdir, parse_reloads, pool_yaml, remove_tmpdir,
                     requires_proxy, run_mcring, server_line)

SEED = int(os.environ.get("MCRING_RELOAD_FUZZ_SEED", "15"))
N_BACKENDS = 5
MAX_STEPS = 100
FUZZ_SECONDS = 30.0   # wall time of the steps, hard bound (the clients are the bottleneck: about
                      # 20 s for 100 steps, with or without the sanitizers)
RELOAD_WAIT = 8.0
HASHES = ("fnv1a_64", "md5", "murmur", "crc32", "one_at_a_time", "xxh3", "jenkins")
DISTRIBUTIONS = ("ketama", "modula", "random", "jump", "rendezvous", "maglev")
BIG = 40000


def value_of(key, client, n):
    body = b"%s|%s|" % (key, client)
    return (body * (n // len(body) + 1))[:max(n, len(body))]


class Checker(threading.Thread):
    """Pipelined batches on fresh keys of its own; every reply checked (see the module doc)."""

    def __init__(self, pool, port, name, seed, stop, deadline, required):
        super().__init__(daemon=True)
        self.pool, self.port, self.cid = pool, port, name.encode()
        self.rnd = random.Random(seed)
        self.stop_ev, self.deadline = stop, deadline
        self.required = required  # alpha is never removed: a closed connection is an error
        self.errors, self.batches, self.requests, self.server_errors, self.misses = [], 0, 0, 0, 0
        self.reconnects = 0

    def run(self):
        conn = None
        try:
            while not self.stop_ev.is_set() and time.monotonic() < self.deadline \
                    and self.batches < 100000:
                if conn is None:
                    try:
                        conn = Conn(HOST, self.port, timeout=10)
                        self.reconnects += 1
                    except OSError:
                        if self.required:
                            self.errors.append("%s: cannot connect to %s" % (self.cid, self.pool))
                            return
                        time.sleep(0.05)  # the pool is not there now
                        continue
                if not self.batch(conn):
                    conn.close()
                    conn = None
                    if self.required or self.errors:
                        return
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append("%s crashed: %r" % (self.cid, e))
        finally:
            if conn:
                conn.close()

    def batch(self, conn):
        i = self.batches
        keys = [b"fz:%s:%d:%d" % (self.cid, i, j) for j in range(5)]
        vals = {}
        for k in keys:
            n = self.rnd.choice((1, 20, 300, 2000)) if self.rnd.random() > 0.05 else 60000
            vals[k] = value_of(k, self.cid, n)
        reqs, exp = [], []
        for k in keys:
            reqs.append(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(vals[k]), vals[k]))
            exp.append(("set", k))
        reqs.append(b"get %s\r\n" % keys[0])
        exp.append(("get", [keys[0]]))
        reqs.append(b"get %s %s fz:%s:nokey %s\r\n" % (keys[1], keys[2], self.cid, keys[3]))
        exp.append(("get", [keys[1], keys[2], b"fz:%s:nokey" % self.cid, keys[3]]))
        reqs.append(b"gets %s %s\r\n" % (keys[4], keys[0]))
        exp.append(("get", [keys[4], keys[0]]))
        reqs.append(b"gat 0 %s %s\r\n" % (keys[2], keys[3]))
        exp.append(("get", [keys[2], keys[3]]))
        reqs.append(b"mg %s v\r\n" % keys[1])
        exp.append(("mg", keys[1]))
        reqs.append(b"delete %s\r\n" % keys[0])
        exp.append(("delete", keys[0]))
        reqs.append(b"mn\r\n")
        exp.append(("mn", None))
        conn.send(b"".join(reqs))
        replies = conn.read_replies(len(reqs), timeout=10)
        self.batches += 1
        self.requests += len(reqs)
        if len(replies) < len(reqs) or (replies and not replies[-1].endswith(b"\r\n")):
            if conn.eof and not self.required:
                return False  # its pool was removed: the proxy closes its clients
            self.errors.append("%s batch %d: %d/%d replies (eof=%s), last %r"
                               % (self.cid, i, len(replies), len(reqs), conn.eof, replies[-1:]))
            return False
        if conn.buf:
            self.errors.append("%s batch %d: bytes after the batch: %r" % (self.cid, i, conn.buf[:100]))
            return False
        for (kind, arg), rep in zip(exp, replies):
            problem = self.check(kind, arg, rep, vals)
            if problem:
                self.errors.append("%s batch %d %s %r: %s; reply %r"
                                   % (self.cid, i, kind, arg, problem, rep[:160]))
                return False
        return True

    def check(self, kind, arg, rep, vals):
        if rep.startswith(b"SERVER_ERROR ") and rep.endswith(b"\r\n") and rep.count(b"\r\n") == 1:
            self.server_errors += 1
            return None
        if kind == "set":
            return None if rep == b"STORED\r\n" else "not STORED"
        if kind == "delete":
            return None if rep in (b"DELETED\r\n", b"NOT_FOUND\r\n") else "not DELETED/NOT_FOUND"
        if kind == "mn":
            return None if rep == b"MN\r\n" else "not MN"
        if kind == "mg":
            if rep == b"EN\r\n":
                self.misses += 1
                return None
            head, _, rest = rep.partition(b"\r\n")
            parts = head.split(b" ")
            if parts[0] != b"VA" or len(parts) != 2 or rest != vals[arg] + b"\r\n":
                return "not VA <n> with this client's value, nor EN"
            return None
        # get / gets / gat: VALUE blocks for asked keys, in order, then END.
        pos, want = 0, list(arg)
        while True:
            eol = rep.find(b"\r\n", pos)
            if eol < 0:
                return "unterminated"
            line = rep[pos:eol]
            if line == b"END":
                if eol + 2 != len(rep):
                    return "bytes after END"
                return None
            parts = line.split(b" ")
            if parts[0] != b"VALUE" or len(parts) not in (4, 5):
                return "not a VALUE line: %r" % line[:80]
            key, n = parts[1], int(parts[3])
            if key not in want:
                return "VALUE for a key not asked, or out of order: %r" % key
            skipped = want.index(key)
            self.misses += skipped
            want = want[skipped + 1:]
            data = rep[eol + 2:eol + 2 + n]
            if data != vals.get(key) or rep[eol + 2 + n:eol + 4 + n] != b"\r\n":
                return "value of %r is not this client's (%d bytes)" % (key, n)
            pos = eol + 4 + n


class Disconnector(threading.Thread):
    """Asks for a big reply and leaves without reading it (or after a little), or sends half a
    request and leaves."""

    def __init__(self, port, seed, stop, deadline):
        super().__init__(daemon=True)
        self.port, self.rnd, self.stop_ev, self.deadline = port, random.Random(seed), stop, deadline
        self.rounds, self.errors = 0, []

    def run(self):
        keys = b" ".join(b"fzbig:%d" % (j % 8) for j in range(200))
        while not self.stop_ev.is_set() and time.monotonic() < self.deadline and self.rounds < 100000:
            self.rounds += 1
            try:
                s = socket.create_connection((HOST, self.port), timeout=5)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                how = self.rnd.random()
                if how < 0.6:
                    s.sendall(b"get " + keys + b"\r\n")
                    if how < 0.3:
                        s.settimeout(1)
                        s.recv(self.rnd.choice((1, 100, 5000)))
                elif how < 0.8:
                    s.sendall(b"get " + keys + b"\r\nmg fzbig:1 v\r\nset fzhalf 0 0 100\r\nabc")
                else:
                    s.sendall(b"set fzhalf 0 0 %d\r\n" % BIG + b"h" * self.rnd.randrange(BIG))
                if self.rnd.random() < 0.5:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.close()  # with SO_LINGER 0: a reset
            except OSError:
                pass  # a refused connect while a pool is gone is fine
            time.sleep(self.rnd.random() * 0.03)


@requires_proxy
class ReloadFuzzTest(IntegrationCase):

    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir("mcring-rfuzz-")
        self.addCleanup(remove_tmpdir, self.tmp)
        self.backends = []
        for _ in range(N_BACKENDS):
            m = Memcached()
            self.addCleanup(m.stop)
            self.backends.append(m)
        self.ports = {"alpha": None, "beta": free_port(), "gamma": free_port()}
        self.conf = ConfigDir(self.tmp)
        self.conf.write_inplace("# placeholder\n")
        self.proxy = Mcring([server_line(self.backends[0].addr)], self.tmp, timeout_ms=2000,
                            args=["--threads", "2"], config_path=self.conf.path)
        self.addCleanup(self._stop_proxy)
        self.ports["alpha"] = self.proxy.port
        self.seen_id = max([r["id"] for r in self.reloads()] or [0])

    def _stop_proxy(self):
        if self.failed():
            sys.stderr.write("\n--- mcring log tail ---\n%s\n--- end ---\n" % self.proxy.log_tail(8000))
        self.proxy.stop()

    def reloads(self):
        with Conn(HOST, self.proxy.port, timeout=10) as c:
            return parse_reloads(c.request(b"stats reloads\r\n", timeout=10))

    def pool_text(self, rnd, pool):
        servers = rnd.sample(range(N_BACKENDS), rnd.randint(1, N_BACKENDS))
        named = rnd.random() < 0.3
        distribution = rnd.choice(DISTRIBUTIONS)
        weighted = distribution != "jump"  # jump has no weights
        lines = [server_line(self.backends[i].addr, rnd.randint(1, 3) if weighted else 1,
                             "s%d" % i if named else None)
                 for i in servers]
        extra = {"coalesce_gets": rnd.choice(("true", "false")),
                 "server_connections": rnd.randint(1, 2)}
        window = rnd.choice((0, 0, 300, 3000))
        if window:
            extra["warmup_window"] = window
        return pool_yaml(pool, self.ports[pool], lines, hash=rnd.choice(HASHES),
                         distribution=distribution, timeout_ms=2000, extra=extra)

    def bad_text(self, rnd, good):
        kind = rnd.randrange(4)
        if kind == 0:
            return good + "  servers: [unclosed\n"
        if kind == 1:
            return good.replace("hash: ", "hash: no_such_", 1)
        if kind == 2:
            return "alpha:\n  listen: %s:%d\n  servers: []\n" % (HOST, self.ports["alpha"])
        return good + good.replace("alpha:", "delta:", 1)  # a second pool on alpha's port

    def apply(self, text, trigger, expect_applied):
        """Writes the file, triggers a reload and waits for its record (the config watcher may
        add an 'unchanged' one of its own). Returns the results seen."""
        same = text == getattr(self, "last_text", None)
        self.last_text = text
        self.conf.write_rename(text)
        if trigger == "sighup":
            os.kill(self.proxy.pid, signal.SIGHUP)
        else:
            admin_http(self.proxy.admin_port, "POST", "/reload")
        deadline = time.monotonic() + RELOAD_WAIT
        while time.monotonic() < deadline:
            recs = [r for r in self.reloads() if r["id"] > self.seen_id]
            if recs:
                self.seen_id = recs[-1]["id"]
            results = {r["result"] for r in recs}
            if (expect_applied and ("applied" in results or (same and "unchanged" in results))) or \
                    (not expect_applied and "failed" in results):
                return results
            self.assertIsNone(self.proxy.proc.poll(), "mcring died during a reload")
            time.sleep(0.02)
        self.fail("no reload record for a %s file within %.0f s"
                  % ("good" if expect_applied else "bad", RELOAD_WAIT))

    def test_reload_fuzz(self):
        rnd = random.Random(SEED)
        with Conn(HOST, self.proxy.port, timeout=10) as c:
            for j in range(8):  # the disconnectors' big values, on the starting server
                big = b"B" * BIG
                self.assertEqual(c.request(b"set fzbig:%d 0 0 %d\r\n%s\r\n" % (j, BIG, big)),
                                 b"STORED\r\n")
        stop = threading.Event()
        t0 = time.monotonic()
        deadline = t0 + FUZZ_SECONDS + 15
        threads = [Checker("alpha", self.ports["alpha"], "a%d" % t, SEED * 100 + t, stop, deadline, True)
                   for t in range(3)]
        threads += [Checker(p, self.ports[p], p[0] + "0", SEED * 100 + 10 + k, stop, deadline, False)
                    for k, p in enumerate(("beta", "gamma"))]
        threads += [Disconnector(self.ports["alpha"], SEED * 100 + 20 + t, stop, deadline)
                    for t in range(2)]
        threads += [Disconnector(self.ports["beta"], SEED * 100 + 30, stop, deadline)]
        for t in threads:
            t.start()
        self.addCleanup(stop.set)
        steps, applied, rejected = 0, 0, 0
        try:
            good = self.pool_text(rnd, "alpha")
            while steps < MAX_STEPS and time.monotonic() < t0 + FUZZ_SECONDS:
                steps += 1
                trigger = rnd.choice(("sighup", "admin"))
                # Now and then a server stalls across the reload, so that requests and warm-up
                # fetches are still in flight on servers and pools the reload removes.
                stalled = rnd.choice(self.backends) if rnd.random() < 0.25 else None
                if stalled:
                    stalled.pause()
                try:
                    if rnd.random() < 0.2:
                        self.apply(self.bad_text(rnd, good), trigger, expect_applied=False)
                        rejected += 1
                    else:
                        text = self.pool_text(rnd, "alpha")
                        for extra in ("beta", "gamma"):
                            if rnd.random() < 0.5:
                                text += self.pool_text(rnd, extra)
                        self.apply(text, trigger, expect_applied=True)
                        good = text
                        applied += 1
                    if stalled:
                        time.sleep(rnd.random() * 0.15)
                finally:
                    if stalled:
                        stalled.resume()
                time.sleep(rnd.random() * 0.3)  # traffic under this topology
                self.assertIsNone(self.proxy.proc.poll(), "mcring died after step %d" % steps)
                dead = [t.name for t in threads if isinstance(t, Checker) and t.required
                        and not t.is_alive()]
                if dead:
                    break
        finally:
            stop.set()
            for t in threads:
                t.join(20)
        wall = time.monotonic() - t0
        checkers = [t for t in threads if isinstance(t, Checker)]
        print("reload fuzz seed %d: %d steps (%d applied, %d rejected) in %.1f s; checkers %d "
              "batches, %d requests, %d SERVER_ERROR, %d misses; disconnectors %d rounds"
              % (SEED, steps, applied, rejected, wall, sum(c.batches for c in checkers),
                 sum(c.requests for c in checkers), sum(c.server_errors for c in checkers),
                 sum(c.misses for c in checkers),
                 sum(t.rounds for t in threads if isinstance(t, Disconnector))))
        errors = [e for t in threads for e in t.errors]
        self.assertEqual(errors, [], "seed %d" % SEED)
        self.assertIsNone(self.proxy.proc.poll(), "mcring died")
        self.assertGreater(applied, 5)
        self.assertGreater(min(c.batches for c in checkers if c.required), 5)

        # The last topology serves: fresh keys land where `mcring route` says and read back.
        final = pool_yaml("alpha", self.ports["alpha"],
                          [server_line(self.backends[i].addr, 1) for i in (0, 2, 3)],
                          hash="fnv1a_64", distribution="ketama", timeout_ms=2000)
        final += self.pool_text(random.Random(SEED + 1), "beta").replace(
            "distribution: random", "distribution: ketama")
        self.apply(final, "sighup", expect_applied=True)
        snapshot = os.path.join(self.tmp, "final.yml")
        with open(snapshot, "w") as f:
            f.write(final)
        for pool in ("alpha", "beta"):
            keys = [b"final:%s:%d" % (pool.encode(), j) for j in range(12)]
            with Conn(HOST, self.ports[pool], timeout=10) as c:
                for k in keys:
                    self.assertEqual(c.request(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(k), k)),
                                     b"STORED\r\n", (pool, k))
                got = c.request(b"get " + b" ".join(keys) + b"\r\n")
                self.assertEqual(got, b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(k), k)
                                               for k in keys) + b"END\r\n", pool)
            out = run_mcring(["route", "-c", snapshot, "--pool", pool] + [k.decode() for k in keys])
            self.assertEqual(out.returncode, 0, out.stderr)
            where = dict(line.split("\t")[:2] for line in out.stdout.decode().splitlines())
            for k in keys:
                found = [m.addr for m in self.backends if m.get(k) is not None]
                self.assertEqual(found, [where[k.decode()]], (pool, k))
        self.assertIsNone(self.proxy.proc.poll(), "mcring died")


if __name__ == "__main__":
    unittest.main()
