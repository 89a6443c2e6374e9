#!/usr/bin/env bash
# Proxy comparison: the same workloads against memcached directly, twemproxy (nutcracker) and
# mcring, on the same three memcached backends, interleaved and repeated; prints a markdown table
# of medians and mcring's ratios to the other two.
#
# usage: bench/compare.sh [--rounds N] [--duration S] [--quick] [--mcring-threads N]
#                         [--mcring-key K=V] [--pin-generator CPU] [--build DIR]
#                         [--workloads LIST] [--out DIR]
#   --rounds N          rounds (default 5); each runs every workload against every target, in an
#                       order rotated by one each round (D N M, N M D, M D N, ...)
#   --duration S        seconds per run (default 5)
#   --quick             smoke run: 1 round, 3 s per run
#   --mcring-threads N  mcring worker threads (default 1: nutcracker has one event loop)
#   --mcring-key K=V    add `K: V` to mcring's pool (repeatable), e.g. coalesce_gets=false
#   --pin-generator CPU run the load generator on that CPU only (taskset), to see whether mcring's
#                       threads scale when the generator does not compete with them for every core
#   --build DIR         where mcring and mcring-bench are (default build-perf; built if missing)
#   --workloads LIST    comma-separated subset of 1..6, run in that order each round (default all)
#   --out DIR           keep the raw results (one JSON per run, runs.tsv, logs) in DIR
#
# Setup: three memcached backends (-t 1 each) behind nutcracker and mcring with equivalent
# configs (ketama, fnv1a_64, same server order, timeout 1000, one connection per backend per
# worker). "direct" is a 4th memcached (-t 1) warmed with the same keys, so it holds what the
# three backends hold together. Keys are warmed once (through mcring for the pool: mcring and
# nutcracker route alike, which the hit ratio column checks).
#
# Workloads (mcring-bench load; values 32-100 B over 100000 keys unless said):
#   1 latency     1 connection, no pipelining, gets
#   2 throughput  50 connections, gets, no pipelining
#   3 pipelined   50 connections, 16 deep, 90% get / 10% set
#   4 multiget    50 connections, `get` of 10 keys
#   5 large       50 connections, 16 KiB values, 90/10, over 20000 other keys ("big:...")
#   6 many        2000 mostly idle connections (a python helper: one get each at open, then 10
#                 random ones every 100 ms) + 50 active connections as in 2
#
# Per run: the generator's JSON; the target process's CPU (utime + stime from /proc/PID/stat,
# before/after) and the three backends' together (for the proxies: what a request costs the
# memcached servers behind them); its RSS after the run. The target process is the proxy, or for "direct" the
# memcached itself. Memory per idle connection is measured once, on the fresh processes before
# warming: RSS with 2000 connections open (one get each) minus RSS before; a process that has
# already served traffic keeps freed memory and would hide it.
# Everything started here is stopped by PID on exit; every run is bounded by --duration (plus a
# hard `timeout`).
set -euo pipefail

cd "$(dirname "$0")/.."

ROUNDS=5
DURATION=5
MCRING_THREADS=1
PIN_GENERATOR=""
MCRING_KEYS=()
BUILD=build-perf
WORKLOADS=1,2,3,4,5,6
OUT=""
usage() { awk 'NR >= 6 && /^#$/ {exit} NR >= 6' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --quick) ROUNDS=1; DURATION=3; shift ;;
    --mcring-threads) MCRING_THREADS=$2; shift 2 ;;
    --pin-generator) PIN_GENERATOR=$2; shift 2 ;;
    --mcring-key)
      [[ "$2" =~ ^[a-z_]+=[A-Za-z0-9_.:-]+$ ]] || { echo "compare.sh: --mcring-key wants KEY=VALUE" >&2; exit 2; }
      MCRING_KEYS+=("$2"); shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for v in "$ROUNDS" "$DURATION" "$MCRING_THREADS"; do
  [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] || { echo "compare.sh: bad number '$v'" >&2; exit 2; }
