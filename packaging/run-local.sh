#!/usr/bin/env bash
# `make run`: three local memcached backends on loopback and mcring in the foreground on
# config/examples/local.yml. Ctrl-C stops everything this script started; so does the script's
# own death by any signal, SIGKILL included (each child has a parent-death signal).
#
# For tests: MCRING_BIN (default build/mcring), MCRING_RUN_CONFIG (default the example) and
# MCRING_RUN_PORTS (the memcached ports the config names, default "11301 11302 11303").
set -euo pipefail
cd "$(dirname "$0")/.."
conf=${MCRING_RUN_CONFIG:-config/examples/local.yml}
mcring=${MCRING_BIN:-build/mcring}
ports=${MCRING_RUN_PORTS:-11301 11302 11303}
pids=()
# setpriv (util-linux) sets PR_SET_PDEATHSIG and execs the command: when this script dies, the
# kernel sends the child SIGTERM. Traps run on Ctrl-C and TERM, not on SIGKILL; this does.
die_with_script=()
if setpriv --pdeathsig TERM true 2>/dev/null; then
  die_with_script=(setpriv --pdeathsig TERM)
else
  echo "note: setpriv --pdeathsig unavailable: if this script is killed with SIGKILL, stop mcring and memcached yourself" >&2
fi
# Runs once (INT/TERM, then EXIT, would signal twice); mcring first, so that it finishes
# in-flight requests while its backends are still up.
cleanup() {
  trap - EXIT INT TERM
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT INT TERM

for port in $ports; do
  "${die_with_script[@]}" memcached $( [ "$(id -u)" -eq 0 ] && echo "-u root" ) -l 127.0.0.1 \
    -p "$port" -U 0 -m 64 -t 1 &
  pids+=($!)
  echo "memcached backend on 127.0.0.1:$port (pid $!)"
done
echo "mcring on $conf: try   printf 'set a 0 0 1\\r\\nx\\r\\nget a\\r\\n' | nc -q1 127.0.0.1 22122"
# A session of its own: Ctrl-C reaches the script, whose cleanup stops mcring with one SIGTERM
# (a second signal would make it exit at once instead of finishing in-flight requests). The
# parent-death signal is set outside setsid, which then execs mcring (it forks only when run as
# a process group leader, and a background job of a script is not one).
"${die_with_script[@]}" setsid "$mcring" -c "$conf" -v 2 &
pids+=($!)
echo "mcring pid $!"
wait "${pids[-1]}"
