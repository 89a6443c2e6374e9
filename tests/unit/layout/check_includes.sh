#!/usr/bin/env bash
# Checks the module graph include by include (ctest unit_layout): every file under proxy/<module>/
# and config/ may include headers of its own module and of the modules the table below allows,
# nothing else of ours; <event2/...> (libevent) only in proxy/net, <yaml-cpp/...> only in config.
# The table is the dependency comment of the top-level CMakeLists.txt, and proxy/CMakeLists.txt
# links the same graph.
#
# Usage: check_includes.sh <source root>
set -euo pipefail
root=${1:?usage: check_includes.sh <source root>}
cd "$root"

# module -> modules it may include (besides itself). Modules are directories under proxy/, plus
# config (config/) and main (proxy/main.cc, which wires everything).
declare -A allowed=(
  [common]=""
  [protocol]="common"
  [routing]="common"
  [stats]="common"
  [config]="routing common"
  [net]="protocol common"
  [backend]="net protocol routing stats config common"
  [dispatch]="backend net protocol routing stats config common"
  [session]="dispatch backend net protocol routing stats config common"
  [admin]="backend net protocol routing stats config common"
  [control]="session dispatch backend admin net protocol routing stats config common"
  [cli]="config routing protocol stats common"
  [main]="control session dispatch backend admin cli net protocol routing stats config common"
)
rule="dependencies point one way: protocol, routing, stats -> common only; config -> routing;"
rule+=" session -> dispatch -> backend -> net; admin reads backend/stats/config;"
rule+=" control wires all (top-level CMakeLists.txt)"

failures=0
fail() {
  echo "LAYOUT: $*" >&2
  failures=$((failures + 1))
}

module_of() {  # path -> module name
  case "$1" in
    config/*) echo config ;;
    proxy/main.cc) echo main ;;
    proxy/*/*) local rest=${1#proxy/}; echo "${rest%%/*}" ;;
    *) echo "" ;;
  esac
}

files=$( (find proxy config -type f \( -name '*.h' -o -name '*.cc' -o -name '*.h.in' \) | sort) )
for file in $files; do
  mod=$(module_of "$file")
  if [[ -z "$mod" ]]; then
    continue
  fi
  if [[ -z "${allowed[$mod]+set}" ]]; then
    fail "$file: module '$mod' has no row in the table of tests/unit/layout/check_includes.sh" \
         "(a new module needs a place in the dependency graph)"
    continue
  fi
  while IFS=: read -r line text; do
    [[ "$text" =~ include[[:space:]]*[\<\"]([^\>\"]*) ]] || continue
    inc=${BASH_REMATCH[1]}
    case "$inc" in
      event2/*)
        [[ "$mod" == net ]] ||
          fail "$file:$line: includes <$inc>: only proxy/net may include libevent (<event2/...>)"
        continue ;;
      yaml-cpp/*)
        [[ "$mod" == config ]] ||
          fail "$file:$line: includes <$inc>: only config may include yaml-cpp (<yaml-cpp/...>)"
        continue ;;
      config/*) target=config ;;
      proxy/*/*) rest=${inc#proxy/}; target=${rest%%/*} ;;
      *) continue ;;  # system, library or generated (mcring_version.h) headers
    esac
    if [[ "$target" == "$mod" ]]; then
      continue
    fi
    if [[ " ${allowed[$mod]} " != *" $target "* ]]; then
      fail "$file:$line: includes \"$inc\": module '$mod' may include only" \
           "[${allowed[$mod]:-nothing of ours}], not '$target' ($rule)"
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$file" || true)
done

if [[ -d proxy/core ]]; then
  fail "proxy/core exists: its files belong to session, dispatch, backend, control or admin"
fi

if ((failures > 0)); then
  echo "LAYOUT: $failures forbidden include(s)" >&2
  exit 1
fi
echo "layout: every include follows the module graph"
