#!/usr/bin/env python3
"""Smoke test of `mcring-bench stampede --replicas 1,2` (issue 17): a tiny crash run (kill -9 of one
backend of 4, ketama) once with replicas 1 and once with replicas 2. With 2, every key is on two
backends, the warm-up's backend writes are twice the client's, and the first second after the
kill stays at the baseline (reads fail over); with 1, the dead server's keys are lost (misses,
whose refill sets fail).

usage: stampede_replicas_smoke.py path/to/mcring-bench path/to/mcring
Exit 77 = skipped (no memcached), as CTest's SKIP_RETURN_CODE.
"""

import sys

from stampede_run import finish, run_stampede, skip_without_memcached

skip_without_memcached()
doc, _ = run_stampede(sys.argv[1], sys.argv[2], 180, [
    "--scenario", "crash", "--distributions", "ketama,jump", "--replicas", "1,2", "--backends", "4",
    "--keys", "5000", "--before", "2", "--after", "2", "--rate", "1000", "--connections", "4"])
runs = {r["label"]: r for r in doc["runs"]}
checks = [
    ("params list the replica counts", doc["params"].get("replicas") == [1, 2]),
    # jump has no replica sets: it runs with replicas 1 only.
    ("three runs: ketama, ketama+r2, jump", sorted(runs) == ["jump", "ketama", "ketama+r2"]),
]
if sorted(runs) == ["jump", "ketama", "ketama+r2"]:
    one, two = runs["ketama"], runs["ketama+r2"]
    checks += [
        ("no run failed", all("error" not in r for r in runs.values())),
        ("replicas recorded per run", one["replicas"] == 1 and two["replicas"] == 2),
        ("every key on exactly min(R, N) backends after the warm-up",
         one["warm_anomalies"] == 0 and two["warm_anomalies"] == 0),
        ("warm-up write amplification 1 and 2",
         one["write_amplification_warm"] == 1.0 and two["write_amplification_warm"] == 2.0
         and two["warm_backend_writes"] == 2 * two["warm_client_sets"] == 10000),
        ("replicas 1: the dead server's keys are lost (their refill sets fail)",
         0.05 < one["moved_fraction"] < 0.6 and one["errors_after"] > 0),
        ("replicas 1: the first second drops below the baseline",
         one["hit_ratio_after"] < one["hit_ratio_before"] - 0.05),
        ("replicas 2: no key lost every copy, no error", two["moved_fraction"] == 0
         and two["theory_moved_fraction"] == 0 and two["errors_after"] == 0),
        ("replicas 2: the first second within 1 point of the baseline",
         two["hit_ratio_after"] >= two["hit_ratio_before"] - 0.01),
        ("the first second as a share of the baseline",
         abs(two["hit_ratio_after_share_of_before"]
             - two["hit_ratio_after"] / two["hit_ratio_before"]) < 1e-5),
        ("mcring's CPU per request measured",
         all(isinstance(r.get("proxy_cpu_us_per_request"), float)
             and r["proxy_cpu_us_per_request"] > 0 and r["load_requests"] > 0
             for r in (one, two))),
        ("no client writes in a crash (nothing to refill): load amplification null",
         two["load_client_writes"] == 0 and two["write_amplification_load"] is None),
    ]
finish("bench_stampede_replicas_smoke", checks)
