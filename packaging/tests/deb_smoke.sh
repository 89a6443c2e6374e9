#!/usr/bin/env bash
# Smoke test of the mcring .deb: install, check, remove, purge, and leave the machine as it was.
#
#   packaging/tests/deb_smoke.sh                    build with `make package` (in $BUILD, default
#                                                   build/), then test that package
#   packaging/tests/deb_smoke.sh PATH/mcring.deb    test that package
#   packaging/tests/deb_smoke.sh --build-dir DIR    cpack DIR (a configured, built tree) into a
#                                                   temporary directory, then test that (ctest)
#
# Needs root (dpkg -i). Not root, or a machine that already has mcring (package, binary, user or
# /etc/mcring): prints "SKIP: reason" and exits 0 (ctest reports it as skipped). It installs the
# package for the duration of the test only: an EXIT trap purges it and restores the shadow-utils
# backup files (/etc/passwd- ...) that useradd/userdel rewrite, whatever failed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

skip() { echo "SKIP: $*"; exit 0; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

[ "$(id -u)" -eq 0 ] || skip "deb_smoke needs root to dpkg -i (CI runs as root)"
for tool in dpkg dpkg-deb dpkg-query getent runuser; do
  command -v "$tool" >/dev/null || skip "$tool not found (not a Debian system?)"
done

# Refuse to touch a machine that already has mcring in any form.
status=$(dpkg-query -W -f='${db:Status-Status}' mcring 2>/dev/null || true)
case "$status" in
  "" | not-installed) ;;
  *) skip "package mcring is already on this machine (status: $status); not touching it" ;;
esac
[ ! -e /usr/bin/mcring ] || skip "/usr/bin/mcring exists (not from the package); not touching it"
[ ! -e /etc/mcring ] || skip "/etc/mcring exists; not touching it"
! getent passwd mcring >/dev/null || skip "user mcring exists; purging the package would remove it"
! getent group mcring >/dev/null || skip "group mcring exists; purging the package would remove it"
leftovers() {  # systemd state about mcring.service outside the package's own files
  find /etc/systemd/system /var/lib/systemd/deb-systemd-helper-enabled \
    /var/lib/systemd/deb-systemd-helper-masked -name 'mcring*' 2>/dev/null || true
}
[ -z "$(leftovers)" ] || skip "systemd already knows mcring.service: $(leftovers | tr '\n' ' ')"

work=$(mktemp -d /tmp/mcring-deb-smoke.XXXXXX)
# useradd/userdel rewrite these backups (the old file, with the mcring line in it): keep copies.
backups=(/etc/passwd- /etc/group- /etc/shadow- /etc/gshadow-)
for f in "${backups[@]}"; do
  if [ -e "$f" ]; then cp -p "$f" "$work/$(basename "$f")"; fi
done
installed=0

cleanup() {
  local rc=$?
  set +e
  if [ "$installed" -eq 1 ]; then
    local st
    st=$(dpkg-query -W -f='${db:Status-Status}' mcring 2>/dev/null)
    if [ -n "$st" ] && [ "$st" != not-installed ]; then
      echo "cleanup: purging mcring (status: $st)"
      dpkg_retry -P mcring >/dev/null
    fi
    # Whatever the maintainer scripts did not get to.
    getent passwd mcring >/dev/null && userdel mcring
    getent group mcring >/dev/null && groupdel mcring
    rmdir /etc/mcring 2>/dev/null
    for f in "${backups[@]}"; do
      if [ -e "$work/$(basename "$f")" ]; then cp -p "$work/$(basename "$f")" "$f"; fi
    done
  fi
  rm -rf "$work"
  if [ "$rc" -eq 0 ]; then echo "deb_smoke: PASS"; else echo "deb_smoke: FAIL (exit $rc)" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# dpkg while someone else holds its lock (apt in another shell): wait up to a minute.
dpkg_retry() {
  local out
  for _ in $(seq 1 30); do
    if out=$(dpkg "$@" 2>&1); then
      printf '%s\n' "$out"
      return 0
    fi
    if ! grep -qi 'lock' <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    sleep 2
  done
  printf '%s\n' "$out" >&2
  return 1
}

# --- the package ---------------------------------------------------------------------------------
deb=""
case "${1:-}" in
  "")
    step "building the package: make package"
    make -C "$repo" package
    deb=$(find "$repo/${BUILD:-build}" -maxdepth 1 -name "mcring_*.deb" -printf "%T@ %p\n" | sort -rn | head -n1 | cut -d" " -f2-)
    ;;
  --build-dir)
    [ -n "${2:-}" ] || fail "--build-dir needs a directory"
    [ -f "$2/CPackConfig.cmake" ] || fail "$2/CPackConfig.cmake not found: configure first"
    command -v cpack >/dev/null || fail "cpack not found"
    step "cpack -G DEB from $2"
    cpack -G DEB --config "$2/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1 ||
      { cat "$work/cpack.log" >&2; fail "cpack failed"; }
    deb=$(find "$work/pkg" -maxdepth 1 -name "mcring_*.deb" | head -n1)
    ;;
  *)
    deb=$1
    ;;
