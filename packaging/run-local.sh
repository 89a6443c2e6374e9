#!/usr/bin/env bash
# `make run`: three local memcached backends on loopback and mcring in the foreground on
# config/examples/local.yml. Ctrl-C stops everything this script started.
set -euo pipefail
cd "$(dirname "$0")/.."
conf=config/examples/local.yml
rundir=$(mktemp -d /tmp/mcring-run.XXXXXX)
pids=()
# Runs once (INT/TERM, then EXIT, would signal twice); mcring first, so that it finishes
# in-flight requests while its backends are still up.
cleanup() {
  trap - EXIT INT TERM
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  rm -rf "$rundir"
}
trap cleanup EXIT INT TERM

for port in 11301 11302 11303; do
  memcached $( [ "$(id -u)" -eq 0 ] && echo "-u root" ) -l 127.0.0.1 -p "$port" -U 0 -m 64 -t 1 &
  pids+=($!)
  echo "memcached backend on 127.0.0.1:$port (pid $!)"
done
echo "mcring on $conf: try   printf 'set a 0 0 1\\r\\nx\\r\\nget a\\r\\n' | nc -q1 127.0.0.1 22122"
# A session of its own: Ctrl-C reaches the script, whose cleanup stops mcring with one SIGTERM
# (a second signal would make it exit at once instead of finishing in-flight requests).
setsid build/mcring -c "$conf" -v 2 &
pids+=($!)
wait "${pids[-1]}"
