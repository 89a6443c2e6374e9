"""A fifth outside attack, on the features of issue 30 and the upgrade: `watch`, `stats detail`,
route failover for multi-gets, SIGUSR2. Each test failed on the build it was written against
(29a042e).

- Any number of clients could `watch`: each stalled watcher holds a 256 KiB buffer plus 64 KiB of
  output, and every request is formatted into every watcher's buffer under one mutex. 1,000
  watchers that read nothing, then 10,000 gets through another client: mcring's RSS went from
  8 MB to 490 MB. memcached allows 20 watchers (WATCHER_LIMIT) and answers the 21st
  `WATCHER_TOO_MANY log watcher limit reached`, the connection staying an ordinary one.
"""
import socket
import time

import harness as h
from harness import IntegrationCase, requires_proxy
from test_watch import watcher, wait_for

WATCHER_LIMIT = 20  # memcached's
TOO_MANY = b"WATCHER_TOO_MANY log watcher limit reached\r\n"


@requires_proxy
class WatcherLimitTest(IntegrationCase):
    def test_twenty_first_watcher_refused_as_memcached_does(self):
        cl = self.cluster(n_backends=1, extra={"allow_watch": "true", "log_keys": "plain"})
        socks = []
        try:
            for _ in range(WATCHER_LIMIT):
                s, got = watcher(cl.port)
                socks.append(s)
                self.assertEqual(got, b"OK\r\n")
            # The 21st: refused, and the connection goes on serving requests.
            extra = self.conn(cl)
            replies = extra.requests(b"watch proxyreqs\r\nset k 0 0 1\r\nv\r\nget k\r\n", 3)
            print("\n%d watchers attached; the next `watch`: %r" % (len(socks), replies[0]))
            self.assertEqual(replies, [TOO_MANY, b"STORED\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n"])
            # A watcher that leaves makes room (its detach is awaited, bounded).
            socks.pop().close()

            def attached():
                s, got = watcher(cl.port)
                if got == b"OK\r\n":
                    return s
                s.close()
                return None
            s = wait_for(attached, timeout=5.0, step=0.05)
            self.assertIsNotNone(s)
            socks.append(s)
            # The remaining watchers still get the stream.
            self.assertEqual(extra.request(b"get k\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n")
            socks[0].settimeout(5)
            got = b""
            deadline = time.monotonic() + 5
            while b"cmd=get" not in got and time.monotonic() < deadline:
                got += socks[0].recv(65536)
            self.assertIn(b"key=k", got)
        finally:
            for s in socks:
                s.close()
