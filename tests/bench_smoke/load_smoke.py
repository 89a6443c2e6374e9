#!/usr/bin/env python3
"""Smoke test of `mcring-bench load` (the comparison scripts' load driver): short runs against a
real memcached, started by bench/launch.py, must balance.

usage: load_smoke.py path/to/mcring-bench
Exit 77 = skipped (no memcached), as CTest's SKIP_RETURN_CODE.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import launch  # noqa: E402


def check(name, checks):
    failed = [label for label, ok in checks if not ok]
    for label in failed:
        print("FAIL: %s: %s" % (name, label))
    return not failed


def load(bench, args):
    """One bounded run (by --requests and --duration, and a hard timeout); its JSON summary."""
    out = subprocess.run([bench, "load"] + args + ["--duration", "30", "--json", "--quiet"],
                         capture_output=True, text=True, timeout=90)
    print(out.stdout, out.stderr, sep="")
    if out.returncode != 0:
        sys.exit("FAIL: mcring-bench load %s exited with %d" % (" ".join(args), out.returncode))
    return json.loads(out.stdout)


def main():
    bench = sys.argv[1]
    if not launch.find_tool("memcached", launch.harness.MEMCACHED_BIN):
        print("SKIP: memcached not installed")
        return 77
    with tempfile.TemporaryDirectory(prefix="bench-load-smoke.") as work:
        launcher = launch.Launcher(work)
        try:
            mc = launcher.memcached("memcached")
            r = load(bench, ["--server", mc.addr, "--requests", "2000", "--connections", "4",
                             "--pipeline", "4", "--warm", "--keys", "10000"])
            errors = r["errors"]["total"]
            ok = check("warmed run", [
                ("requests == replies + errors", r["requests"] == r["replies"] + errors),
                ("requests == 2000", r["requests"] == 2000),
                ("replies > 0", r["replies"] > 0),
                ("errors == 0", errors == 0),
                ("hit_ratio > 0.9 after --warm", r["hit_ratio"] is not None and r["hit_ratio"] > 0.9),
                ("warm-up stored every key", r["warm"]["stored"] == 10000),
            ])
            # The mix preset (50 connections, 1:10 set:get over 100000 keys, 32-100 B) with the
            # server's CPU read from /proc: a shape check, not a timing one.
            r = load(bench, ["--server", mc.addr, "--workload", "mix", "--requests", "3000",
                             "--server-pid", str(mc.pid)])
            p = r["params"]
            ok = check("--workload mix", [
                ("requests == replies + errors", r["requests"] == r["replies"] + r["errors"]["total"]),
                ("errors == 0", r["errors"]["total"] == 0),
                ("preset shape", (p["workload"], p["connections"], p["pipeline"], p["keys"],
                                  p["value_size"], p["ratio"], p["multiget"])
                 == ("mix", 50, 1, 100000, "32-100", "1:10", 1)),
                ("sets about 1 in 11", 0.04 < r["sets"] / r["replies"] < 0.16),
                ("server cpu read", r["server_cpu_seconds"] is not None and r["server_cpu_seconds"] >= 0),
                ("server cpu per reply", r["server_cpu_us_per_reply"] is not None),
            ]) and ok
            pid = mc.pid
        finally:
            launcher.stop()
    ok = check("launcher", [("memcached stopped by PID", not os.path.exists("/proc/%d" % pid)
                             or open("/proc/%d/stat" % pid).read().split()[2] == "Z")]) and ok
    if ok:
        print("PASS: bench_load_smoke")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
