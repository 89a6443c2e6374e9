#!/usr/bin/env bash
# Proxy comparison: the same workloads, from two independent load generators, against memcached
# directly, twemproxy (nutcracker) and mcring, on the same three memcached backends, interleaved
# and repeated; prints a markdown table of medians and mcring's ratios to nutcracker and direct.
#
# usage: bench/compare.sh [--rounds N] [--duration S] [--quick] [--workloads LIST] [--ratio S:G]
#                         [--build DIR] [--mcring PATH] [--bench PATH]
#                         [--mcring-flags "ARGS"] [--mcring-threads N] [--mcring-key K=V]
#                         [--mcring2-flags "ARGS"] [--mcring2-key K=V] [--no-direct]
#                         [--pin-generator CPU] [--out DIR]
#   --rounds N          rounds (default 5); each runs every workload against every target, in an
#                       order rotated by one each round (D N M, N M D, M D N, ...)
#   --duration S        seconds per run (default 5)
#   --quick             smoke run: 1 round, 3 s per run
#   --workloads LIST    comma-separated, run in that order each round (default mix,cs-mix,4,3):
#                       1..6 and mix are mcring-bench load workloads, cs-* memcslap ones, ms-*
#                       memcaslap ones (below)
#   --ratio S:G         set:get mix of the mix, cs-mix, ms-mix and ms-mget workloads (default 1:10)
#   --cs-number N       memcslap --execute-number of cs-* (default 1000 x --duration; below)
#   --build DIR         where mcring and mcring-bench are (default build, or $MCRING_BUILD; built
#                       there if missing)
#   --mcring PATH       the mcring binary to measure (default DIR/mcring, or $MCRING), e.g. a newer
#                       build from another work tree; the generator stays this tree's
#   --bench PATH        the mcring-bench binary (default DIR/mcring-bench, or $MCRING_BENCH)
#   --mcring-flags ARGS extra command-line flags for mcring, word-split (default none: mcring runs
#                       with its defaults, e.g. --threads = half the cores)
#   --mcring-threads N  shorthand for --mcring-flags "--threads N" (added to them)
#   --mcring-key K=V    add `K: V` to mcring's pool (repeatable), e.g. coalesce_gets=false
#   --mcring2-flags ARGS also run a second mcring ("mcring2": same pool and keys, these extra
#                       flags, e.g. "--threads 2") as one more target in the same rounds
#   --mcring2-key K=V   add `K: V` to mcring2's pool only (repeatable; implies mcring2), e.g.
#                       hot_keys=false to measure what hot-key detection costs
#   --no-direct         do not measure memcached directly (saves a third of the time)
#   --pin-generator CPU run the load generators on that CPU only (taskset)
#   --out DIR           keep the raw results (generator outputs, runs.tsv, configs, logs) in DIR
# Environment: MCRING_BUILD, MCRING, MCRING_BENCH as the options above (options win).
#
# Setup: three memcached backends (-t 1 each) behind nutcracker and mcring. mcring's pool holds
# only `listen` and `servers` (and `client_connections: 0`, below): every other key is its default
# (hash fnv1a_64, ketama, server_connections 1, coalesce_gets true, ... as twemproxy's; timeout
# 1000 ms where twemproxy waits forever, which only matters for a server that stops answering); nutcracker's
# pool adds `hash: fnv1a_64` and `distribution: ketama` explicitly, the same ring. mcring is
# started as `mcring -c FILE -s PORT -a 127.0.0.1 -o LOG` plus --mcring-flags: -s only moves its
# admin port off 22222 to a free one, so that two runs on one machine do not collide.
# nutcracker: `-s PORT -a 127.0.0.1 -o LOG -v 4`. "direct" is a 4th memcached (-t 1) warmed with
# the same keys, so it holds what the three backends hold together. mcring-bench keys are warmed
# once, through mcring for the pool (mcring and nutcracker route alike, which the hit ratio
# column checks).
#
# Workloads of mcring-bench load (values 32-100 B over 100000 uniform keys unless said):
#   mix           --workload mix: 50 connections, pipeline 1, sets mixed into gets at --ratio
#   1 latency     1 connection, no pipelining, gets
#   2 throughput  50 connections, gets, no pipelining
#   3 pipelined   50 connections, 16 deep, 90% get / 10% set
#   4 multiget    50 connections, `get` of 10 keys
#   5 large       50 connections, 16 KiB values, 90/10, over 20000 other keys ("big:...")
#   6 many        2000 mostly idle connections (a python helper: one get each at open, then 10
#                 random ones every 100 ms) + 50 active connections as in 2
# Workloads of memcslap (libmemcached's memslap, Debian libmemcached-tools), an independent
# generator: one thread per connection, blocking, one request in flight each, text protocol, keys
# of 20-59 random alphanumerics, values of 50-4999 random bytes (neither can be set), and no
# latency figures. Each instance first makes N keys (N = --execute-number); a get instance sets
# them once on one connection, then each of its threads gets N random ones of them; a set
# instance's threads each set its N keys in order. It is bounded by count, not time.
#   cs-mix        two instances at once (N = --cs-number, 1000 x --duration by default):
#                   memcslap --servers=HOST:PORT --test=get --concurrency=48 --execute-number=N --tcp-nodelay
#                   memcslap --servers=HOST:PORT --test=set --concurrency=2 --execute-number=M --tcp-nodelay
#                 50 connections, M = (48 N S/G - N) / 2 so that all sets (the get instance's N
#                 included) : all gets = S:G of --ratio (1:10: N = 5000 -> 240000 gets, 24000 sets).
#                 48:2 connections because a set thread here runs about 3.5x as many requests per
#                 second as a get thread (its replies are short): with 1:10 by count, both
#                 instances then end within ~20% of each other (the get instance loads its N keys
#                 first). ops/s = all requests / wall time from starting both to the end of the
#                 later.
#   cs-gets       memcslap --test=get --concurrency=50 --execute-number=N --tcp-nodelay: ops/s =
#                 50 N / the time memcslap reports for its gets (its load of N keys excluded)
#   bin-mix, bin-gets  cs-mix and cs-gets with memcslap --binary: the binary protocol (not run
#                 against nutcracker, which does not serve it), to set beside the text figures
# Workloads of memcaslap (memaslap, same package; not in the default list, add them with
# --workloads: its keys start with 8 raw bytes of 0x10-0x1f, which memcached, nutcracker and
# mcring all take as key bytes):
#   ms-mix        memcaslap -s HOST:PORT -F CFG -T 1 -c 50 -w 2k -t Ds -S Ds
#                 CFG: 16-byte keys, values 32-100 B, set:get at --ratio. 50 connections on one
#                 thread, one request in flight each; each connection gets random keys among the
#                 ones it set itself in this run, up to a window of 2048 (so at most 102400 keys,
#                 all hits); its sets always write new keys.
#   ms-mget       the same with -d 10: each get asks 10 keys
#   ms-gets       gets only (CFG without sets): memcaslap first sets each connection's 2048 keys
#                 (102400 in all, not timed), then gets uniformly over them (not in the default)
#
# Per run: the generator's output; the target process's CPU (utime + stime from /proc/PID/stat,
# before/after the generator ran) and the three backends' together (for the proxies: what a
# request costs the memcached servers behind them); its RSS after the run. The target process is
# the proxy, or for "direct" the memcached itself. Memory per idle connection (workload 6 only) is
# measured once, on the fresh processes before warming.
# Everything started here is stopped by PID on exit; every run is bounded by --duration (plus a
# hard `timeout`).
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=5
DURATION=5
PIN_GENERATOR=""
MCRING_KEYS=()
MCRING_FLAGS=()
MCRING2_FLAGS_TEXT=""
MCRING2_KEYS=()
WITH_MCRING2=0
WITH_DIRECT=1
BUILD=${MCRING_BUILD:-build}
MCRING=${MCRING:-}
BENCH=${MCRING_BENCH:-}
WORKLOADS=mix,cs-mix,4,3
RATIO=1:10
CS_NUMBER=""
OUT=""
usage() { awk 'NR >= 6 && /^#$/ {exit} NR >= 6' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --quick) ROUNDS=1; DURATION=3; shift ;;
    --mcring-threads)
      [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] || { echo "compare.sh: bad number '$2'" >&2; exit 2; }
      MCRING_FLAGS+=(--threads "$2"); shift 2 ;;
    --mcring-flags) read -r -a extra <<<"$2"; MCRING_FLAGS+=("${extra[@]}"); shift 2 ;;
    --mcring2-flags) MCRING2_FLAGS_TEXT=$2; WITH_MCRING2=1; shift 2 ;;
    --no-direct) WITH_DIRECT=0; shift ;;
    --pin-generator) PIN_GENERATOR=$2; shift 2 ;;
    --mcring-key)
      [[ "$2" =~ ^[a-z_]+=[A-Za-z0-9_.:-]+$ ]] || { echo "compare.sh: --mcring-key wants KEY=VALUE" >&2; exit 2; }
      MCRING_KEYS+=("$2"); shift 2 ;;
    --mcring2-key)
      [[ "$2" =~ ^[a-z_]+=[A-Za-z0-9_.:-]+$ ]] || { echo "compare.sh: --mcring2-key wants KEY=VALUE" >&2; exit 2; }
      MCRING2_KEYS+=("$2"); WITH_MCRING2=1; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --mcring) MCRING=$2; shift 2 ;;
    --bench) BENCH=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --ratio) RATIO=$2; shift 2 ;;
    --cs-number) CS_NUMBER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for v in "$ROUNDS" "$DURATION"; do
  [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] || { echo "compare.sh: bad number '$v'" >&2; exit 2; }
