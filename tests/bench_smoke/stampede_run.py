"""Shared by the bench smoke tests (leftovers() by compare_smoke.py too): runs `mcring-bench stampede` (which starts and stops its own
memcached and mcring processes, bench/README.md) as a child of bench/launch.py, bounded in time,
and checks that every process it announced (`stampede: pid N started: CMD`) is gone when it has
exited: anything left is killed here, by PID, and fails the test."""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import launch  # noqa: E402


def skip_without_memcached():
    if not os.access("/usr/bin/memcached", os.X_OK):
        print("SKIP: /usr/bin/memcached not installed")
        sys.exit(77)


def leftovers(stderr_text, prefix="stampede: pid "):
    """PIDs the run announced (`PREFIX N started: CMD`) that still run a memcached, mcring or
    nutcracker (killed here)."""
    left = []
    for line in stderr_text.splitlines():
        if not (line.startswith(prefix) and " started: " in line):
            continue
        pid = int(line[len(prefix):].split()[0])
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(name in cmdline for name in ("memcached", "mcring", "nutcracker")):
            print("FAIL: pid %d (%s) still running; killing it" % (pid, cmdline))
            os.kill(pid, signal.SIGKILL)
            left.append(pid)
    return left


def run_stampede(bench, mcring, seconds, args):
    """mcring-bench stampede ARGS --json, SIGINT after `seconds` (it then stops its children and
    exits), SIGKILL 20 s later. Returns (summary, stderr text); exits the test on failure. The
    scratch directory (results, CSVs) is removed when the test exits."""
    work = tempfile.mkdtemp(prefix="stampede-smoke-")
    atexit.register(shutil.rmtree, work, True)
    out_dir = os.path.join(work, "results")
    with open(os.path.join(work, "summary.json"), "w+") as out, \
            open(os.path.join(work, "stderr"), "w+") as err:
        proc = launch.harness.spawn([bench, "stampede", "--mcring", mcring, "--out", out_dir,
                                     "--json"] + args, stdout=out, stderr=err)
        try:
            status = proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            status = launch.wait_bounded([proc], time.monotonic() + 20)[0]
        launch.harness.stop_process(proc)
        out.seek(0)
        err.seek(0)
        summary_text, stderr_text = out.read(), err.read()
    print("\n".join(l for l in stderr_text.splitlines() if not l.startswith("stampede: pid ")))
    print(summary_text)
    if status != 0:
        sys.exit("FAIL: mcring-bench stampede exited with %s" % status)
    if leftovers(stderr_text):
        sys.exit(1)
    return json.loads(summary_text), stderr_text


def finish(name, checks):
    failed = [label for label, ok in checks if not ok]
    for label in failed:
        print("FAIL:", label)
    if failed:
        sys.exit(1)
    print("PASS:", name)
