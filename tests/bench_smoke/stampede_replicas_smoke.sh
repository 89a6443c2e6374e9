#!/usr/bin/env bash
# Smoke test of `mcring-bench stampede --replicas 1,2` (issue 17): a tiny crash run (kill -9 of one
# backend of 4, ketama) once with replicas 1 and once with replicas 2. With 2, every key is on two
# backends, the warm-up's backend writes are twice the client's, and the first second after the
# kill stays at the baseline (reads fail over); with 1, the dead server's keys answer errors.
#
# usage: stampede_replicas_smoke.sh path/to/mcring-bench path/to/mcring
# Exit 77 = skipped (no memcached), as CTest's SKIP_RETURN_CODE.
set -euo pipefail

bench=${1:?usage: stampede_replicas_smoke.sh path/to/mcring-bench path/to/mcring}
mcring=${2:?usage: stampede_replicas_smoke.sh path/to/mcring-bench path/to/mcring}
if [[ ! -x /usr/bin/memcached ]]; then
  echo "SKIP: /usr/bin/memcached not installed"
  exit 77
fi

work=$(mktemp -d /tmp/stampede-replicas-smoke-XXXXXX)
bench_pid=""

# Every process mcring-bench announced must be gone when it exits; leftovers are stopped by PID.
leftovers() {
  local leaked=0 pid
  [[ -f "$work/stderr" ]] || return 0
  while read -r pid; do
    if kill -0 "$pid" 2>/dev/null && grep -qaE 'memcached|mcring' "/proc/$pid/cmdline" 2>/dev/null; then
      echo "FAIL: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline")) still running; killing it"
      kill -9 "$pid" 2>/dev/null || true
      leaked=1
    fi
  done < <(sed -nE 's/^stampede: pid ([0-9]+) started: .*/\1/p' "$work/stderr")
  return $leaked
}

cleanup() {
  if [[ -n "$bench_pid" ]] && kill -0 "$bench_pid" 2>/dev/null; then
    kill -INT "$bench_pid" 2>/dev/null || true  # it stops its children, then exits
    for _ in $(seq 1 100); do
      kill -0 "$bench_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$bench_pid" 2>/dev/null || true
  fi
  leftovers || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

status=0
timeout -s INT -k 20 180 "$bench" stampede --scenario crash --distributions ketama,jump \
  --replicas 1,2 --backends 4 --keys 5000 --before 2 --after 2 --rate 1000 --connections 4 \
  --mcring "$mcring" --out "$work/results" --json >"$work/summary.json" 2>"$work/stderr" &
bench_pid=$!
wait "$bench_pid" || status=$?
bench_pid=""

grep -v '^stampede: pid ' "$work/stderr" || true
cat "$work/summary.json"
if [[ $status -ne 0 ]]; then
  echo "FAIL: mcring-bench stampede exited with $status"
  exit 1
fi
if ! leftovers; then
  exit 1
fi

/usr/bin/python3 - "$work/summary.json" <<'PY'
import json, sys

doc = json.load(open(sys.argv[1]))
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
        ("replicas 1: the dead server's keys are lost and answer errors",
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
failed = [name for name, ok in checks if not ok]
for name in failed:
    print("FAIL:", name)
sys.exit(1 if failed else 0)
PY
echo "PASS: bench_stampede_replicas_smoke"
