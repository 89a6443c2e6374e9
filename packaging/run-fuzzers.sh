#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR for SECONDS each, starting from the committed
# seed corpus (tests/fuzz/corpus/<target>/, copied so the repository is not modified). Fails on
# any crash, leak or sanitizer report. Usage: packaging/run-fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/mcring-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT

targets=$(find "$build/tests/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x | sort)
if [ -z "$targets" ]; then
  echo "run-fuzzers: no fuzz targets in $build/tests/fuzz" >&2
  exit 1
fi
status=0
for t in $targets; do
  name=$(basename "$t")
  seeds="$root/tests/fuzz/corpus/${name#fuzz_}"
  corpus="$work/$name"
  mkdir -p "$corpus"
  [ -d "$seeds" ] && cp -r "$seeds/." "$corpus/"
  echo "== $name: ${seconds}s from $(ls "$corpus" | wc -l) seeds"
  if ! (cd "$work" && "$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
          -rss_limit_mb=2048 "$corpus" > "$work/$name.log" 2>&1); then
    status=1
    echo "!! $name failed:"
    tail -50 "$work/$name.log"
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$work/$name.log" | sed "s/^/   /"
done
exit $status
