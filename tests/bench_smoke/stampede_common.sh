# Sourced by the stampede smoke tests: a scratch directory, `run_stampede SECONDS ARGS...`
# (mcring-bench stampede with ARGS, bounded by timeout(1), its summary in $work/summary.json and
# its log in $work/stderr), and the check that every process it announced ("stampede: pid N
# started: CMD") is gone when it exits: anything left is stopped here, by PID, and fails the test.
# Needs $bench and $mcring; exits 77 (CTest's SKIP_RETURN_CODE) without memcached.

if [[ ! -x /usr/bin/memcached ]]; then
  echo "SKIP: /usr/bin/memcached not installed"
  exit 77
fi

work=$(mktemp -d /tmp/stampede-smoke-XXXXXX)
bench_pid=""

leftovers() {
  local leaked=0 pid
  [[ -f "$work/stderr" ]] || return 0
  while read -r pid; do
    if kill -0 "$pid" 2>/dev/null && grep -qaE 'memcached|mcring|nutcracker' "/proc/$pid/cmdline" 2>/dev/null; then
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

# Bounded three times: the run's own --before/--after, and timeout(1) (INT, then KILL).
run_stampede() {
  local seconds=$1 status=0
  shift
  timeout -s INT -k 20 "$seconds" "$bench" stampede --mcring "$mcring" --out "$work/results" \
    --json "$@" >"$work/summary.json" 2>"$work/stderr" &
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
}
