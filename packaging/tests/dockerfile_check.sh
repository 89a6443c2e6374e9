#!/usr/bin/env bash
# shellcheck disable=SC2015  # `check && ok || fail`: ok only echoes, so it cannot fail
# Checks the top-level Dockerfile as far as one can without a Docker engine:
#   1. the runtime stage's `apt-get install` line names the Debian package of every shared library
#      the binaries need (`ldd`, each library mapped to its package with `dpkg -S`);
#   2. every COPY source from the build context exists and is not excluded by .dockerignore;
#      every COPY --from=STAGE names an earlier stage, and the path it copies is what that stage's
#      `DESTDIR=... cmake --install ... --component ...` produces (replayed here on BUILD_DIR);
#   3. the runtime stage runs as a non-root user, exposes 22122 and 22222, stops with SIGTERM,
#      has a HEALTHCHECK without curl/wget, and its default config passes `mcring -t`; a CMD that
#      binds the admin port beyond loopback also gives --admin-token-file (or mcring would refuse
#      to start);
#   4. the HEALTHCHECK command, pointed at a mcring started here on free loopback ports, succeeds
#      (skipped with a note when the binary serves no admin endpoint).
#
#   packaging/tests/dockerfile_check.sh [--build-dir DIR] [--dockerfile FILE] [BINARY ...]
# Binaries default to mcring in DIR (default: build-pkg/, else build/).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
dockerfile=$repo/Dockerfile
dockerignore=$repo/.dockerignore

build_dir=""
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --dockerfile) dockerfile=$2; shift 2 ;;  # another file, same context (to test this script)
    *) bins+=("$1"); shift ;;
  esac
done
if [ -z "$build_dir" ]; then
  for d in "$repo/build-pkg" "$repo/build"; do
    if [ -x "$d/mcring" ]; then build_dir=$d; break; fi
  done