done
[ "$ROUNDS" -le 50 ] && [ "$DURATION" -le 600 ] || { echo "compare.sh: at most 50 rounds of 600 s" >&2; exit 2; }
GENERATOR_PREFIX=()
if [ -n "$PIN_GENERATOR" ]; then
  [[ "$PIN_GENERATOR" =~ ^[0-9]+$ ]] || { echo "compare.sh: bad CPU '$PIN_GENERATOR'" >&2; exit 2; }
  GENERATOR_PREFIX=(taskset -c "$PIN_GENERATOR")
fi

KEYS=100000
BIG_KEYS=20000
IDLE_CONNS=2000

# --- tools ----------------------------------------------------------------------------------
NUTCRACKER=$(command -v nutcracker || true)
[ -z "$NUTCRACKER" ] && [ -x /usr/sbin/nutcracker ] && NUTCRACKER=/usr/sbin/nutcracker
if [ -z "$NUTCRACKER" ]; then
  packaging/deps.sh bench
  NUTCRACKER=$(command -v nutcracker || echo /usr/sbin/nutcracker)
fi
MEMCACHED=$(command -v memcached || echo /usr/bin/memcached)
for t in "$NUTCRACKER" "$MEMCACHED"; do
  [ -x "$t" ] || { echo "compare.sh: $t missing (packaging/deps.sh bench)" >&2; exit 1; }
done
MCRING=$BUILD/mcring
BENCH=$BUILD/mcring-bench
if [ ! -x "$MCRING" ] || [ ! -x "$BENCH" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD" --target mcring mcring-bench -j2 >/dev/null
fi
MCRING=$(realpath "$MCRING")
BENCH=$(realpath "$BENCH")
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
read -r P1 P2 P3 PD PN PM PNS < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(7)]
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

start_memcached() {  # start_memcached PORT MB VAR: sets VAR to the PID
  "$MEMCACHED" -u root -l 127.0.0.1 -p "$1" -U 0 -t 1 -m "$2" -c 4096 >"$WORK/memcached.$1.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  NAME_OF[$pid]="memcached :$1"
  wait_port "$1" "$pid" || { echo "compare.sh: memcached on $1 did not start" >&2; exit 1; }
  printf -v "$3" '%s' "$pid"
}

start_memcached "$P1" 512 B1
start_memcached "$P2" 512 B2
start_memcached "$P3" 512 B3
start_memcached "$PD" 1024 DIRECT_PID

pool_yaml() {  # pool_yaml LISTEN_PORT
  cat <<EOF
pool:
  listen: 127.0.0.1:$1
  hash: fnv1a_64
  distribution: ketama
  timeout: 1000
  backlog: 1024
  preconnect: true
  auto_eject_hosts: false
  server_connections: 1
  servers:
    - 127.0.0.1:$P1:1
    - 127.0.0.1:$P2:1
    - 127.0.0.1:$P3:1
EOF
}
pool_yaml "$PN" >"$WORK/nutcracker.yml"
pool_yaml "$PM" >"$WORK/mcring.yml"
for kv in "${MCRING_KEYS[@]}"; do
  printf '  %s: %s\n' "${kv%%=*}" "${kv#*=}" >>"$WORK/mcring.yml"
done

"$NUTCRACKER" -c "$WORK/nutcracker.yml" -s "$PNS" -a 127.0.0.1 -o "$WORK/nutcracker.log" -v 4 &
NUT_PID=$!
PIDS+=("$NUT_PID")
NAME_OF[$NUT_PID]=nutcracker
"$MCRING" -c "$WORK/mcring.yml" --threads "$MCRING_THREADS" -s 0 -o "$WORK/mcring.log" -v 1 &
MC_PID=$!
PIDS+=("$MC_PID")
NAME_OF[$MC_PID]=mcring
wait_port "$PN" "$NUT_PID" || { echo "compare.sh: nutcracker did not start" >&2; cat "$WORK/nutcracker.log" >&2; exit 1; }
wait_port "$PM" "$MC_PID" || { echo "compare.sh: mcring did not start" >&2; cat "$WORK/mcring.log" >&2; exit 1; }

