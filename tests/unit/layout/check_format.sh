#!/usr/bin/env bash
# Fails on any C++ file under proxy/ or config/ that deviates from the project's .clang-format,
# naming the files (clang-format's own diagnostics show where). Fix: clang-format -i <file>.
set -euo pipefail
root=${1:?usage: check_format.sh <project root>}
cd "$root"
if ! command -v clang-format >/dev/null; then
  echo "clang-format not installed (Debian: clang-format)" >&2
  exit 77
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- 'proxy/*.cc' 'proxy/*.h' 'config/*.cc' 'config/*.h')
else
  mapfile -t files < <(find proxy config -name '*.cc' -o -name '*.h' | sort)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "${#bad[@]} of ${#files[@]} files deviate from .clang-format:"
  printf '  %s\n' "${bad[@]}"
  clang-format --dry-run "${bad[0]}" 2>&1 | head -20
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