fi
if [ ${#bins[@]} -eq 0 ] && [ -n "$build_dir" ]; then
  for b in mcring; do
    if [ -x "$build_dir/$b" ]; then bins+=("$build_dir/$b"); fi
  done
fi

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 0; }

[ -f "$dockerfile" ] || { echo "FAIL: no Dockerfile at $dockerfile"; exit 1; }
[ ${#bins[@]} -gt 0 ] || { echo "FAIL: no mcring binary (build first, or pass --build-dir)"; exit 1; }
for tool in ldd dpkg; do
  command -v "$tool" >/dev/null || skip "$tool not found (not a Debian system?)"
done
if [ -r /etc/os-release ] && ! grep -q '^VERSION_ID="12"' /etc/os-release; then
  echo "note: this machine is not Debian 12: library package names may differ from the image's"
fi

work=$(mktemp -d /tmp/mcring-dockerfile-check.XXXXXX)
mcring_pid=""
cleanup() {
  if [ -n "$mcring_pid" ]; then
    kill -KILL "$mcring_pid" 2>/dev/null || true
    wait "$mcring_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- parse: one logical instruction per line, tagged with its stage index ----------------------
# Comments and parser directives dropped, backslash continuations joined.
awk '
  /^[[:space:]]*#/ { next }
  {
    line = $0
    if (line ~ /\\[[:space:]]*$/) { sub(/\\[[:space:]]*$/, "", line); buf = buf line " "; next }
    buf = buf line
    if (buf ~ /^[[:space:]]*$/) { buf = ""; next }
    sub(/^[[:space:]]+/, "", buf)
    split(buf, w, /[[:space:]]+/)
    if (toupper(w[1]) == "FROM") stage++
    print stage "\t" buf
    buf = ""
  }
' "$dockerfile" >"$work/instructions"

nstages=$(awk -F'\t' 'END { print $1 + 0 }' "$work/instructions")
[ "$nstages" -ge 2 ] || fail "expected a multi-stage Dockerfile, found $nstages stage(s)"
# Stage names, in order ("-" for unnamed).
awk -F'\t' 'toupper(substr($2, 1, 5)) == "FROM " {
  n = split($2, w, /[[:space:]]+/); name = "-"
  for (i = 1; i < n; i++) if (toupper(w[i]) == "AS") name = w[i + 1]
  print $1 "\t" name "\t" w[2]
}' "$work/instructions" >"$work/stages"
echo "stages:"; sed 's/^/  /' "$work/stages"
runtime=$nstages
instr() { awk -F'\t' -v s="$1" -v k="$2" '$1 == s && toupper(substr($2, 1, length(k) + 1)) == k " " { print substr($2, length(k) + 2) }' "$work/instructions"; }

base=$(awk -F'\t' -v s="$runtime" '$1 == s { print $3 }' "$work/stages")
[ "$base" = "debian:12-slim" ] && ok "runtime stage is debian:12-slim" ||
  fail "runtime stage is FROM $base, expected debian:12-slim"

# --- 1. runtime libraries ------------------------------------------------------------------------
# Packages named by `apt-get install` in the runtime stage's RUN lines.
instr "$runtime" RUN | tr ';&|' '\n' |
  awk '{ for (i = 1; i <= NF; i++) if ($i == "install" && i > 1 && $(i-1) ~ /apt(-get)?$/) {
           for (j = i + 1; j <= NF; j++) if ($j !~ /^-/) print $j; } }' |
  sort -u >"$work/runtime_pkgs"
echo "runtime stage installs: $(tr '\n' ' ' <"$work/runtime_pkgs")"
[ -s "$work/runtime_pkgs" ] || fail "no apt-get install line in the runtime stage"

pkg_of() {  # path -> Debian package owning it (merged /usr: try both spellings, and the target)
  local p=$1 real cand out
  real=$(readlink -f "$p" 2>/dev/null || echo "$p")
  for cand in "$p" "/usr$p" "${p#/usr}" "$real" "/usr$real" "${real#/usr}"; do
    if out=$(dpkg -S "$cand" 2>/dev/null); then
      printf '%s\n' "$out" | head -n1 | cut -d: -f1 | cut -d, -f1
      return 0
    fi
  done
  return 1
}

for bin in "${bins[@]}"; do
  echo "ldd $bin:"
  if ldd "$bin" | grep -q 'not found'; then
    fail "$bin has unresolved libraries: $(ldd "$bin" | grep 'not found' | tr -s ' \t' ' ')"
  fi
  while read -r lib path; do
    if ! pkg=$(pkg_of "$path"); then
      fail "$lib ($path): no Debian package owns it (built against a library outside apt?)"
      continue
    fi
    if grep -qxF "$pkg" "$work/runtime_pkgs"; then
      echo "  ok: $lib -> $pkg"
    else
      fail "$lib ($path) comes from package $pkg, which the runtime stage does not install"
    fi
  done < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\// { print $1, $1 }')
done

# --- 2. COPY sources -----------------------------------------------------------------------------
ignored() {  # is context path $1 (or a parent) excluded by .dockerignore?
  local path=${1#./} pat prefix="" part result=1
  [ -f "$dockerignore" ] || return 1
  local -a parts
  IFS=/ read -r -a parts <<<"$path"
  for part in "${parts[@]}"; do
    prefix=${prefix:+$prefix/}$part
    while IFS= read -r pat || [ -n "$pat" ]; do
      pat=${pat%%#*}; pat=${pat%"${pat##*[![:space:]]}"}; pat=${pat#/}
      [ -n "$pat" ] || continue
      if [ "${pat:0:1}" = "!" ]; then
        # shellcheck disable=SC2053
        [[ $prefix == ${pat:1} ]] && result=1
        continue
      fi
      pat=${pat#\*\*/}
      # shellcheck disable=SC2053
      if [[ $prefix == $pat || $part == $pat ]]; then result=0; fi
    done <"$dockerignore"
    [ "$result" -eq 0 ] && return 0
  done
  return 1
}

replayed=""  # DESTDIR tree of the builder's `cmake --install`, made once
while IFS=$'\t' read -r stage rest; do
  args=${rest#* }
  from=""
  # Flags first (--from=, --chown=, --chmod=, --link).
  while [[ $args == --* ]]; do
    flag=${args%% *}; args=${args#* }
    case "$flag" in --from=*) from=${flag#--from=} ;; esac
  done
  if [[ $args == \[* ]]; then
    mapfile -t words < <(sed 's/^\[//; s/\]$//' <<<"$args" | tr ',' '\n' | sed 's/^[[:space:]]*"//; s/"[[:space:]]*$//')
  else
    read -r -a words <<<"$args"
  fi
  n=${#words[@]}
  dest=${words[n-1]}
  for ((i = 0; i < n - 1; i++)); do
    src=${words[i]}
    if [ -z "$from" ]; then
      if [ "$src" = "." ] || [ "$src" = "./" ]; then ok "COPY . (the whole context)"; continue; fi
      if ! compgen -G "$repo/$src" >/dev/null; then
        fail "COPY $src -> $dest: $src does not exist in the repository"
      elif ignored "$src"; then
        fail "COPY $src -> $dest: $src is excluded by .dockerignore"
      else
        ok "COPY $src -> $dest (exists, not ignored)"
      fi
      continue
    fi
    # COPY --from=STAGE: an earlier stage, and a path that stage produces.
    fstage=$(awk -F'\t' -v n="$from" '$2 == n || $1 - 1 == n { print $1 }' "$work/stages" | head -n1)
    if [ -z "$fstage" ] || [ "$fstage" -ge "$stage" ]; then
      fail "COPY --from=$from: no earlier stage of that name"
      continue
    fi
    install_line=$(instr "$fstage" RUN | grep -o 'DESTDIR=[^ ]* cmake --install [^&;]*' | head -n1 || true)
    if [ -z "$install_line" ]; then
      fail "COPY --from=$from $src: stage $from runs no 'DESTDIR=... cmake --install'"
      continue
    fi
    destdir=${install_line%% *}; destdir=${destdir#DESTDIR=}
    component=$(grep -o -- '--component [^ ]*' <<<"$install_line" | cut -d' ' -f2 || true)
    if [[ $src != "$destdir"/* && $src != "$destdir" ]]; then
      fail "COPY --from=$from $src: not under the stage's DESTDIR $destdir"
      continue
    fi
    if [ -z "$build_dir" ] || [ ! -f "$build_dir/cmake_install.cmake" ]; then
      echo "note: COPY --from=$from $src: no build dir to replay the install on; path not checked"
      continue
    fi
    if [ -z "$replayed" ]; then
      replayed=$work/out
      DESTDIR=$replayed cmake --install "$build_dir" --prefix /usr ${component:+--component "$component"} \
        >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "replaying cmake --install failed"; }
    fi
    local_src=$replayed${src#"$destdir"}
    if [ -e "$local_src" ]; then
      ok "COPY --from=$from $src -> $dest: the install produces it: $(find "$local_src" -maxdepth 1 ! -type d -printf '%f ')"
      if [ -d "$local_src" ] && [ "$dest" = "/usr/bin/" ] && [ ! -x "$local_src/mcring" ]; then
        fail "COPY --from=$from $src: no mcring in it"
      fi
    else
      fail "COPY --from=$from $src: the replayed install (component ${component:-all}) does not produce it"
    fi
  done
done < <(awk -F'\t' 'toupper(substr($2, 1, 5)) == "COPY " || toupper(substr($2, 1, 4)) == "ADD "' "$work/instructions")

# --- 3. runtime stage policy ---------------------------------------------------------------------
user=$(instr "$runtime" USER | tail -n1)
case "${user%%:*}" in
  "" ) fail "runtime stage has no USER (would run as root)" ;;
  root | 0) fail "runtime stage runs as root ($user)" ;;
  *) ok "USER $user" ;;
esac
expose=" $(instr "$runtime" EXPOSE | tr '\n' ' ') "
for port in 22122 22222; do
  [[ $expose == *" $port "* || $expose == *" $port/tcp "* ]] && ok "EXPOSE $port" || fail "no EXPOSE $port"
done
[ "$(instr "$runtime" STOPSIGNAL | tail -n1)" = SIGTERM ] && ok "STOPSIGNAL SIGTERM" || fail "STOPSIGNAL is not SIGTERM"
entry=$(instr "$runtime" ENTRYPOINT | tail -n1)
[[ $entry == *'"/usr/bin/mcring"'* ]] && ok "ENTRYPOINT $entry" || fail "ENTRYPOINT is not /usr/bin/mcring: $entry"
# An admin address beyond loopback in the default arguments needs the token (mcring refuses to
# start otherwise, so an image without it would never come up).
cmd=$(instr "$runtime" CMD | tail -n1)
admin_addr=127.0.0.1
if [[ $cmd =~ \"-a\",[[:space:]]*\"([^\"]*)\" ]]; then admin_addr=${BASH_REMATCH[1]}; fi
if [[ $admin_addr =~ ^(127\.|localhost$|::1$|\[::1\]$) ]]; then
  ok "CMD keeps the admin port on loopback: $cmd"
elif [[ $cmd == *'"--admin-token-file"'* ]]; then
  ok "CMD binds the admin port to $admin_addr with --admin-token-file"
else
  fail "CMD binds the admin port to $admin_addr (not loopback) without --admin-token-file: $cmd"
fi
health=$(instr "$runtime" HEALTHCHECK | tail -n1)
if [ -z "$health" ]; then
  fail "no HEALTHCHECK"
elif grep -qE '\b(curl|wget)\b' <<<"$health"; then
  fail "HEALTHCHECK uses curl/wget, which debian:12-slim does not have"
else
  ok "HEALTHCHECK present, no curl/wget"
fi
config_src=$(awk -F'\t' -v s="$runtime" '$1 == s && toupper(substr($2, 1, 5)) == "COPY " && $2 !~ /--from=/ && $2 ~ /\/etc\/mcring\/mcring.yml/ { n = split($2, w, /[[:space:]]+/); print w[n - 1] }' "$work/instructions" | head -n1)
if [ -z "$config_src" ]; then
  fail "runtime stage copies no /etc/mcring/mcring.yml"
elif out=$("${bins[0]}" -t -c "$repo/$config_src" 2>&1); then
  ok "image config $config_src: $out"
else
  fail "image config $config_src does not check: $out"
fi

# --- 4. the HEALTHCHECK command against a live mcring --------------------------------------------
py=$(command -v /usr/bin/python3 || command -v python3 || true)
if [ -z "$health" ] || [[ $health != *'CMD ['* ]]; then
  echo "note: HEALTHCHECK is not in exec form; command not exercised"
elif [ -z "$py" ]; then
  echo "note: no python3 to decode the HEALTHCHECK's JSON; command not exercised"
else
  json=${health#*CMD }
  # Ports nobody listens on, from /proc (no probing connect, which can block on a full backlog).
  listening=$(awk 'NR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' \
                /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u |
              while read -r hex; do echo $((16#$hex)); done || true)
  free_port() {
    local p
    for _ in $(seq 1 100); do
      p=$((20000 + RANDOM % 30000))
      if ! grep -qx "$p" <<<"$listening"; then echo "$p"; return 0; fi
    done
    return 1
  }
  answers() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
  # Running and not a zombie (kill -0 succeeds on an exited child nobody has waited for yet).
  alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != Z ]; }
  stop_mcring() {  # SIGTERM, then at most 15 s for the graceful stop
    kill "$mcring_pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      alive "$mcring_pid" || break
      sleep 0.1
    done
    if alive "$mcring_pid"; then
      fail "mcring did not exit within 15 s of SIGTERM (log: $(tr '\n' ' ' <"$work/mcring.log"))"
      kill -KILL "$mcring_pid" 2>/dev/null || true
    fi
    wait "$mcring_pid" 2>/dev/null || true
    mcring_pid=""
  }
  up=0
  # Up to 3 tries: a port found free can be taken by someone else before mcring binds it.
  for _try in 1 2 3; do
    pool_port=$(free_port); admin_port=$(free_port)
    printf 'health:\n  listen: 127.0.0.1:%s\n  servers:\n    - 127.0.0.1:1:1\n' "$pool_port" \
      >"$work/health.yml"
    "${bins[0]}" -c "$work/health.yml" -s "$admin_port" -a 127.0.0.1 --threads 1 \
      --shutdown-grace 2000 </dev/null >"$work/mcring.log" 2>&1 &
    mcring_pid=$!
    for _ in $(seq 1 50); do
      alive "$mcring_pid" || break  # exited: could not start (e.g. the port was taken)
      if answers "$admin_port"; then up=1; break; fi
      sleep 0.1
    done
    [ "$up" -eq 1 ] && break
    stop_mcring
  done
  if [ "$up" -eq 1 ]; then
    # The exec-form argv is a JSON array: decode it as Docker does.
    mapfile -d '' -t argv < <("$py" -c 'import json, sys
sys.stdout.write("\0".join(json.loads(sys.argv[1])))' "$json")
    argv=("${argv[@]//22222/$admin_port}")
    if timeout 5 "${argv[@]}" </dev/null; then
      ok "HEALTHCHECK command succeeds against mcring (admin on 127.0.0.1:$admin_port)"
    else
      fail "HEALTHCHECK command failed against a healthy mcring: ${argv[*]}"
    fi
    stop_mcring
    # And it must fail when nothing listens (the port is free again).
    if timeout 5 "${argv[@]}" </dev/null 2>/dev/null; then
      fail "HEALTHCHECK command succeeds with nothing listening"
    else
      ok "HEALTHCHECK command fails with nothing listening"
    fi
  else
    echo "note: ${bins[0]} serves no admin endpoint on -s $admin_port (log: $(tr '\n' ' ' <"$work/mcring.log")); HEALTHCHECK command not exercised"
  fi
fi

if [ "$failures" -gt 0 ]; then
  echo "dockerfile_check: $failures problem(s)"
  exit 1
fi
echo "dockerfile_check: PASS"
