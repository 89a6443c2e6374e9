"""The console (GET / on the admin port) in a real browser: headless Chromium (Debian's
`chromium`, driven over the DevTools protocol by headless_browser.py) against mcring with real
memcached backends and steady cache-aside traffic.

It loads the page, waits for data, checks that every server, its share of the ring and its
traffic are shown, clicks the page's reload button after adding a server to the file and sees
the reload and the membership change appear with the predicted and the observed miss spike,
asks the page's what-if and compares its answer with `mcring plan`, and saves a screenshot
(docs/console.png, which the README shows; MCRING_CONSOLE_SCREENSHOT=<path> writes it elsewhere).
A second case fails a server under auto_eject_hosts and sees it shown as ejected; a third draws
the routes panel from /routes answers (hidden for this config, which has no routes). The page must
log no error to its console. Release build only (Makefile RELEASE_TESTS): it checks the page;
test_console_views.py checks the views it reads, under the sanitizers too.
"""

import json
import os
import re
import time
import unittest

from harness import (HOST, ROOT, Conn, IntegrationCase, admin_http, cache_aside_load_running,
                     pool_yaml, requires_proxy, run_mcring, set_many_raw, spread_keys)
from headless_browser import Browser, BrowserError, chromium_path

KEYS = 8000
SCREENSHOT = os.environ.get("MCRING_CONSOLE_SCREENSHOT") or os.path.join(ROOT, "docs",
                                                                         "console.png")


