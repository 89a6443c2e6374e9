"""twemproxy's auto_eject_hosts: a failing server leaves the ring (its keys go to the others), is
probed after server_retry_timeout and returns; without it, its keys fail fast with SERVER_ERROR
and the ring stays as it is. With `unavailable_reads: error`, so that reads show the failures
(the default answers them as misses: test_unavailable_reads)."""

import json
import time
import unittest

from harness import (HOST, Conn, IntegrationCase, Mcring, Memcached, admin_http, make_tmpdir,
                     parse_stats,
                     remove_tmpdir, requires_proxy, server_line, set_many_raw, spread_keys)


@requires_proxy
class EjectionTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.tmp = make_tmpdir()
        self.backends = [Memcached() for _ in range(3)]
        self.mc = None

    def tearDown(self):
        if self.mc:
            self.mc.stop()
        for b in self.backends:
            b.stop()
        remove_tmpdir(self.tmp)
        super().tearDown()

    def start(self, eject):
        extra = {"auto_eject_hosts": "true" if eject else "false", "server_failure_limit": 2,
                 "server_retry_timeout": 1500, "unavailable_reads": "error"}
        self.mc = Mcring([server_line(b.addr) for b in self.backends], self.tmp, timeout_ms=500,
                         extra=extra)
        self.keys = spread_keys("ej:", 300)
        with Conn(HOST, self.mc.port) as c:
            set_many_raw(c, [(k, b"v") for k in self.keys])
        self.owner = {}
        for i, b in enumerate(self.backends):
            for k in b.get_many(self.keys):
                self.owner[k] = i
        self.assertEqual(len(self.owner), len(self.keys))

    def gets(self):
        """{key: reply} for one pipelined round of single-key gets."""
        with Conn(HOST, self.mc.port, timeout=5) as c:
            c.send(b"".join(b"get " + k + b"\r\n" for k in self.keys))
            replies = c.read_replies(len(self.keys), timeout=10)
        self.assertEqual(len(replies), len(self.keys))
        return dict(zip(self.keys, replies))

    def until(self, predicate, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.gets()
            if predicate(r):
                return r
            time.sleep(0.1)
        self.fail("condition not reached within %.0f s" % timeout)

    def test_eject_remap_and_return(self):
        self.start(eject=True)
        self.backends[1].kill()
        dead = {k for k, i in self.owner.items() if i == 1}
        self.assertTrue(dead)
        # After server_failure_limit failures the server is out: its keys are misses on the
        # others (no error), the other keys still hit.
        r = self.until(lambda r: not any(v.startswith(b"SERVER_ERROR") for v in r.values()))
        for k, v in r.items():
            self.assertEqual(v, b"END\r\n" if k in dead else b"VALUE " + k + b" 0 1\r\nv\r\nEND\r\n")
        status, body = admin_http(self.mc.admin_port, path="/events")
        events = json.loads(body)
        self.assertEqual([e["kind"] for e in events], ["eject"])
        with Conn(HOST, self.mc.port) as c:
            backends = parse_stats(c.request(b"stats backends\r\n"))
        self.assertEqual(backends["alpha:%s:ejected" % self.backends[1].addr], "1")
        self.assertEqual(backends["alpha:%s:ejected" % self.backends[0].addr], "0")
        self.assertEqual(events[0]["removed"], [self.backends[1].addr])
        # Back after a successful probe (server_retry_timeout 1.5 s): its keys route to it again
        # (and miss there: it restarted empty), the keys the others took are no longer asked.
        self.backends[1].restart()
        with Conn(HOST, self.mc.port) as c:
            set_many_raw(c, [(k, b"w") for k in sorted(dead)])  # lands on the survivors now

        def returned(r):
            return all(r[k] == b"END\r\n" for k in dead)
        self.until(returned, timeout=10)
        events = json.loads(admin_http(self.mc.admin_port, path="/events")[1])
        self.assertEqual([e["kind"] for e in events], ["eject", "return"])

    def test_fail_fast_without_ejection(self):
        self.start(eject=False)
        self.backends[2].kill()
        dead = {k for k, i in self.owner.items() if i == 2}
        for _ in range(3):
            r = self.gets()
            for k, v in r.items():
                if k in dead:
                    self.assertTrue(v.startswith(b"SERVER_ERROR backend"), v)
                else:
                    self.assertEqual(v, b"VALUE " + k + b" 0 1\r\nv\r\nEND\r\n")
            time.sleep(0.2)
        events = json.loads(admin_http(self.mc.admin_port, path="/events")[1])
        self.assertEqual(events, [])


if __name__ == "__main__":
    unittest.main()