esac
[ -f "$deb" ] || fail "no package at '$deb'"
echo "package: $deb ($(stat -c %s "$deb") bytes)"
dpkg-deb -f "$deb"
version=$(dpkg-deb -f "$deb" Version)
upstream=${version%-*}
contents=$(dpkg-deb -c "$deb")

# --- install ------------------------------------------------------------------------------------
step "dpkg -i"
installed=1
dpkg_retry -i "$deb"
[ "$(dpkg-query -W -f='${db:Status-Abbrev}' mcring)" = "ii " ] || fail "mcring not installed (ii)"

step "files"
for f in /usr/bin/mcring /etc/mcring/mcring.yml /lib/systemd/system/mcring.service \
         /usr/share/man/man8/mcring.8.gz; do
  [ -e "$f" ] || fail "$f missing after install"
  echo "ok: $f"
done
# The proxy only: mcring-bench is the project's experiment tool, not part of the package.
if grep -q 'mcring-bench' <<<"$contents"; then
  fail "the package holds mcring-bench: $(grep 'mcring-bench' <<<"$contents" | tr '\n' ' ')"
fi
echo "ok: no mcring-bench in the package"
gzip -t /usr/share/man/man8/mcring.8.gz || fail "mcring.8.gz is not valid gzip"
zcat /usr/share/man/man8/mcring.8.gz | grep -q '^\.TH MCRING 8' || fail "mcring.8 has no .TH header"

changelog=/usr/share/doc/mcring/changelog.Debian.gz
gzip -t "$changelog" || fail "$changelog missing or not valid gzip"
zcat "$changelog" | head -n1 | grep -qF "mcring ($version) " ||
  fail "$changelog does not start with an entry for $version"
echo "ok: $changelog"

step "mcring --version"
out=$(/usr/bin/mcring --version 2>&1) || { echo "$out" >&2; fail "mcring --version failed"; }
echo "$out"
[ "$out" = "mcring $upstream" ] || fail "--version says '$out', package version is $version"

step "mcring -t -c /etc/mcring/mcring.yml"
out=$(/usr/bin/mcring -t -c /etc/mcring/mcring.yml 2>&1) || { echo "$out" >&2; fail "mcring -t failed"; }
echo "$out"
[ "$out" = "configuration file '/etc/mcring/mcring.yml' syntax is ok" ] || fail "config check: $out"

step "system user mcring (postinst)"
getent passwd mcring || fail "postinst did not create user mcring"
shell=$(getent passwd mcring | cut -d: -f7)
[ "$shell" = /usr/sbin/nologin ] || fail "user mcring has shell $shell"
[ "$(id -u mcring)" -lt 1000 ] || fail "user mcring is not a system user (uid $(id -u mcring))"
# The unit's ExecStartPre runs as that user: it must be able to read the config.
runuser -u mcring -- /usr/bin/mcring -t -c /etc/mcring/mcring.yml >/dev/null ||
  fail "user mcring cannot check /etc/mcring/mcring.yml"
echo "ok: user mcring reads the config"

step "conffile registered"
conffiles=$(dpkg-query -W -f='${Conffiles}' mcring)
echo "$conffiles"
grep -q '^ /etc/mcring/mcring.yml [0-9a-f]\{32\}' <<<"$conffiles" ||
  fail "/etc/mcring/mcring.yml is not a registered conffile"

step "dependencies (dpkg-shlibdeps)"
depends=$(dpkg-query -W -f='${Depends}' mcring)
echo "$depends"
for lib in libc6 libstdc++6 libevent-core-2.1-7 libyaml-cpp liburing2; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: shlibdeps did not run?"
done

# --- remove: binary gone, conffile kept ----------------------------------------------------------
step "dpkg -r mcring"
dpkg_retry -r mcring
[ ! -e /usr/bin/mcring ] || fail "/usr/bin/mcring still there after dpkg -r"
[ ! -e /lib/systemd/system/mcring.service ] || fail "unit still there after dpkg -r"
[ -e /etc/mcring/mcring.yml ] || fail "conffile removed by dpkg -r (must survive until purge)"
[ "$(dpkg-query -W -f='${db:Status-Status}' mcring)" = config-files ] ||
  fail "status after dpkg -r is not config-files"
if [ -x /usr/bin/deb-systemd-helper ]; then
  [ "$(readlink /etc/systemd/system/mcring.service)" = /dev/null ] ||
    fail "postrm remove did not mask mcring.service"
fi
echo "ok: binary gone, conffile kept"

# --- purge: nothing left ------------------------------------------------------------------------
step "dpkg -P mcring"
dpkg_retry -P mcring
st=$(dpkg-query -W -f='${db:Status-Status}' mcring 2>/dev/null || true)
[ -z "$st" ] || [ "$st" = not-installed ] || fail "status after purge: $st"
[ ! -e /etc/mcring ] || fail "/etc/mcring still there after purge"
! getent passwd mcring >/dev/null || fail "user mcring still there after purge"
! getent group mcring >/dev/null || fail "group mcring still there after purge"
[ ! -e /usr/share/man/man8/mcring.8.gz ] || fail "man page still there after purge"
[ -z "$(leftovers)" ] || fail "systemd state left after purge: $(leftovers | tr '\n' ' ')"
echo "ok: purged"