@requires_proxy
@unittest.skipIf(chromium_path() is None, "chromium not installed (packaging/deps.sh test)")
class ConsoleTest(IntegrationCase):
    def setUp(self):
        super().setUp()
        self.start_memcacheds(4, named=True)
        self.start_mcring(self.servers[:3], args=["--backend-stats-interval", "1"])
        self.browser = None

    def tearDown(self):
        if self.browser:
            self.browser.close()
        super().tearDown()

    def page_text(self, selector):
        return self.browser.evaluate(
            "[...document.querySelectorAll(%s)].map((e) => e.textContent)" % json.dumps(selector))

    def test_console_shows_the_ring_a_reload_and_its_miss_spike(self):
        keys = spread_keys("console:", KEYS)
        with Conn(HOST, self.mc.port, timeout=20) as c:
            set_many_raw(c, [(k, b"v" * 32) for k in keys])
        url = "http://%s:%d/" % (HOST, self.mc.admin_port)
        self.browser = Browser()
        b = self.browser
        with cache_aside_load_running(self.mc.port, keys, 11) as counts:
            b.navigate(url)
            b.wait_for("document.body && document.body.dataset.loaded === '1'", what="first data")

            # Every server of the pool, its share of the ring as /backends says, and traffic.
            status, body = admin_http(self.mc.admin_port, path="/backends")
            self.assertEqual(status, 200)
            pool = json.loads(body)["pools"][0]
            shares = {s["identity"]: s["ownership"] for s in pool["servers"]}
            self.assertEqual(len(shares), 3)
            for i, backend in enumerate(self.backends[:3]):
                row = b.wait_for(
                    "(() => { const r = document.querySelector(%s);"
                    " return r && [...r.cells].map((c) => c.textContent); })()"
                    % json.dumps('tr.server[data-server="%s"]' % backend.addr),
                    what="the row of " + backend.addr)
                self.assertIn("mc%d" % i, row[0])
                self.assertIn("%.2f%%" % (100 * shares[backend.addr]), row)
            self.assertAlmostEqual(sum(shares.values()), 1.0, places=6)
            self.assertEqual(b.evaluate("document.querySelectorAll('svg.ring path').length"), 3)
            # Requests per second appear once two polls have been seen.
            b.wait_for("[...document.querySelectorAll('tr.server')].every("
                       "(r) => parseFloat(r.cells[5].textContent) > 0)", what="request rates")

            # A baseline second or two of the hit ratio, then add a server and reload from the
            # page's own button.
            b.wait_for("(() => { const t = document.querySelector('.chart path.hit');"
                       " return t && t.getAttribute('d').split('L').length >= 4; })()",
                       what="a hit-ratio line of several seconds")
            with open(self.mc.config_path, "w") as f:
                f.write(pool_yaml(self.mc.pool, self.mc.port, self.servers, self.mc.hash,
                                  self.mc.distribution, self.mc.timeout_ms))
            b.evaluate("document.getElementById('reload').click()")
            # The button's reload appears; mcring's file watch may have seen the write first
            # (the watch's reload then applied the change and the button's found the file
            # unchanged), so the change is the applied row, whichever source it has.
            rows = "[...document.querySelectorAll('tr.reload')].map((r) => [...r.cells].map((c) => c.textContent))"
            admin_row = b.wait_for("%s.find((r) => r[2] === 'admin')" % rows,
                                   what="the button's reload in the history")
            self.assertIn(admin_row[3], ("applied", "unchanged"), admin_row)
            applied = b.wait_for("%s.find((r) => r[3] === 'applied')" % rows,
                                 what="the applied reload")
            self.assertIn(self.backends[3].addr, applied[5])  # the diff names the new server
            self.assertEqual(b.evaluate("%s.filter((r) => r[3] === 'failed').length" % rows), 0)
            self.assertEqual(b.evaluate("document.querySelectorAll('tr.server').length"), 4)

            # The membership change, with its prediction and, once measured, the spike.
            event = b.wait_for(
                "(() => { const r = document.querySelector('tr.event');"
                " return r && r.querySelector('.observed').textContent.includes('→') &&"
                " [...r.cells].map((c) => c.textContent); })()",
                timeout=30, what="the membership event with its observed miss ratio")
            status, body = admin_http(self.mc.admin_port, path="/events")
            e = json.loads(body)[-1]
            predicted = e["prediction"]["moved_fraction"]
            self.assertGreater(predicted, 0.1)
            self.assertEqual(event[3], "%.2f%%" % (100 * predicted), event)
            self.assertIn("+" + self.backends[3].addr, event[2])
            baseline, peak = re.findall(r"([\d.]+)%", event[5])
            print("page: predicted moved %s, observed miss ratio %s%% -> %s%%; load %s"
                  % (event[3], baseline, peak, counts))
            self.assertGreater(float(peak), float(baseline))
            self.assertTrue(b.evaluate("document.querySelector('.chart line.event') !== null"))
            self.assertTrue(b.evaluate("document.querySelector('.chart line.predicted') !== null"))

            # What-if: the page posts the edited list; mcring answers with plan's figures.
            b.evaluate("(() => { const t = document.querySelector('section.pool textarea');"
                       " t.value = t.value.split('\\n').slice(0, 3).join('\\n'); })()")
            b.evaluate("document.querySelector('section.pool button').click()")
            moved = b.wait_for("(() => { const m = document.querySelector('.whatif-moved');"
                               " return m && m.textContent; })()", what="the what-if's answer")
            old = os.path.join(self.tmp, "old.yml")
            new = os.path.join(self.tmp, "new.yml")
            with open(old, "w") as f:
                f.write(pool_yaml(self.mc.pool, self.mc.port, self.servers, self.mc.hash,
                                  self.mc.distribution, self.mc.timeout_ms))
            with open(new, "w") as f:
                f.write(pool_yaml(self.mc.pool, self.mc.port, self.servers[:3], self.mc.hash,
                                  self.mc.distribution, self.mc.timeout_ms))
            r = run_mcring(["plan", old, new, "--json"])
            self.assertEqual(r.returncode, 0, r.stderr)
            plan = json.loads(r.stdout)["pools"][0]["plan"]
            self.assertEqual(moved, "%.2f%%" % (100 * plan["moved"]))
            losers = self.page_text(".whatif-moves tbody td:first-child")
            self.assertEqual(set(losers), {self.backends[3].addr}, losers)

            # Hot keys (/hotkeys): a key read far above the uniform load's keys (which are not
            # listed: none stands out against the sketch's error), with the server it routes to.
            with cache_aside_load_running(self.mc.port, [b"console:hot"], 12):
                hot = b.wait_for("(() => { const p = document.getElementById('hotkeys');"
                                 " return !p.hidden && [...p.querySelectorAll('tbody tr')].map("
                                 "(r) => [...r.cells].map((c) => c.textContent)); })()",
                                 what="the hot-keys panel")
            addrs = {m.addr for m in self.backends}
            self.assertIn("console:hot", [row[0] for row in hot], hot[:3])
            self.assertTrue(all(row[0].startswith("console:") for row in hot), hot[:3])
            self.assertTrue(all(set(row[4].split(", ")) <= addrs for row in hot), hot[:3])
            b.evaluate("drawHotkeys({pools: {alpha: []}})")  # a view listing none: hidden
            self.assertTrue(b.evaluate("document.getElementById('hotkeys').hidden"))

            # Warm-up progress (this pool has no warmup_window; the drawing, fed an event with
            # one): shown while the window is open, gone after it.
            warm = ("(() => { const box = document.createElement('div');"
                    " drawWarmup(box, 'alpha', [{id: 9, change_second: 100,"
                    " warmup_window_ms: 30000}], %d, {warmup_hits: 5, warmup_misses: 1,"
                    " warmup_copies: 4, warmup_skips: 0}); return box.textContent; })()")
            text = b.evaluate(warm % 110)
            self.assertIn("Warm-up window open after change #9", text)
            self.assertIn("10 s of 30 s", text)
            self.assertIn("answered from previous servers 5", text)
            self.assertEqual(b.evaluate(warm % 131), "")

            # For the picture: some seconds of the timeline after the change (bounded).
            try:
                b.wait_for("(() => { const t = document.querySelector('.chart path.hit');"
                           " return t && t.getAttribute('d').split('L').length >= 12; })()",
                           timeout=10, what="a longer timeline")
            except BrowserError:
                pass  # the picture only
            b.evaluate("window.scrollTo(0, 0)")
            os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
            b.screenshot(SCREENSHOT)
        self.assertEqual(counts["errors"], 0)
        with open(SCREENSHOT, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        errors = list(b.console_errors)
        self.assertEqual(errors, [], "the page logged errors")


@requires_proxy
@unittest.skipIf(chromium_path() is None, "chromium not installed (packaging/deps.sh test)")
class ConsoleEjectionTest(IntegrationCase):
    """A server that fails under auto_eject_hosts shows as ejected, with a banner and the
    membership event, and leaves the ring picture."""

    def setUp(self):
        super().setUp()
        self.start_memcacheds(3, named=True)
        self.start_mcring(self.servers, timeout_ms=500,
                          extra={"auto_eject_hosts": "true", "server_failure_limit": 2,
                                 "server_retry_timeout": 60000})
        self.browser = None

    def tearDown(self):
        if self.browser:
            self.browser.close()
        super().tearDown()

    def test_an_ejected_server_is_shown(self):
        keys = spread_keys("eject:", 300)
        self.browser = Browser()
        b = self.browser
        b.navigate("http://%s:%d/" % (HOST, self.mc.admin_port))
        b.wait_for("document.body && document.body.dataset.loaded === '1'", what="first data")
        self.assertEqual(b.evaluate("document.querySelectorAll('svg.ring path').length"), 3)
        victim = self.backends[1]
        victim.stop()
        # Requests for its keys fail until the failure limit ejects it (bounded rounds).
        ejected = None
        for _ in range(20):
            with Conn(HOST, self.mc.port, timeout=5) as c:
                c.send(b"".join(b"get " + k + b"\r\n" for k in keys))
                c.read_replies(len(keys), timeout=10)
            ejected = b.evaluate(
                "(() => { const r = document.querySelector(%s); return r && r.cells[2].textContent; })()"
                % json.dumps('tr.server[data-server="%s"]' % victim.addr))
            if ejected == "ejected":
                break
            time.sleep(0.3)
        b.wait_for("(() => { const r = document.querySelector(%s);"
                   " return r && r.cells[2].textContent === 'ejected'; })()"
                   % json.dumps('tr.server[data-server="%s"]' % victim.addr),
                   what="the ejected state of " + victim.addr)
        banner = b.wait_for("(() => { const n = document.getElementById('ejected');"
                            " return n && n.textContent; })()", what="the ejection banner")
        self.assertIn(victim.addr, banner)
        self.assertEqual(b.evaluate("document.querySelectorAll('svg.ring path').length"), 2)
        change = b.wait_for("(() => { const r = document.querySelector('tr.event');"
                            " return r && r.cells[2].textContent; })()", what="the eject event")
        self.assertIn("eject", change)
        self.assertIn(victim.addr, change)
        errors = list(b.console_errors)
        self.assertEqual(errors, [], "the page logged errors")


@requires_proxy
@unittest.skipIf(chromium_path() is None, "chromium not installed (packaging/deps.sh test)")
class ConsoleRoutesTest(IntegrationCase):
    """The routes panel: hidden while no pool has routes (this config has none); fed /routes
    answers (as a routed config gives them), a row per route with its pool, request rate between
    two answers, errors, rate-limited, shadow pool, copies and agreement."""

    def setUp(self):
        super().setUp()
        self.start_memcacheds(1)
        self.start_mcring(self.servers)
        self.browser = None

    def tearDown(self):
        if self.browser:
            self.browser.close()
        super().tearDown()

    @staticmethod
    def answer(sess_requests, user_requests):
        counters = lambda requests, **kw: dict(
            {"requests": requests, "errors": 0, "rate_limited": 0, "failovers": 0,
             "shadow_sent": 0, "shadow_dropped": 0, "shadow_compared": 0, "shadow_agreed": 0},
            **kw)
        route = lambda name, pool, c, shadow=None, agreement=None: {
            "route": name, "prefix": "" if name == "default" else name,
            "default": name == "default", "pool": pool, "shadow": shadow, "failover": [],
            "failover_on_miss": False, "max_ttl": 0, "rate_limit": None, "counters": c,
            "shadow_agreement": agreement}
        return {"listeners": [
            {"name": "front", "routes": [
                route("sess:", "sessions",
                      counters(sess_requests, shadow_sent=900, shadow_dropped=12,
                               shadow_compared=400, shadow_agreed=300),
                      {"pool": "sessions_v2", "percent": 100, "writes_only": False}, 0.75),
                route("user:<b>", "users", counters(user_requests, errors=3, rate_limited=40)),
                route("default", "users", counters(0))]},
            {"name": "other", "routes": []}]}

    def test_routes_panel(self):
        self.browser = Browser()
        b = self.browser
        b.navigate("http://%s:%d/" % (HOST, self.mc.admin_port))
        b.wait_for("document.body && document.body.dataset.loaded === '1'", what="first data")
        self.assertTrue(b.evaluate("document.getElementById('routes').hidden"))
        rows = ("[...document.querySelectorAll('#routes tr.route')].map("
                "(r) => [...r.cells].map((c) => c.textContent))")
        # Two answers 2 s apart. The page's own polls (this config's empty /routes) would redraw
        # the panel hidden: from now on theirs draw nothing, the test's draw with the original.
        b.evaluate("window.drawRoutesOf = drawRoutes; window.drawRoutes = () => {};")
        b.evaluate("drawRoutesOf(%s, 10000)" % json.dumps(self.answer(1000, 50)))
        self.assertFalse(b.evaluate("document.getElementById('routes').hidden"))
        first = b.evaluate(rows)
        self.assertEqual([r[2] for r in first], ["–", "–", "–"])  # no rate before two answers
        b.evaluate("drawRoutesOf(%s, 12000)" % json.dumps(self.answer(1600, 250)))
        shown = b.evaluate(rows)
        print("routes panel: %s" % shown)
        self.assertEqual(b.evaluate("[...document.querySelectorAll('#routes h3')].map("
                                    "(h) => h.textContent)"), ["front"])
        self.assertEqual(shown[0], ["sess:", "sessions", "300", "0", "0", "sessions_v2", "900",
                                    "12", "75.0%"])
        self.assertEqual(shown[1], ["user:<b>", "users", "100", "3", "40", "–", "–", "–", "–"])
        self.assertEqual(shown[2], ["(default)", "users", "0", "0", "0", "–", "–", "–", "–"])
        # A prefix is text, never markup.
        self.assertEqual(b.evaluate("document.querySelectorAll('#routes b').length"), 0)
        b.evaluate("drawRoutesOf({listeners: [{name: 'front', routes: []}]}, 14000)")
        self.assertTrue(b.evaluate("document.getElementById('routes').hidden"))
        self.assertEqual(list(b.console_errors), [], "the page logged errors")


if __name__ == "__main__":
    unittest.main()
