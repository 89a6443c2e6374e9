#!/usr/bin/env bash
# Smoke test of `mcring-bench load`: a short warmed run against a real memcached must balance.
#
# usage: load_smoke.sh path/to/mcring-bench
# Starts memcached on a free loopback port, stops it on exit (by PID). Exit 77 = skipped (no
# memcached), as CTest's SKIP_RETURN_CODE.
set -euo pipefail

bench=${1:?usage: load_smoke.sh path/to/mcring-bench}
memcached_bin=$(command -v memcached || true)
if [[ -z "$memcached_bin" ]]; then
  echo "SKIP: memcached not installed"
  exit 77
fi

memcached_pid=""
cleanup() {
  if [[ -n "$memcached_pid" ]]; then
    kill "$memcached_pid" 2>/dev/null || true
    wait "$memcached_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

# memcached refuses to run as root unless told which user to be.
user_args=()
if [[ $(id -u) -eq 0 ]]; then
  user_args=(-u root)
fi

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The port is free when picked but could be taken before memcached binds it: retry a few times.
port=""
for attempt in 1 2 3 4 5; do
  candidate=$(free_port)
  "$memcached_bin" "${user_args[@]}" -l 127.0.0.1 -p "$candidate" -U 0 -m 64 &
  memcached_pid=$!
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
      port=$candidate
      break
    fi
    if ! kill -0 "$memcached_pid" 2>/dev/null; then
      break
    fi
    sleep 0.05
  done
  if [[ -n "$port" ]]; then
    break
  fi
  cleanup
  memcached_pid=""
done
if [[ -z "$port" ]]; then
  echo "FAIL: could not start memcached on a free loopback port"
  exit 1
fi

out=$(mktemp)
trap 'cleanup; rm -f "$out"' EXIT
# The run is bounded twice: by --requests and by --duration.
status=0
"$bench" load --server "127.0.0.1:$port" --requests 2000 --duration 30 --connections 4 \
  --pipeline 4 --warm --keys 10000 --json --quiet >"$out" || status=$?
cat "$out"
if [[ $status -ne 0 ]]; then
  echo "FAIL: mcring-bench load exited with $status"
  exit 1
fi

/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
errors = r["errors"]["total"]
checks = [
    ("requests == replies + errors", r["requests"] == r["replies"] + errors),
    ("requests == 2000", r["requests"] == 2000),
    ("replies > 0", r["replies"] > 0),
    ("errors == 0", errors == 0),
    ("hit_ratio > 0.9 after --warm", r["hit_ratio"] is not None and r["hit_ratio"] > 0.9),
    ("warm-up stored every key", r["warm"]["stored"] == 10000),
]
failed = [name for name, ok in checks if not ok]
for name in failed:
    print("FAIL:", name)
sys.exit(1 if failed else 0)
' "$out"
# The mix preset (50 connections, 1:10 set:get over 100000 keys, 32-100 B) with the server's CPU
# read from /proc: a shape check, not a timing one.
"$bench" load --server "127.0.0.1:$port" --workload mix --requests 3000 --duration 30 \
  --server-pid "$memcached_pid" --json --quiet >"$out" || status=$?
cat "$out"
if [[ $status -ne 0 ]]; then
  echo "FAIL: mcring-bench load --workload mix exited with $status"
  exit 1
fi
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
p = r["params"]
checks = [
    ("requests == replies + errors", r["requests"] == r["replies"] + r["errors"]["total"]),
    ("errors == 0", r["errors"]["total"] == 0),
    ("preset shape", (p["workload"], p["connections"], p["pipeline"], p["keys"], p["value_size"],
                      p["ratio"], p["multiget"]) == ("mix", 50, 1, 100000, "32-100", "1:10", 1)),
    ("sets about 1 in 11", 0.04 < r["sets"] / r["replies"] < 0.16),
    ("server cpu read", r["server_cpu_seconds"] is not None and r["server_cpu_seconds"] >= 0),
    ("server cpu per reply", r["server_cpu_us_per_reply"] is not None),
]
failed = [name for name, ok in checks if not ok]
for name in failed:
    print("FAIL:", name)
sys.exit(1 if failed else 0)
' "$out"
echo "PASS: bench_load_smoke"