done
[ "$ROUNDS" -le 50 ] && [ "$DURATION" -le 600 ] || { echo "compare.sh: at most 50 rounds of 600 s" >&2; exit 2; }
[[ "$RATIO" =~ ^([0-9]+):([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" -ge 1 ] ||
  { echo "compare.sh: --ratio wants SET:GET with GET >= 1, e.g. 1:10" >&2; exit 2; }
SET_W=${BASH_REMATCH[1]}
GET_W=${BASH_REMATCH[2]}
CS_NUMBER=${CS_NUMBER:-$((1000 * DURATION))}
[[ "$CS_NUMBER" =~ ^[0-9]+$ ]] && [ "$CS_NUMBER" -ge 10 ] && [ "$CS_NUMBER" -le 1000000 ] ||
  { echo "compare.sh: --cs-number wants 10..1000000" >&2; exit 2; }
CS_GET_CONNS=48
CS_SET_CONNS=2
# Each set thread's count, so that all sets : all gets = SET_W : GET_W (at least 1 when SET_W > 0).
CS_SET_NUMBER=$(( (CS_GET_CONNS * CS_NUMBER * SET_W / GET_W - CS_NUMBER) / CS_SET_CONNS ))
[ "$CS_SET_NUMBER" -lt 1 ] && CS_SET_NUMBER=1
IFS=, read -r -a WL <<<"$WORKLOADS"
for w in "${WL[@]}"; do
  case "$w" in
    1 | 2 | 3 | 4 | 5 | 6 | mix | cs-mix | cs-gets | bin-mix | bin-gets | ms-mix | ms-mget | ms-gets) ;;
    *) echo "compare.sh: unknown workload '$w' (1..6, mix, cs-mix, cs-gets, bin-mix, bin-gets, ms-mix, ms-mget, ms-gets)" >&2; exit 2 ;;
  esac
done
has_workload() { local w; for w in "${WL[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }
GENERATOR_PREFIX=()
if [ -n "$PIN_GENERATOR" ]; then
  [[ "$PIN_GENERATOR" =~ ^[0-9]+$ ]] || { echo "compare.sh: bad CPU '$PIN_GENERATOR'" >&2; exit 2; }
  GENERATOR_PREFIX=(taskset -c "$PIN_GENERATOR")
fi
read -r -a MCRING2_FLAGS <<<"$MCRING2_FLAGS_TEXT"

KEYS=100000
BIG_KEYS=20000
IDLE_CONNS=2000
MS_CONNS=50
MS_WINDOW=2k  # keys per memcaslap connection (a multiple of 1024): 50 x 2048 = 102400 at most

# --- tools ----------------------------------------------------------------------------------
NUTCRACKER=$(command -v nutcracker || true)
[ -z "$NUTCRACKER" ] && [ -x /usr/sbin/nutcracker ] && NUTCRACKER=/usr/sbin/nutcracker
MEMCASLAP=$(command -v memcaslap || true)
MEMCSLAP=$(command -v memcslap || true)
if [ -z "$NUTCRACKER" ] || [ -z "$MEMCASLAP" ] || [ -z "$MEMCSLAP" ]; then
  packaging/deps.sh bench
  NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)
  MEMCASLAP=$(command -v memcaslap || echo /usr/bin/memcaslap)
  MEMCSLAP=$(command -v memcslap || echo /usr/bin/memcslap)
fi
MEMCACHED=$(command -v memcached || echo /usr/bin/memcached)
for t in "$NUTCRACKER" "$MEMCACHED" "$MEMCASLAP" "$MEMCSLAP"; do
  [ -x "$t" ] || { echo "compare.sh: $t missing (packaging/deps.sh bench)" >&2; exit 1; }
done
DEFAULT_MCRING=$BUILD/mcring
DEFAULT_BENCH=$BUILD/mcring-bench
MCRING=${MCRING:-$DEFAULT_MCRING}
BENCH=${BENCH:-$DEFAULT_BENCH}
if { [ "$MCRING" = "$DEFAULT_MCRING" ] && [ ! -x "$MCRING" ]; } ||
   { [ "$BENCH" = "$DEFAULT_BENCH" ] && [ ! -x "$BENCH" ]; }; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" --target mcring mcring-bench -j2 >/dev/null
fi
for t in "$MCRING" "$BENCH"; do
  [ -x "$t" ] || { echo "compare.sh: $t missing or not executable" >&2; exit 1; }
done
MCRING=$(realpath "$MCRING")
BENCH=$(realpath "$BENCH")
"$BENCH" load --help | grep -q -- --workload ||
  { echo "compare.sh: $BENCH has no 'load --workload' (too old); use this tree's build" >&2; exit 1; }
TCK=$(getconf CLK_TCK)

# --- processes: every PID started here, stopped on exit ----------------------------------------
WORK=$(mktemp -d /tmp/mcring-compare.XXXXXX)
PIDS=()
IDLE_PID=""
cleanup() {
  local rc=$? pid st
  trap - EXIT INT TERM
  if [ -n "$IDLE_PID" ]; then kill "$IDLE_PID" 2>/dev/null || true; wait "$IDLE_PID" 2>/dev/null || true; fi
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    st=0
    wait "$pid" 2>/dev/null || st=$?
    # 143 = stopped by our SIGTERM; anything else (e.g. 134, abort) is worth knowing about.
    if [ "$st" != 0 ] && [ "$st" != 143 ] && [ "$st" != 127 ]; then
      echo "compare.sh: warning: ${NAME_OF[$pid]:-pid $pid} exited with status $st on SIGTERM" >&2
    fi
  done
  if [ -n "$OUT" ]; then
    mkdir -p "$OUT" && cp -r "$WORK"/. "$OUT"/ && echo "raw results in $OUT" >&2
  fi
  rm -rf "$WORK"
  exit "$rc"
}
declare -A NAME_OF=()
trap cleanup EXIT
trap 'exit 130' INT TERM

ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# Free loopback ports (bound then released; nothing else is started between here and use).
read -r P1 P2 P3 PD PN PM PNS PMS PM2 PMS2 < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(10)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)

wait_port() {  # wait_port PORT PID: up to 10 s for a listener, while PID lives
  for _ in $(seq 100); do
    kill -0 "$2" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

free_port() {  # a loopback port free right now (bound then released)
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
start_memcached() {  # start_memcached PORTVAR MB PIDVAR: sets PIDVAR to the PID
  # The port was free when picked, but this machine is shared: another process may take it
  # before memcached binds it, so a failed start is retried on a new port.
  local port=${!1} pid _
  for _ in 1 2 3 4 5; do
    "$MEMCACHED" -u root -l 127.0.0.1 -p "$port" -U 0 -t 1 -m "$2" -c 4096 >"$WORK/memcached.$port.log" 2>&1 &
    pid=$!
    # (still alive a moment later: the listener seen might have been another's)
    if wait_port "$port" "$pid" && sleep 0.2 && kill -0 "$pid" 2>/dev/null; then
      PIDS+=("$pid")
      NAME_OF[$pid]="memcached :$port"
      printf -v "$1" '%s' "$port"
      printf -v "$3" '%s' "$pid"
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    port=$(free_port)
  done
  echo "compare.sh: memcached did not start (last port $port)" >&2
  exit 1
}

start_memcached P1 512 B1
start_memcached P2 512 B2
start_memcached P3 512 B3
DIRECT_PID=""
[ "$WITH_DIRECT" = 1 ] && start_memcached PD 1024 DIRECT_PID

servers_yaml() {
  cat <<EOF
  servers:
    - 127.0.0.1:$P1:1
    - 127.0.0.1:$P2:1
    - 127.0.0.1:$P3:1
EOF
}
# nutcracker: the ring spelled out (its defaults anyway); mcring: listen and servers only.
{ printf 'pool:\n  listen: 127.0.0.1:%s\n  hash: fnv1a_64\n  distribution: ketama\n' "$PN"; servers_yaml; } \
  >"$WORK/nutcracker.yml"
mcring_yaml() {  # mcring_yaml LISTEN_PORT [2: with mcring2's own keys]
  printf 'pool:\n  listen: 127.0.0.1:%s\n' "$1"
  servers_yaml
  # Workload 6 opens more clients than mcring's default cap (1024, memcached's -c); nutcracker
  # has none. A --mcring-key client_connections=N given wins.
  case " ${MCRING_KEYS[*]} " in
    *" client_connections="*) ;;
    *) printf '  client_connections: 0\n' ;;
  esac
  for kv in "${MCRING_KEYS[@]}"; do printf '  %s: %s\n' "${kv%%=*}" "${kv#*=}"; done
  if [ "${2:-}" = 2 ]; then
    for kv in "${MCRING2_KEYS[@]}"; do printf '  %s: %s\n' "${kv%%=*}" "${kv#*=}"; done
  fi
}
mcring_yaml "$PM" >"$WORK/mcring.yml"

"$NUTCRACKER" -c "$WORK/nutcracker.yml" -s "$PNS" -a 127.0.0.1 -o "$WORK/nutcracker.log" -v 4 &
NUT_PID=$!
PIDS+=("$NUT_PID")
NAME_OF[$NUT_PID]=nutcracker
MCRING_CMD=("$MCRING" -c "$WORK/mcring.yml" -s "$PMS" -a 127.0.0.1 -o "$WORK/mcring.log" "${MCRING_FLAGS[@]}")
"${MCRING_CMD[@]}" &
MC_PID=$!
PIDS+=("$MC_PID")
NAME_OF[$MC_PID]=mcring
wait_port "$PN" "$NUT_PID" || { echo "compare.sh: nutcracker did not start" >&2; cat "$WORK/nutcracker.log" >&2; exit 1; }
wait_port "$PM" "$MC_PID" || { echo "compare.sh: mcring did not start" >&2; cat "$WORK/mcring.log" >&2; exit 1; }
MC2_PID=""
MCRING2_CMD=()
if [ "$WITH_MCRING2" = 1 ]; then
  mcring_yaml "$PM2" 2 >"$WORK/mcring2.yml"
  MCRING2_CMD=("$MCRING" -c "$WORK/mcring2.yml" -s "$PMS2" -a 127.0.0.1 -o "$WORK/mcring2.log" "${MCRING2_FLAGS[@]}")
  "${MCRING2_CMD[@]}" &
  MC2_PID=$!
  PIDS+=("$MC2_PID")
  NAME_OF[$MC2_PID]=mcring2
  wait_port "$PM2" "$MC2_PID" || { echo "compare.sh: mcring2 did not start" >&2; cat "$WORK/mcring2.log" >&2; exit 1; }
fi

declare -A PORT_OF=([direct]=$PD [nutcracker]=$PN [mcring]=$PM [mcring2]=$PM2)
declare -A PID_OF=([direct]=$DIRECT_PID [nutcracker]=$NUT_PID [mcring]=$MC_PID [mcring2]=$MC2_PID)
TARGETS=()
[ "$WITH_DIRECT" = 1 ] && TARGETS+=(direct)
TARGETS+=(nutcracker mcring)
[ "$WITH_MCRING2" = 1 ] && TARGETS+=(mcring2)

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
backend_ticks() { echo $(($(cpu_ticks "$B1") + $(cpu_ticks "$B2") + $(cpu_ticks "$B3"))); }

# memcaslap's configs: key length, value length and command distributions (its -F format; cmd 0
# is set, 1 is get, each with its proportion).
memcaslap_cfg() {  # memcaslap_cfg SET_WEIGHT GET_WEIGHT
  python3 - "$1" "$2" <<'EOF'
import sys
s, g = int(sys.argv[1]), int(sys.argv[2])
print("key\n16 16 1\nvalue\n32 100 1\ncmd")
print(f"0 {s / (s + g):.6f}")
print(f"1 {g / (s + g):.6f}")
EOF
}
memcaslap_cfg "$SET_W" "$GET_W" >"$WORK/memcaslap.cfg"
memcaslap_cfg 0 1 >"$WORK/memcaslap-gets.cfg"

# The idle clients of workload 6: open N connections, one get on each, then "ready"; then every
# 100 ms a get on 10 random ones; exits after HOLD seconds at the latest (or when killed).
cat >"$WORK/idle_clients.py" <<'EOF'
import random, socket, sys, time
host, port, n, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
deadline = time.monotonic() + hold
socks = []
def ask(s, i):
    s.sendall(b"get idle:%08d\r\n" % i)
    buf = b""
    while not buf.endswith(b"END\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("idle_clients: connection closed")
        buf += chunk
for i in range(n):
    s = socket.create_connection((host, port), timeout=5)
    socks.append(s)
    ask(s, i)
    if time.monotonic() > deadline:
        raise SystemExit("idle_clients: out of time while connecting")
print("ready", len(socks), flush=True)
rng = random.Random(1)
while time.monotonic() < deadline:
    time.sleep(0.1)
    for i in rng.sample(range(n), 10):
        ask(socks[i], i)
EOF

# --- runs -----------------------------------------------------------------------------------
COMMON=(--quiet --json)
SMALL="--keys $KEYS --value-size 32-100"
workload_args() {  # mcring-bench load flags of a workload
  case "$1" in
    mix) echo "--workload mix --ratio $RATIO" ;;
    1) echo "$SMALL --connections 1 --pipeline 1 --ratio 0:1" ;;
    2) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1" ;;
    3) echo "$SMALL --connections 50 --pipeline 16 --ratio 1:9" ;;
    4) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1 --multiget 10" ;;
    5) echo "--keys $BIG_KEYS --key-prefix big: --value-size 16384 --connections 50 --pipeline 1 --ratio 1:9" ;;
    6) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1" ;;
  esac
}
memcaslap_args() {  # memcaslap flags of a workload (the server is added by run_one)
  local args="-T 1 -c $MS_CONNS -w $MS_WINDOW -t ${DURATION}s -S ${DURATION}s"
  case "$1" in
    ms-mix) echo "-F $WORK/memcaslap.cfg $args" ;;
    ms-mget) echo "-F $WORK/memcaslap.cfg $args -d 10" ;;
    ms-gets) echo "-F $WORK/memcaslap-gets.cfg $args" ;;
  esac
}

