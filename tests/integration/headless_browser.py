"""Headless Chromium (Debian's `chromium`) driven over the DevTools protocol, from the stdlib.

Chromium's --remote-debugging-pipe speaks the protocol over two inherited descriptors (it reads
commands from fd 3 and writes replies and events to fd 4, each message a JSON text ended by a NUL
byte), so no WebSocket client, npm package or network is needed. One page (target) per Browser.

Every wait is bounded; the browser runs in its own process group, ended by its PID at close()
(the harness's atexit handler also ends it, like every process the tests start).
"""

import base64
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

from harness import _die_with_parent, _track, make_tmpdir, remove_tmpdir, stop_process

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


def chromium_path():
    for p in CHROMIUM_CANDIDATES:
        if os.access(p, os.X_OK):
            return p
    return shutil.which("chromium")


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, width=1400, height=1000, timeout=30.0):
        path = chromium_path()
        if path is None:
            raise BrowserError("chromium not found (packaging/deps.sh test installs it)")
        self.timeout = timeout
        self.profile = make_tmpdir("mcring-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def preexec():
            _die_with_parent()
            os.setsid()  # its own process group: the renderer and GPU helpers end with it
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        args = [path, "--headless=new", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
                "--disable-component-update", "--metrics-recording-only", "--mute-audio",
                "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height),
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
        self._log = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = _track(subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                            stderr=subprocess.STDOUT, pass_fds=(3, 4),
                                            preexec_fn=preexec))
        os.close(cmd_r)
        os.close(out_w)
        self._next_id = 0
        self._replies = {}
        self._cond = threading.Condition()
        self.events = queue.Queue()
        self.console_errors = []  # what the page's console and runtime reported as errors
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    # -- the protocol ---------------------------------------------------------------------------

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self._out_r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._replies[None] = "closed"
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._replies[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self._note(msg)

    def _note(self, msg):
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.console_errors.append("console.%s: %s" % (params["type"], text))
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.console_errors.append("exception: %s %s" % (
                d.get("text", ""), d.get("exception", {}).get("description", "")))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            e = params["entry"]
            self.console_errors.append("log (%s): %s %s" % (e.get("source"), e.get("text"),
                                                            e.get("url", "")))
        self.events.put(msg)

    def call(self, method, params=None, session=True, timeout=None):
        with self._cond:
            self._next_id += 1
            mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self._cmd_w, data)
            data = data[n:]
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._cond:
            while mid not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or None in self._replies:
                    raise BrowserError("no reply to %s (browser %s)" % (
                        method, "closed" if None in self._replies else "timed out"))
                self._cond.wait(left)
            reply = self._replies.pop(mid)
        if "error" in reply:
            raise BrowserError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    # -- what the tests use ---------------------------------------------------------------------

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise BrowserError("evaluate %r: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expression, timeout=20.0, what=None):
        """Evaluates `expression` every 100 ms until it is truthy; returns its value. An
        expression that throws (the page is still loading) counts as not yet."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except BrowserError as e:
                value = e
            if value and not isinstance(value, BrowserError):
                return value
            time.sleep(0.1)
        raise BrowserError("timed out after %.0f s waiting for %s (last value %r)" % (
            timeout, what or expression, value))

    def screenshot(self, path):
        """A PNG of the whole page (beyond the viewport)."""
        height = int(self.evaluate("document.documentElement.scrollHeight"))
        width = int(self.evaluate("document.documentElement.scrollWidth"))
        r = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            # The group this browser leads (renderer, GPU and zygote helpers); a process group's
            # ID is not reused while any member lives.
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        stop_process(self.proc, signal.SIGKILL, 2.0)
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self._log.close()
        remove_tmpdir(self.profile)
