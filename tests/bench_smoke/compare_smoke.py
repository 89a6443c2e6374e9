#!/usr/bin/env python3
"""Smoke test of bench/compare.py: one short round of the mix (mcring-bench load) and cs-mix
(memcslap) workloads against nutcracker and mcring must print the report with both targets, no
errors, a warmed hit ratio, mcring's ratios to nutcracker, and leave no process behind (every
process is started by bench/launch.py, which announces it). The servers are pinned to every CPU
(`--pin-servers`, which changes nothing but runs the pinning); a CPU list past the machine's is
refused before anything starts.

usage: compare_smoke.py path/to/mcring path/to/mcring-bench
Checks shape, not speed. Exit 77 = skipped (no memcached, nutcracker or memcslap).
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile

from stampede_run import finish, leftovers

HERE = os.path.dirname(os.path.abspath(__file__))
COMPARE = os.path.join(HERE, "..", "..", "bench", "compare.py")

mcring, bench = sys.argv[1], sys.argv[2]
missing = [t for t, paths in (("memcached", ["/usr/bin/memcached"]),
                              ("nutcracker", ["/usr/sbin/nutcracker"]),
                              ("memcslap", ["/usr/bin/memcslap"]))
           if not shutil.which(t) and not any(os.access(p, os.X_OK) for p in paths)]
if missing:
    print("SKIP: not installed: " + ", ".join(missing))
    sys.exit(77)

work = tempfile.mkdtemp(prefix="compare-smoke-")
try:
    raw = os.path.join(work, "raw")
    allowed = sorted(os.sched_getaffinity(0))
    all_cpus = ",".join(str(c) for c in allowed)
    run = subprocess.run([sys.executable, COMPARE, "--quick", "--no-direct", "--workloads",
                          "mix,cs-mix", "--cs-number", "200", "--mcring", mcring, "--bench", bench,
                          "--pin-servers", all_cpus, "--out", raw],
                         capture_output=True, text=True, timeout=240)
    bad = subprocess.run([sys.executable, COMPARE, "--pin-servers", str(allowed[-1] + 1)],
                         capture_output=True, text=True, timeout=60)
    print(run.stderr)
    print(run.stdout)
    left = leftovers(run.stderr, prefix="launch: pid ")
    rows = {}  # (workload prefix, target) -> cells of the first table
    for line in run.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 14 and cells[1] in ("nutcracker", "mcring"):
            rows[(cells[0].split(":")[0], cells[1])] = cells
    ratio_rows = [l for l in run.stdout.splitlines() if l.startswith("| mix:") and len(l.split("|")) == 12]
    runs = list(csv.DictReader(open(os.path.join(raw, "runs.tsv")), delimiter="\t")) \
        if os.path.exists(os.path.join(raw, "runs.tsv")) else []
    started = sum(1 for l in run.stderr.splitlines() if l.startswith("launch: pid "))
    checks = [
        ("compare.py exited 0", run.returncode == 0),
        ("5 processes started: 3 memcached, nutcracker, mcring", started == 5),
        ("every process stopped", not left),
        ("rows for both workloads and both targets",
         sorted(rows) == [("cs-mix", "mcring"), ("cs-mix", "nutcracker"), ("mix", "mcring"),
                          ("mix", "nutcracker")]),
        ("no errors", all(r[13] == "0" for r in rows.values())),
        ("warmed keys hit (mix hit ratio >= 0.99; memcslap 1.000)",
         all(float(r[12]) >= 0.99 for r in rows.values() if r[12] != "-") and len(rows) == 4),
        ("server, backends and all processes' CPU per request measured",
         all(float(r[7]) > 0 and float(r[8]) > 0 and float(r[10]) > 0 for r in rows.values())),
        ("mcring / nutcracker ratio row for mix", len(ratio_rows) == 1
         and float(ratio_rows[0].split("|")[2]) > 0),
        ("raw runs.tsv: one row per run (2 workloads x 2 targets)", len(runs) == 4),
        ("the report says where the servers ran", "servers pinned to CPUs %s" % all_cpus in run.stdout),
        ("--pin-servers past the machine's CPUs refused, nothing started",
         bad.returncode == 2 and "this machine has CPUs" in bad.stderr
         and "launch: pid" not in bad.stderr),
    ]
finally:
    shutil.rmtree(work, ignore_errors=True)
finish("bench_compare_smoke", checks)