declare -A PORT_OF=([direct]=$PD [nutcracker]=$PN [mcring]=$PM)
declare -A PID_OF=([direct]=$DIRECT_PID [nutcracker]=$NUT_PID [mcring]=$MC_PID)

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
backend_ticks() { echo $(($(cpu_ticks "$B1") + $(cpu_ticks "$B2") + $(cpu_ticks "$B3"))); }

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
workload_args() {
  case "$1" in
    1) echo "$SMALL --connections 1 --pipeline 1 --ratio 0:1" ;;
    2) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1" ;;
    3) echo "$SMALL --connections 50 --pipeline 16 --ratio 1:9" ;;
    4) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1 --multiget 10" ;;
    5) echo "--keys $BIG_KEYS --key-prefix big: --value-size 16384 --connections 50 --pipeline 1 --ratio 1:9" ;;
    6) echo "$SMALL --connections 50 --pipeline 1 --ratio 0:1" ;;
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

# Memory of idle connections, on fresh processes (before any traffic has grown their heaps, so
# that the growth is not hidden in memory they already keep): RSS with IDLE_CONNS connections
# open (one get each) minus RSS before.
printf 'target\trss_before_kb\trss_with_kb\n' >"$WORK/idle_memory.tsv"
for target in direct nutcracker mcring; do
  pid=${PID_OF[$target]}
  before=$(rss_kb "$pid")
  start_idle_clients "$target" 60
  printf '%s\t%s\t%s\n' "$target" "$before" "$(rss_kb "$pid")" >>"$WORK/idle_memory.tsv"
  kill "$IDLE_PID" 2>/dev/null || true
  wait "$IDLE_PID" 2>/dev/null || true
  IDLE_PID=""
done

echo "warming: $KEYS keys (32-100 B) and $BIG_KEYS keys (16 KiB) via mcring (pool) and direct" >&2
for port in "$PM" "$PD"; do
  for w in 2 5; do
    # shellcheck disable=SC2046
    timeout -k 5 300 "$BENCH" load --server "127.0.0.1:$port" --warm --requests 1 \
      $(workload_args "$w") "${COMMON[@]}" >/dev/null
  done
done

printf 'round\tworkload\ttarget\tcpu_ticks\trss_kb\trss_idle_kb\tloadavg\tjson\tbackend_ticks\n' >"$WORK/runs.tsv"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)
TARGETS=(direct nutcracker mcring)
IFS=, read -r -a WL <<<"$WORKLOADS"
run_one() {  # run_one ROUND WORKLOAD TARGET
  local round=$1 w=$2 target=$3
  local port=${PORT_OF[$target]} pid=${PID_OF[$target]}
  local json="$WORK/r${round}-w${w}-${target}.json" rss_idle=""
  kill -0 "$pid" 2>/dev/null || { echo "compare.sh: $target (pid $pid) died" >&2; exit 1; }
  if [ "$w" = 6 ]; then
    rss_idle=$(rss_kb "$pid")
    start_idle_clients "$target" $((DURATION + 60))
  fi
  local c0 c1 b0 b1
  c0=$(cpu_ticks "$pid")
  b0=$(backend_ticks)
  # shellcheck disable=SC2046
  timeout -k 5 $((DURATION + 30)) "${GENERATOR_PREFIX[@]}" "$BENCH" load --server "127.0.0.1:$port" \
    --duration "$DURATION" "${COMMON[@]}" $(workload_args "$w") >"$json" 2>"$json.err" || true
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
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$w" "$target" $((c1 - c0)) "$rss" \
    "$rss_idle" "$(cut -d' ' -f1 /proc/loadavg)" "$json" $((b1 - b0)) >>"$WORK/runs.tsv"
}
for ((round = 1; round <= ROUNDS; round++)); do
  for w in "${WL[@]}"; do
    order=()
    for i in 0 1 2; do order+=("${TARGETS[$(((i + round - 1) % 3))]}"); done
    for target in "${order[@]}"; do
      echo "round $round/$ROUNDS workload $w: $target" >&2
      run_one "$round" "$w" "$target"
    done
  done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ---------------------------------------------------------------------------------
python3 - "$WORK/runs.tsv" "$TCK" "$WORK/idle_memory.tsv" <<EOF
import csv, json, statistics, sys
runs_file, tck, idle_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
idle_mib = {r["target"]: (int(r["rss_with_kb"]) - int(r["rss_before_kb"])) / 1024
            for r in csv.DictReader(open(idle_file), delimiter="\t")}
