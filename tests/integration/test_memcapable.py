"""memccapable -a (libmemcached-tools) against plain memcached and against the endpoint: the
endpoint must pass every test memcached passes."""

import os
import re
import shutil
import subprocess
import sys
import unittest

from harness import HOST, IntegrationCase

MEMCAPABLE = shutil.which("memccapable") or "/usr/bin/memccapable"

# test name -> reason it may fail through mcring although memcached passes it. Start empty.
KNOWN_EXCEPTIONS = {}

_NAME = re.compile(r"(ascii [a-z]+(?: [a-z]+)*) *(\[pass\]|\[skip\])?")


def _run(args, timeout):
    try:
        p = subprocess.run([MEMCAPABLE] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return None, (e.stdout or b"").decode(errors="replace"), "(timed out after %d s)" % timeout


def run_memcapable(port, timeout=120):
    """One `memccapable -a -v` run: {test name: "pass" | "FAIL" | "skip" | "TIMEOUT"} and
    {name: its -v assertion text}. memccapable prints each test's name (and "[pass]") on stdout
    but "[FAIL]" on stderr, so a name line without a status on stdout is a failure."""
    rc, out, err = _run(["-a", "-v", "-t", "5", "-h", HOST, "-p", str(port)], timeout)
    results, details = {}, {}
    # -v text has no trailing newline, so a name may follow it on the same line: scan, not split.
    found = list(_NAME.finditer(out))
    for i, m in enumerate(found):
        name = m.group(1)
        results[name] = {"[pass]": "pass", "[skip]": "skip"}.get(m.group(2), "FAIL")
        if rc is None and i == len(found) - 1 and results[name] == "FAIL":
            results[name] = "TIMEOUT"
        text = out[m.end():found[i + 1].start() if i + 1 < len(found) else len(out)]
        text = text.replace("All tests passed", "").strip()
        if text:
            details[name] = text
    return results, details, rc, err.strip()


@unittest.skipUnless(os.access(MEMCAPABLE, os.X_OK), "memccapable not installed (libmemcached-tools)")
class MemcapableTest(IntegrationCase):

    def test_memcapable_ascii(self):
        ref = self.reference()
        cl = self.cluster(n_backends=3, extra={"allow_flush_all": "true"})  # memccapable flushes
        mc_res, mc_details, mc_rc, _ = run_memcapable(ref.port)
        ep_res, ep_details, ep_rc, ep_err = run_memcapable(cl.port)
        self.assertGreaterEqual(len(mc_res), 20, "could not parse memccapable's output")
        self.assertEqual(mc_rc, 0, "memccapable fails against plain memcached: %r" % mc_details)

        names = list(mc_res) + [n for n in ep_res if n not in mc_res]
        width = max([len(n) for n in names] + [10])
        table = ["%-*s  %-10s %-10s" % (width, "memccapable -a test", "memcached", "endpoint")]
        for n in names:
            table.append("%-*s  %-10s %-10s" % (width, n, mc_res.get(n, "-"), ep_res.get(n, "(none)")))
        table.append("%-*s  %-10s %-10s" % (width, "(exit code)", mc_rc, ep_rc))
        sys.stderr.write("\n" + "\n".join(table) + "\n")

        regressions = [n for n in mc_res if mc_res[n] == "pass" and ep_res.get(n) != "pass"
                       and n not in KNOWN_EXCEPTIONS]
        self.assertEqual(regressions, [], "tests memcached passes but the endpoint does not:\n%s\n"
                         "memccapable -v output:\n%s\n%s" % ("\n".join(table), "\n".join(
                             "%s: %s" % (n, ep_details.get(n, "")) for n in regressions), ep_err))
        stale = [n for n in KNOWN_EXCEPTIONS if ep_res.get(n) == "pass"]
        self.assertEqual(stale, [], "KNOWN_EXCEPTIONS entries that pass now: remove them")


if __name__ == "__main__":
    unittest.main()
