#!/usr/bin/env bash
# `make run`: three local memcached backends on loopback and mcring in the foreground on
# config/examples/local.yml. Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
conf=config/examples/local.yml
rundir=$(mktemp -d /tmp/mcring-run.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$rundir"
}
trap cleanup EXIT INT TERM

for port in 11301 11302 11303; do
  memcached $( [ "$(id -u)" -eq 0 ] && echo "-u root" ) -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 1 &
  pids+=($!)
  echo "memcached backend on 127.0.0.1:$port (pid $!)"
done
echo "mcring on $conf: try   printf 'set a 0 0 1\\r\\nx\\r\\nget a\\r\\n' | nc -q1 127.0.0.1 22122"
build/mcring -c "$conf" -v 2 &
pids+=($!)
wait "${pids[-1]}"