names = {"1": "1 latency (1 conn, gets)", "2": "2 throughput (50 conns, gets)",
         "3": "3 pipelined (50 x 16, 90/10)", "4": "4 multiget (50 conns, 10 keys)",
         "5": "5 large (50 conns, 16 KiB, 90/10)", "6": "6 many clients (2000 idle + 50)"}
rows = {}
for r in csv.DictReader(open(runs_file), delimiter="\t"):
    try:
        j = json.load(open(r["json"]))
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
    for p in ("p50", "p99", "p999"):
        s[p] = med([j["latency_us"][p] for r, j in ok])
    s["cpu100k"] = med([int(r["cpu_ticks"]) / tck / j["replies"] * 1e5 for r, j in ok])
    s["be100k"] = (med([int(r["backend_ticks"]) / tck / j["replies"] * 1e5 for r, j in ok])
                   if t != "direct" else None)
    s["gen100k"] = med([j["cpu_seconds"] / j["replies"] * 1e5 for r, j in ok])
    s["genpct"] = med([j["cpu_percent"] for r, j in ok])
    s["hit"] = med([j["hit_ratio"] for r, j in ok])
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

targets = ["direct", "nutcracker", "mcring"]
print("| workload | target | ops/s | p50 µs | p99 µs | p99.9 µs | server CPU s / 100k req | backends CPU s / 100k req | generator CPU s / 100k req (% core) | RSS MiB | hit ratio | errors |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in sorted({w for w, t in summary}):
    for t in targets:
        s = summary.get((w, t))
        if not s:
            continue
        if w == "6" and s["rss"] is not None:
            rss = f"+{f(s['rss'])} fresh ({s['rss'] * 1024 / $IDLE_CONNS:.2f} KiB/conn); {f(s['rss_abs'])} in all"
        else:
            rss = f(s["rss"])
        print(f"| {names[w]} | {t} | {f(s['ops'])} | {f(s['p50'])} | {f(s['p99'])} | {f(s['p999'])} | "
              f"{f(s['cpu100k'], 3)} | {f(s['be100k'], 3)} | {f(s['gen100k'], 3)} ({f(s['genpct'], 0)}%) | {rss} | "
              f"{f(s['hit'], 3)} | {s['errors']} |")
print()
print("mcring / nutcracker and mcring / direct (ratios of the medians; ops/s: higher is better for mcring, the rest: lower is)")
print()
print("| workload | ops/s M/N | ops/s M/D | p50 M/N | p50 M/D | p99 M/N | p99 M/D | p99.9 M/N | p99.9 M/D | CPU/100k M/N | CPU/100k M/D | backends CPU M/N | RSS M/N | RSS M/D |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b not in (None, 0) else "-"
for w in sorted({w for w, t in summary}):
    d, n, m = (summary.get((w, t), {}) for t in targets)
    cells = []
    for k in ("ops", "p50", "p99", "p999", "cpu100k", "be100k", "rss"):
        cells += [ratio(m.get(k), n.get(k))] if k == "be100k" else \
            [ratio(m.get(k), n.get(k)), ratio(m.get(k), d.get(k))]
    print(f"| {names[w]} | " + " | ".join(cells) + " |")
EOF
echo
echo "$ROUNDS rounds x ${DURATION} s per run, order rotated each round; medians. $(nproc) CPUs;" \
  "load average $LOAD_START at start, $LOAD_END at end; $(( $(date +%s) - START )) s."
echo "mcring --threads $MCRING_THREADS${MCRING_KEYS[*]:+, pool keys ${MCRING_KEYS[*]}}${PIN_GENERATOR:+, load generator pinned to CPU $PIN_GENERATOR} ($($MCRING -V 2>&1 | head -1)); $("$NUTCRACKER" -V 2>&1 | head -1);" \
  "$("$MEMCACHED" -V); direct = a 4th memcached -t 1 holding all keys; backends memcached -t 1."
echo "server CPU = the proxy process (for direct: that memcached), utime+stime from /proc/PID/stat;" \
  "RSS after the run; workload 6: RSS growth for $IDLE_CONNS idle connections on the fresh process" \
  "(before warming), and RSS with them open during the runs."