# start_idle_clients TARGET SECONDS: IDLE_CONNS connections to TARGET (one get each), kept open
# for SECONDS in the background (IDLE_PID); returns once they are all open.
start_idle_clients() {
  local target=$1 seconds=$2
  python3 "$WORK/idle_clients.py" 127.0.0.1 "${PORT_OF[$target]}" "$IDLE_CONNS" "$seconds" \
    >"$WORK/idle.out" 2>"$WORK/idle.err" &
  IDLE_PID=$!
  for _ in $(seq 600); do
    grep -q ready "$WORK/idle.out" 2>/dev/null && break
    kill -0 "$IDLE_PID" 2>/dev/null || break
    sleep 0.1
  done
  grep -q ready "$WORK/idle.out" || { echo "compare.sh: idle clients failed on $target:" >&2; cat "$WORK/idle.err" >&2; exit 1; }
}

# Memory of idle connections (workload 6), on fresh processes (before any traffic has grown their
# heaps, so that the growth is not hidden in memory they already keep): RSS with IDLE_CONNS
# connections open (one get each) minus RSS before.
printf 'target\trss_before_kb\trss_with_kb\n' >"$WORK/idle_memory.tsv"
if has_workload 6; then
  for target in "${TARGETS[@]}"; do
    pid=${PID_OF[$target]}
    before=$(rss_kb "$pid")
    start_idle_clients "$target" 60
    printf '%s\t%s\t%s\n' "$target" "$before" "$(rss_kb "$pid")" >>"$WORK/idle_memory.tsv"
    kill "$IDLE_PID" 2>/dev/null || true
    wait "$IDLE_PID" 2>/dev/null || true
    IDLE_PID=""
  done
