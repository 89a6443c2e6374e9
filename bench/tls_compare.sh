#!/usr/bin/env bash
# What TLS costs: the same workloads against memcached -Z directly (TLS), mcring plaintext ->
# plaintext memcached, and mcring TLS -> TLS memcached, interleaved in one run; prints a
# markdown table of medians (throughput, latency, CPU per reply of the process under test and of
# memcached).
#
# usage: bench/tls_compare.sh [--rounds N] [--duration S] [--workloads LIST] [--build DIR]
#   --rounds N        rounds (default 3), the target order rotated by one each round
#   --duration S      seconds per run (default 5)
#   --workloads LIST  mcring-bench load workloads, comma-separated (default mix,pipelined)
#   --build DIR       where mcring and mcring-bench are (default build)
#   --out DIR         keep the raw results (runs.tsv: one generator JSON per run; configs, logs)
#
# Setup: ONE memcached 1.6 (-t 1, -m 256) started with -Z, listening on a TLS port and on a
# plaintext one (`-l notls:ADDR`), so all three targets read the same memcached: direct = its
# TLS port; mcring plaintext = `listen` -> its plaintext port; mcring TLS = `listen_tls` ->
# `server_tls` to its TLS port (certificate made here by `openssl req`, verified by name).
# mcring runs with its defaults (one worker thread on 2 cores). The keys are warmed once.
# The load generator is mcring-bench load (--tls for the TLS targets: TLS 1.3, the server's
# certificate not verified, one handshake per connection at the start of each run).
set -euo pipefail

rounds=3
duration=5
workloads=mix,pipelined
build=build
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mcring=$build/mcring
bench=$build/mcring-bench
[ -x "$mcring" ] && [ -x "$bench" ] || { echo "build mcring and mcring-bench in $build first" >&2; exit 2; }

tmp=$(mktemp -d /tmp/mcring-tls-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "$out" ]; then mkdir -p "$out" && cp "$tmp"/*.tsv "$tmp"/*.yml "$tmp"/*.log "$out"/ 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {
  for _ in $(seq 1 200); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "port $1 never opened" >&2; exit 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tmp/key.pem" \
  -out "$tmp/cert.pem" -days 1 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null

mc_tls=$(free_port); mc_plain=$(free_port)
memcached -u nobody -t 1 -m 256 -U 0 -Z -o "ssl_chain_cert=$tmp/cert.pem,ssl_key=$tmp/key.pem" \
  -l "127.0.0.1:$mc_tls" -l "notls:127.0.0.1:$mc_plain" < /dev/null > /dev/null 2>&1 &
mc_pid=$!; pids+=("$mc_pid")
wait_port "$mc_plain"

start_mcring() {  # name, yaml body -> sets last_pid, last_port (not in a subshell: pids counts)
  last_port=$(free_port)
  local admin; admin=$(free_port)
  printf 'bench:\n  listen: 127.0.0.1:%s\n%s' "$last_port" "$2" > "$tmp/$1.yml"
  "$mcring" -c "$tmp/$1.yml" -s "$admin" -a 127.0.0.1 -o "$tmp/$1.log" < /dev/null > /dev/null 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
  wait_port "$last_port"
}
start_mcring plain "  servers:
    - 127.0.0.1:$mc_plain:1
"
plain_pid=$last_pid plain_port=$last_port
start_mcring tls "  listen_tls: true
  tls_cert: $tmp/cert.pem
  tls_key: $tmp/key.pem
  server_tls: true
  server_tls_ca: $tmp/cert.pem
  server_tls_name: localhost
  servers:
    - 127.0.0.1:$mc_tls:1
"
tls_pid=$last_pid tls_port=$last_port

"$bench" load --server "127.0.0.1:$mc_plain" --warm --requests 1 --quiet --json > /dev/null

targets=("direct-tls 127.0.0.1:$mc_tls --tls $mc_pid"
         "mcring-plain 127.0.0.1:$plain_port - $plain_pid"
         "mcring-tls 127.0.0.1:$tls_port --tls $tls_pid")
results=$tmp/runs.tsv
: > "$results"
hz=$(getconf CLK_TCK)
IFS=, read -r -a wl <<< "$workloads"
for ((r = 0; r < rounds; r++)); do
  for w in "${wl[@]}"; do
    for ((i = 0; i < ${#targets[@]}; i++)); do
      read -r name addr tls pid <<< "${targets[(i + r) % ${#targets[@]}]}"
      flags=(); [ "$tls" = "-" ] || flags=("$tls")
      before=$(cpu_ticks "$mc_pid")
      json=$("$bench" load --server "$addr" "${flags[@]}" --workload "$w" --duration "$duration" \
              --server-pid "$pid" --quiet --json)
      after=$(cpu_ticks "$mc_pid")
      printf '%s\t%s\t%s\t%s\n' "$w" "$name" "$(( after - before ))" "$json" >> "$results"
      echo "round $((r + 1)) $w $name done" >&2
    done
  done
done

python3 - "$results" "$hz" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    w, name, mc_ticks, out = line.rstrip("\n").split("\t", 3)
    d = json.loads(out)
    mc_us = int(mc_ticks) / float(sys.argv[2]) * 1e6 / max(d["replies"], 1)
    rows.setdefault((w, name), []).append((d, mc_us))
print("| workload | target | ops/s | p50 µs | p99 µs | errors | CPU µs/reply: process under test | memcached | proxy + memcached |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for (w, name), runs in rows.items():
    med = lambda f: statistics.median(f(d, m) for d, m in runs)
    server = med(lambda d, m: d["server_cpu_us_per_reply"])
    mc = med(lambda d, m: m)
    total = server + mc if name.startswith("mcring") else server
    kinds = {}
    for d, m in runs:
        for k, v in d["errors"].items():
            if k != "total" and v:
                kinds[k] = kinds.get(k, 0) + v
    errors = "%d" % sum(kinds.values())
    if kinds:
        errors += " (" + ", ".join("%s %d" % kv for kv in sorted(kinds.items())) + ")"
    print("| %s | %s | %.0f | %.0f | %.0f | %s | %.1f | %.1f | %.1f |" % (
        w, name, med(lambda d, m: d["ops_per_sec"]), med(lambda d, m: d["latency_us"]["p50"]),
        med(lambda d, m: d["latency_us"]["p99"]), errors, server, mc, total))
EOF
