#!/usr/bin/env python3
"""Smoke test of `mcring-bench stampede`: a tiny add run (4 -> 5 backends, modula and ketama, each
without and with warm migration: --warmup) must produce a well-formed summary whose numbers make
sense, with a cold and a warm run per distribution, and leave no process behind.

usage: stampede_smoke.py path/to/mcring-bench path/to/mcring
Checks shape and sanity, not timing (the machine may be busy). Exit 77 = skipped (no memcached),
as CTest's SKIP_RETURN_CODE.
"""

import csv
import os
import sys

from stampede_run import finish, run_stampede, skip_without_memcached

skip_without_memcached()
doc, stderr = run_stampede(sys.argv[1], sys.argv[2], 240, [
    "--distributions", "modula,ketama", "--backends", "4", "--keys", "5000", "--before", "2",
    "--after", "2", "--rate", "1000", "--connections", "4", "--warmup"])
started = sum(1 for line in stderr.splitlines()
              if line.startswith("stampede: pid ") and " started" in line)
# --warmup: every distribution twice, a cold run (warmup false) and a warm one (warmup true).
pairs = sorted((r.get("distribution"), r.get("warmup")) for r in doc["runs"])
checks = [
    ("at least 24 processes started (4 runs x (5 memcached + mcring))", started >= 24),
    ("four runs: modula and ketama, each with warmup false and true",
     pairs == [("ketama", False), ("ketama", True), ("modula", False), ("modula", True)]),
    ("every run's warmup is a JSON boolean",
     all(type(r.get("warmup")) is bool for r in doc["runs"])),
    ("params say warmup, with a window covering --after (2 s)",
     doc["params"].get("warmup") is True
     and (doc["params"].get("warmup_window_ms") or 0) >= 2000),
    ("labels: DIST for cold runs, DIST+warmup for warm ones",
     all(r.get("label") == r["distribution"] + ("+warmup" if r.get("warmup") else "")
         for r in doc["runs"])),
    ("a CSV per run (warm and cold not written to the same file)",
     len({r.get("csv") for r in doc["runs"]}) == len(doc["runs"])),
]
allruns = {r["distribution"] + ("+warmup" if r.get("warmup") else ""): r for r in doc["runs"]}
runs = {k: r for k, r in allruns.items() if not r.get("warmup")}  # the cold ones, as before
fields = ["distribution", "warmup", "scenario", "hit_ratio_before", "hit_ratio_after",
          "hit_ratio_min", "recovery_seconds", "moved_fraction", "theory_moved_fraction"]
checks.append(("two cold runs, modula and ketama", sorted(runs) == ["ketama", "modula"]))
for name, r in sorted(allruns.items()):
    checks += [
        (f"{name}: every summary field present", all(f in r for f in fields)),
        (f"{name}: no error", "error" not in r),
        (f"{name}: scenario add, 4 -> 5", r.get("scenario") == "add"
         and r.get("servers_before") == 4 and r.get("servers_after") == 5),
        (f"{name}: warmed cache hits before the change (> 0.9)",
         (r.get("hit_ratio_before") or 0) > 0.9),
        (f"{name}: every warmed key found on one backend", r.get("keys_checked") == 5000),
        (f"{name}: first second and minimum are hit ratios",
         all(isinstance(r.get(k), float) and 0 <= r[k] <= 1
             for k in ("hit_ratio_after", "hit_ratio_min"))),
        (f"{name}: minimum <= first second", (r.get("hit_ratio_min") or 0)
         <= (r.get("hit_ratio_after") or 0) + 1e-9),
        (f"{name}: backends agree with `mcring route`",
         r.get("moved_fraction_route") is not None
         and abs(r["moved_fraction_route"] - r["moved_fraction"]) < 1e-9),
        (f"{name}: no errors across a reload", r.get("errors_after") == 0),
        (f"{name}: per-second CSV written", os.path.exists(r.get("csv", ""))),
    ]
    if os.path.exists(r.get("csv", "")):
        rows = list(csv.DictReader(open(r["csv"])))
        checks.append((f"{name}: CSV has t,gets,hits,hit_ratio,ops,errors and t = 1",
                       rows and all(k in rows[0] for k in
                                    ("t", "gets", "hits", "hit_ratio", "ops", "errors"))
                       and any(row["t"] == "1" for row in rows)))
if sorted(runs) == ["ketama", "modula"]:
    m, k = runs["modula"], runs["ketama"]
    checks += [
        ("modula theory 4/5", abs(m["theory_moved_fraction"] - 0.8) < 1e-6),
        ("ketama theory 1/5", abs(k["theory_moved_fraction"] - 0.2) < 1e-6),
        ("modula moved > 0.6", (m["moved_fraction"] or 0) > 0.6),
        ("ketama moved < 0.35", 0 < (k["moved_fraction"] or 1) < 0.35),
        ("ketama's first second after > modula's",
         (k["hit_ratio_after"] or 0) > (m["hit_ratio_after"] or 1)),
    ]
# A warm run moves the same keys as its cold twin (the same rings; warm-up only copies), and
# warm-up never makes the first second after the change worse (0.1: sampling noise of ~1000
# gets, and this machine may be busy); with warm-up the change costs (almost) no hits.
for d in ("modula", "ketama"):
    cold, warm = allruns.get(d), allruns.get(d + "+warmup")
    if cold is None or warm is None:
        continue
    checks += [
        (f"{d}+warmup: same keys moved as {d}",
         warm.get("moved_fraction_route") is not None
         and warm.get("moved_fraction_route") == cold.get("moved_fraction_route")),
        (f"{d}+warmup: first second after >= {d}'s - 0.1",
         (warm.get("hit_ratio_after") or 0) >= (cold.get("hit_ratio_after") or 0) - 0.1),
        # Warm-up answers moved keys from their previous server: even modula's 4 -> 5 (80% of
        # the keys moved; cold, the first second hits ~0.2-0.4) stays close to the baseline.
        (f"{d}+warmup: first second after within 0.1 of the hit ratio before",
         (warm.get("hit_ratio_after") or 0) >= (warm.get("hit_ratio_before") or 1) - 0.1),
    ]
finish("bench_stampede_smoke", checks)