fi

# mcring-bench's keys, warmed once through mcring (the pool) and into direct. memcaslap warms
# nothing: it only gets keys it set itself in the same run.
warm_ports=("$PM")
[ "$WITH_DIRECT" = 1 ] && warm_ports+=("$PD")
warm_sets=()
for w in 1 2 3 4 6 mix; do has_workload "$w" && { warm_sets+=(2); break; }; done
has_workload 5 && warm_sets+=(5)
if [ ${#warm_sets[@]} -gt 0 ]; then
  echo "warming mcring-bench keys ($KEYS of 32-100 B$(has_workload 5 && echo ", $BIG_KEYS of 16 KiB")) via mcring${DIRECT_PID:+ and direct}" >&2
  for port in "${warm_ports[@]}"; do
    for w in "${warm_sets[@]}"; do
      # shellcheck disable=SC2046
      timeout -k 5 300 "$BENCH" load --server "127.0.0.1:$port" --warm --requests 1 \
        $(workload_args "$w") "${COMMON[@]}" >/dev/null
    done
  done
fi

printf 'round\tworkload\ttarget\tcpu_ticks\trss_kb\trss_idle_kb\tloadavg\tout\tbackend_ticks\tgen_ticks\n' >"$WORK/runs.tsv"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)
run_one() {  # run_one ROUND WORKLOAD TARGET
  local round=$1 w=$2 target=$3
  local port=${PORT_OF[$target]} pid=${PID_OF[$target]}
  local out="$WORK/r${round}-w${w}-${target}.out" rss_idle=""
  kill -0 "$pid" 2>/dev/null || { echo "compare.sh: $target (pid $pid) died" >&2; exit 1; }
  if [ "$w" = 6 ]; then
    rss_idle=$(rss_kb "$pid")
    start_idle_clients "$target" $((DURATION + 60))
  fi
  local c0 c1 b0 b1 gen_ticks
  c0=$(cpu_ticks "$pid")
  b0=$(backend_ticks)
  # The generator runs in a subshell that waits for it, so that the subshell's cutime + cstime
  # (fields 16 and 17 of /proc/PID/stat) is the generator's CPU once it has exited.
  local bin=()
  [[ "$w" == bin-* ]] && bin=(--binary)
  gen_ticks=$(
    case "$w" in
      cs-mix | bin-mix)
        t0=$(date +%s%N)
        timeout -k 5 $((4 * DURATION + 60)) "${GENERATOR_PREFIX[@]}" "$MEMCSLAP" --servers="127.0.0.1:$port" \
          --test=get --concurrency=$CS_GET_CONNS --execute-number="$CS_NUMBER" --tcp-nodelay "${bin[@]}" \
          >"$out.get" 2>"$out.get.err" &
        g=$!
        s=""
        if [ "$SET_W" -gt 0 ]; then
          timeout -k 5 $((4 * DURATION + 60)) "${GENERATOR_PREFIX[@]}" "$MEMCSLAP" --servers="127.0.0.1:$port" \
            --test=set --concurrency=$CS_SET_CONNS --execute-number="$CS_SET_NUMBER" --tcp-nodelay "${bin[@]}" \
            >"$out.set" 2>"$out.set.err" &
          s=$!
        fi
        wait $g $s || true
        echo "wall_ns $(($(date +%s%N) - t0)) get_conns $CS_GET_CONNS number $CS_NUMBER set_conns $CS_SET_CONNS set_number $CS_SET_NUMBER set_weight $SET_W" >"$out" ;;
      cs-gets | bin-gets)
        timeout -k 5 $((4 * DURATION + 60)) "${GENERATOR_PREFIX[@]}" "$MEMCSLAP" --servers="127.0.0.1:$port" \
          --test=get --concurrency=50 --execute-number="$CS_NUMBER" --tcp-nodelay "${bin[@]}" >"$out.get" 2>"$out.get.err" || true
        echo "get_conns 50 number $CS_NUMBER" >"$out" ;;
      ms-*)
        # shellcheck disable=SC2046
        timeout -k 5 $((DURATION + 30)) "${GENERATOR_PREFIX[@]}" "$MEMCASLAP" -s "127.0.0.1:$port" \
          $(memcaslap_args "$w") >"$out" 2>"$out.err" || true ;;
      *)
        # shellcheck disable=SC2046
        timeout -k 5 $((DURATION + 30)) "${GENERATOR_PREFIX[@]}" "$BENCH" load --server "127.0.0.1:$port" \
          --duration "$DURATION" --server-pid "$pid" "${COMMON[@]}" $(workload_args "$w") >"$out" 2>"$out.err" || true ;;
    esac
    # Read by the subshell itself (a pipeline's $BASHPID would be the reader's own).
    read -r stat <"/proc/$BASHPID/stat"
    read -r -a fields <<<"${stat##*) }"
    echo $((fields[13] + fields[14]))
  )
  c1=$(cpu_ticks "$pid")
  b1=$(backend_ticks)
  [ "$target" = direct ] && b1=$b0  # direct does not use them
  local rss
  rss=$(rss_kb "$pid")
  if [ "$w" = 6 ]; then
    kill "$IDLE_PID" 2>/dev/null || true
    wait "$IDLE_PID" 2>/dev/null || true
    IDLE_PID=""
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$w" "$target" $((c1 - c0)) "$rss" \
    "$rss_idle" "$(cut -d' ' -f1 /proc/loadavg)" "$out" $((b1 - b0)) "$gen_ticks" >>"$WORK/runs.tsv"
}
NT=${#TARGETS[@]}
for ((round = 1; round <= ROUNDS; round++)); do
  for w in "${WL[@]}"; do
    order=()
    for ((i = 0; i < NT; i++)); do order+=("${TARGETS[$(((i + round - 1) % NT))]}"); done
    for target in "${order[@]}"; do
      [[ "$w" == bin-* && "$target" == nutcracker ]] && continue  # it refuses the binary protocol
      echo "round $round/$ROUNDS workload $w: $target" >&2
      run_one "$round" "$w" "$target"
    done
  done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ---------------------------------------------------------------------------------
python3 - "$WORK/runs.tsv" "$TCK" "$WORK/idle_memory.tsv" "$IDLE_CONNS" "$DURATION" "$RATIO" <<'EOF'
import csv, json, math, re, statistics, sys
runs_file, tck, idle_file, idle_conns, duration, ratio = sys.argv[1:7]
tck, idle_conns, duration = int(tck), int(idle_conns), float(duration)
idle_mib = {r["target"]: (int(r["rss_with_kb"]) - int(r["rss_before_kb"])) / 1024
            for r in csv.DictReader(open(idle_file), delimiter="\t")}
names = {"mix": f"mix: 50 conns, set:get {ratio} (mcring-bench)",
         "1": "1 latency (1 conn, gets)", "2": "2 throughput (50 conns, gets)",
         "3": "3 pipelined (50 x 16, 90/10)", "4": "4 multiget (50 conns, 10 keys)",
         "5": "5 large (50 conns, 16 KiB, 90/10)", "6": "6 many clients (2000 idle + 50)",
         "cs-mix": f"cs-mix: 48 get + 2 set conns, {ratio} by count (memcslap)",
         "cs-gets": "cs-gets: 50 conns, gets (memcslap)",
         "bin-mix": f"bin-mix: cs-mix in the binary protocol (memcslap --binary)",
         "bin-gets": "bin-gets: cs-gets in the binary protocol (memcslap --binary)",
         "ms-mix": f"ms-mix: 50 conns, set:get {ratio} (memcaslap)",
         "ms-mget": f"ms-mget: 50 conns, {ratio}, 10-key gets (memcaslap)",
         "ms-gets": "ms-gets: 50 conns, gets (memcaslap)"}

def log2_percentile(dist, q):
    """memaslap's Log2 Dist: dist[i] counts latencies in (2^(i-1), 2^i] us. The q-th percentile,
    interpolated geometrically inside its bucket (so within a factor of 2 of the truth)."""
    total = sum(dist.values())
    if total == 0:
        return None
    rank = q / 100 * total
    seen = 0
    for i in sorted(dist):
        n = dist[i]
        if n and seen + n >= rank:
            frac = (rank - seen) / n
            lo = 2 ** (i - 1) if i > 0 else 0.5
            return lo * 2 ** frac
        seen += n
    return float(2 ** max(dist))

def parse_memcaslap(path):
    """The numbers of one memcaslap run, in the shape of mcring-bench's JSON (what is known)."""
    text = open(path, errors="replace").read()
    m = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", text)
    if not m:
        return None
    run_s, ops = float(m.group(1)), int(m.group(2))
    r = {"replies": ops, "ops_per_sec": ops / run_s if run_s > 0 else 0, "errors": {"total": 0}}
    counts = dict(re.findall(r"^(cmd_get|cmd_set|get_misses): (\d+)", text, re.M))
    gets, misses = int(counts.get("cmd_get", 0)), int(counts.get("get_misses", 0))
    r["hit_ratio"] = 1 - misses / gets if gets else None
    r["gets"], r["sets"] = gets, int(counts.get("cmd_set", 0))
    # The final "Total Statistics (N events)" block (gets and sets together).
    block = re.search(r"^Total Statistics \((\d+) events\)\n(.*?)\n\n", text, re.M | re.S)
    lat = {}
    if block:
        body = block.group(2)
        avg = re.search(r"Avg:\s+(\d+)", body)
        dist = {}
        rows = re.findall(r"^\s+(\d+):((?:\s+\d+)+)\s*$", body.split("Log2 Dist:")[-1], re.M)
        for start, counts_text in rows:
            for k, n in enumerate(counts_text.split()):
                dist[int(start) + k] = int(n)
        lat = {"p50": log2_percentile(dist, 50), "p99": log2_percentile(dist, 99),
               "p999": log2_percentile(dist, 99.9), "avg": float(avg.group(1)) if avg else None}
    r["latency_us"] = lat
    # Lines memcaslap prints when something failed (a set not stored, a server error).
    # and anything on its stderr.
    try:
        err_lines = [l for l in open(path + ".err", errors="replace") if l.strip()]
    except OSError:
        err_lines = []
    r["errors"]["total"] = len(re.findall(r"didn't set success|[Ee]rror", text)) + len(err_lines)
    return r

def err_count(path):
    try:
        return sum(1 for l in open(path, errors="replace") if l.strip())
    except OSError:
        return 0

def parse_memcslap(path, workload):
    """A cs-* run: the get instance's (and the set instance's) reports, and the wall time."""
    meta = open(path).read().split()
    meta = dict(zip(meta[::2], map(int, meta[1::2])))
    n, gc = meta["number"], meta["get_conns"]
    gtext = open(path + ".get", errors="replace").read()
    load = re.search(r"Time to set\s+(\d+) keys:\s+([\d.]+) seconds", gtext)
    gets = re.search(r"Time to get\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds", gtext)
    if not (load and gets):
        return None
    loaded, retrieved, get_s = int(load.group(1)), int(gets.group(1)), float(gets.group(3))
    asked = gc * n
    errors = (n - loaded) + err_count(path + ".get.err")
    sets_done, sets_asked = loaded, n
    if workload in ("cs-mix", "bin-mix") and meta.get("set_weight", 0) > 0:
        stext = open(path + ".set", errors="replace").read()
        sm = re.search(r"Time to set\s+(\d+) keys by\s+(\d+) threads:\s+([\d.]+) seconds", stext)
        if not sm:
            return None
        sets_done += int(sm.group(1))
        sets_asked += meta["set_conns"] * meta["set_number"]
        errors += meta["set_conns"] * meta["set_number"] - int(sm.group(1)) + err_count(path + ".set.err")
    requests = asked + sets_asked
    if workload in ("cs-mix", "bin-mix"):
        ops = requests / (meta["wall_ns"] / 1e9)
    else:
        ops = asked / get_s if get_s > 0 else 0
    return {"replies": requests, "ops_per_sec": ops, "hit_ratio": retrieved / asked if asked else None,
            "errors": {"total": errors}, "latency_us": {}, "gets": asked, "sets": sets_done}

rows = {}
for r in csv.DictReader(open(runs_file), delimiter="\t"):
    j = None
    try:
        if r["workload"].startswith(("cs-", "bin-")):
            j = parse_memcslap(r["out"], r["workload"])
        elif r["workload"].startswith("ms-"):
            j = parse_memcaslap(r["out"])
        else:
            j = json.load(open(r["out"]))
    except Exception:
        j = None
    rows.setdefault((r["workload"], r["target"]), []).append((r, j))

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None

summary = {}
for (w, t), lst in rows.items():
    ok = [(r, j) for r, j in lst if j and j.get("replies", 0) > 0]
    s = {"runs": len(lst), "ok": len(ok)}
    s["ops"] = med([j["ops_per_sec"] for r, j in ok])
    s["by_round"] = {r["round"]: j["ops_per_sec"] for r, j in ok}
    for p in ("p50", "p99", "p999", "avg"):
        s[p] = med([j["latency_us"].get(p) for r, j in ok])
    s["cpu_us"] = med([int(r["cpu_ticks"]) / tck / j["replies"] * 1e6 for r, j in ok])
    s["be_us"] = (med([int(r["backend_ticks"]) / tck / j["replies"] * 1e6 for r, j in ok])
                  if t != "direct" else None)
    # % of one core over the run; a cs-* run lasts as long as its count takes, so per request.
    s["gen_pct"] = med([int(r["gen_ticks"]) / tck / (j["replies"] / j["ops_per_sec"]) * 100
                        if w in ("cs-mix", "bin-mix") else int(r["gen_ticks"]) / tck / duration * 100
                        for r, j in ok if j["ops_per_sec"]]) if w not in ("cs-gets", "bin-gets") else None
    s["hit"] = med([j.get("hit_ratio") for r, j in ok])
    s["errors"] = sum(j["errors"]["total"] for r, j in ok) + (len(lst) - len(ok))
    if w == "6":
        s["rss"] = idle_mib.get(t)  # fresh process, see idle_memory.tsv
        s["rss_abs"] = med([int(r["rss_kb"]) / 1024 for r, j in ok])
    else:
        s["rss"] = med([int(r["rss_kb"]) / 1024 for r, j in ok])
    summary[(w, t)] = s

def f(x, nd=1):
    if x is None:
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"

order = ["mix", "cs-mix", "bin-mix", "ms-mix", "4", "ms-mget", "3", "2", "cs-gets", "bin-gets", "ms-gets",
         "1", "5", "6"]
workloads = [w for w in order if any(k[0] == w for k in summary)]
targets = [t for t in ["direct", "nutcracker", "mcring", "mcring2"] if any(k[1] == t for k in summary)]
print("| workload | target | ops/s | p50 µs | p99 µs | p99.9 µs | avg µs | server CPU µs / req | backends CPU µs / req | generator CPU % core | RSS MiB | hit ratio | errors |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in workloads:
    for t in targets:
        s = summary.get((w, t))
        if not s:
            continue
        if w == "6" and s["rss"] is not None:
            rss = f"+{f(s['rss'])} fresh ({s['rss'] * 1024 / idle_conns:.2f} KiB/conn); {f(s['rss_abs'])} in all"
        else:
            rss = f(s["rss"])
        approx = "≈" if w.startswith("ms-") else ""
        lat = [approx + f(s[p]) if s[p] is not None else "-" for p in ("p50", "p99", "p999")]
        print(f"| {names[w]} | {t} | {f(s['ops'])} | {lat[0]} | {lat[1]} | {lat[2]} | {f(s['avg'])} | "
              f"{f(s['cpu_us'], 2)} | {f(s['be_us'], 2)} | {f(s['gen_pct'], 0)} | {rss} | "
              f"{f(s['hit'], 3)} | {s['errors']} |")
print()

def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "-"
mcrings = [t for t in ("mcring", "mcring2") if t in targets]
for m in mcrings:
    label = "M" if m == "mcring" else "M2"
    print(f"{m} / nutcracker{' and / direct' if 'direct' in targets else ''} (ratios of the medians; ops/s: higher is better for {m}, the rest: lower is)")
    print()
    head = ["ops/s {0}/N", "ops/s {0}/N per round", "p50 {0}/N", "p99 {0}/N", "avg {0}/N",
            "CPU/req {0}/N", "backends CPU {0}/N", "RSS {0}/N"]
    if "direct" in targets:
        head += ["ops/s {0}/D", "p99 {0}/D", "CPU/req {0}/D"]
    print("| workload | " + " | ".join(h.format(label) for h in head) + " |")
    print("|---|" + "---:|" * len(head))
    for w in workloads:
        d, n, x = (summary.get((w, t), {}) for t in ("direct", "nutcracker", m))
        rounds = sorted(set(x.get("by_round", {})) & set(n.get("by_round", {})), key=int)
        per_round = " ".join(ratio(x["by_round"][k], n["by_round"][k]) for k in rounds) or "-"
        cells = [ratio(x.get("ops"), n.get("ops")), per_round, ratio(x.get("p50"), n.get("p50")),
                 ratio(x.get("p99"), n.get("p99")), ratio(x.get("avg"), n.get("avg")),
                 ratio(x.get("cpu_us"), n.get("cpu_us")), ratio(x.get("be_us"), n.get("be_us")),
                 ratio(x.get("rss"), n.get("rss"))]
        if "direct" in targets:
            cells += [ratio(x.get("ops"), d.get("ops")), ratio(x.get("p99"), d.get("p99")),
                      ratio(x.get("cpu_us"), d.get("cpu_us"))]
        print(f"| {names[w]} | " + " | ".join(cells) + " |")
    print()
if "mcring2" in targets:
    print("mcring2 / mcring (ratios of the medians)")
    print()
    print("| workload | ops/s | ops/s per round | p99 | avg | CPU/req |")
    print("|---|---:|---:|---:|---:|---:|")
    for w in workloads:
        a, b = summary.get((w, "mcring"), {}), summary.get((w, "mcring2"), {})
        rounds = sorted(set(a.get("by_round", {})) & set(b.get("by_round", {})), key=int)
        per_round = " ".join(ratio(b["by_round"][k], a["by_round"][k]) for k in rounds) or "-"
        print(f"| {names[w]} | {ratio(b.get('ops'), a.get('ops'))} | {per_round} | {ratio(b.get('p99'), a.get('p99'))} | "
              f"{ratio(b.get('avg'), a.get('avg'))} | {ratio(b.get('cpu_us'), a.get('cpu_us'))} |")
    print()
EOF
echo "$ROUNDS rounds x ${DURATION} s per run, order rotated each round; medians. $(nproc) CPUs;" \
  "load average $LOAD_START at start, $LOAD_END at end; $(( $(date +%s) - START )) s."
echo "mcring: ${MCRING_CMD[*]##*/} ($($MCRING -V 2>&1 | head -1))${MCRING_KEYS[*]:+; pool keys ${MCRING_KEYS[*]}}"
[ "$WITH_MCRING2" = 1 ] && echo "mcring2: ${MCRING2_CMD[*]##*/}${MCRING2_KEYS[*]:+; pool keys ${MCRING2_KEYS[*]}}"
echo "$("$NUTCRACKER" -V 2>&1 | head -1); $("$MEMCACHED" -V); $("$MEMCSLAP" -V 2>&1 | head -1) (memcslap, cs-*: N = $CS_NUMBER, M = $CS_SET_NUMBER);" \
  "backends memcached -t 1${DIRECT_PID:+; direct = a 4th memcached -t 1 holding all keys}${PIN_GENERATOR:+; generators pinned to CPU $PIN_GENERATOR}."
echo "server CPU = the proxy process (for direct: that memcached), utime+stime from /proc/PID/stat" \
  "around the generator run, per request the generator completed (memcaslap: its Ops, a 10-key get" \
  "counting as one; memcslap: every request of both instances, its get instance's load included); ≈ = memcaslap's latency percentiles, from its log2 histogram (buckets (2^(i-1), 2^i] µs)," \
  "interpolated inside the bucket, so only within a factor of 2; its avg is exact. RSS after the run."
