"""Config-file watching edge cases, each a regression test for a bug found here:

- WatchFeedbackTest: mcring's own log in the config's directory must not cause reloads.
- SymlinkRepointTest: a config symlink repointed into another directory must be followed.
"""

import os
import time
import unittest

from harness import (IntegrationCase, Memcached, Mcring, make_tmpdir, parse_stats, pool_yaml,
                     remove_tmpdir, requires_proxy, server_line)


@requires_proxy
class WatchFeedbackTest(IntegrationCase):
    """mcring watches the config file's whole directory. Its own log file there (`-o` into
    /etc/mcring, or stdout redirected there, as this harness does by default) must not become a
    reload trigger: a reload writes a log line, the line is an inotify event, the event is a
    reload...

    (FileWatcher re-resolves the link on every relevant event and watches the new target's
    directory and name.)
    """

    def run_idle(self, args, break_config):
        tmp = make_tmpdir("mcring-feedback-")
        self.addCleanup(remove_tmpdir, tmp)
        m = Memcached()
        self.addCleanup(m.stop)
        confdir = os.path.join(tmp, "conf")
        os.mkdir(confdir)
        log = os.path.join(confdir, "mcring.log")    # the log beside the config
        proxy = Mcring([server_line(m.addr)], tmp, args=["--threads", "1", "-o", log] + args,
                       config_path=os.path.join(confdir, "mcring.yml"))
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        c = self.conn(proxy.port)
        time.sleep(0.5)
        if break_config:
            tmpf = proxy.config_path + ".tmp"
            with open(proxy.config_path) as f:
                text = f.read()
            with open(tmpf, "w") as f:
                f.write(text + "  bogus_key: 1\n")
            os.rename(tmpf, proxy.config_path)
            time.sleep(0.5)     # the one rejection this deserves
        before = int(parse_stats(c.request(b"stats\r\n"))["reloads"])
        time.sleep(2.0)         # nothing touches the config now
        after = int(parse_stats(c.request(b"stats\r\n"))["reloads"])
        return after - before

    def test_own_log_in_config_dir_is_not_a_trigger(self):
        for name, args, broken in (("valid config, -v 3", ["-v", "3"], False),
                                   ("rejected config, default level", [], True)):
            with self.subTest(name):
                n = self.run_idle(args, broken)
                self.assertLessEqual(n, 1, "%d reloads in 2 s of an untouched config (%s)"
                                     " with mcring's log in the config's directory" % (n, name))


@requires_proxy
class SymlinkRepointTest(IntegrationCase):
    """A config path that is a symlink repointed into another directory (deploy tools:
    conf/mcring.yml -> ../releases/N/mcring.yml). After the repoint, edits of the new target
    must be noticed, and edits of the old one must not matter.

    FileWatcher re-resolves the link on every relevant event and watches the new target's
    directory and name."""

    def test_edits_after_repoint_are_picked_up(self):
        tmp = make_tmpdir("mcring-repoint-")
        self.addCleanup(remove_tmpdir, tmp)
        m = Memcached()
        self.addCleanup(m.stop)
        for d in ("conf", "rel1", "rel2"):
            os.mkdir(os.path.join(tmp, d))
        with open(os.path.join(tmp, "rel1", "mcring.yml"), "w") as f:
            f.write("# placeholder\n")
        link = os.path.join(tmp, "conf", "mcring.yml")
        os.symlink("../rel1/mcring.yml", link)
        proxy = Mcring([server_line(m.addr)], tmp, args=["--threads", "1"], config_path=link)
        self.addCleanup(proxy.stop)
        self.dump_log_on_failure(proxy)
        c = self.conn(proxy.port)
        text = pool_yaml("alpha", proxy.port, [server_line(m.addr)])

        def gen_after(t, want):
            # Polls until the generation is `want` (or t seconds passed); generous, since a
            # sanitizer build under parallel tests can take a while to reload.
            deadline = time.monotonic() + t
            g = None
            while time.monotonic() < deadline:
                g = parse_stats(c.request(b"stats\r\n"))["config_generation"]
                if g == want:
                    break
                time.sleep(0.05)
            return g

        with open(os.path.join(tmp, "rel2", "mcring.yml"), "w") as f:
            f.write(text.replace(m.addr + ":1", m.addr + ":2"))
        tmp_link = os.path.join(tmp, "conf", ".mcring.yml.new")
        os.symlink("../rel2/mcring.yml", tmp_link)
        os.rename(tmp_link, link)                  # repoint: an event in conf/
        self.assertEqual(gen_after(10, "2"), "2", "the repoint itself was not picked up")
        with open(os.path.join(tmp, "rel2", "mcring.yml"), "w") as f:   # edit the new target
            f.write(text.replace(m.addr + ":1", m.addr + ":3"))
        self.assertEqual(gen_after(10, "3"), "3",
                         "an in-place edit of the repointed symlink's new target "
                         "(another directory) was not picked up within 10 s")


if __name__ == "__main__":
    unittest.main()
