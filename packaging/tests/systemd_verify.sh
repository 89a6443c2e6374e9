#!/usr/bin/env bash
# Verifies packaging/mcring.service with systemd-analyze, offline (no running systemd needed):
#   - `systemd-analyze verify`: syntax, known directives, executables exist. /usr/bin/mcring is
#     replaced by the built binary (or /bin/true) in a temporary copy, since the unit is checked
#     before the package is installed; any message at all fails the test;
#   - `systemd-analyze security --offline=yes --threshold=30`: the hardening keeps the exposure
#     score at or below 3.0 ("OK"), so a dropped sandboxing line is noticed.
# Skips (prints "SKIP: reason", exits 0) without systemd-analyze, or where it cannot run.
#
#   packaging/tests/systemd_verify.sh [UNIT] [MCRING_BINARY]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
unit=${1:-$here/../mcring.service}
binary=${2:-/bin/true}
case "$binary" in /*) ;; *) binary=$(pwd)/$binary ;; esac

skip() { echo "SKIP: $*"; exit 0; }
command -v systemd-analyze >/dev/null ||
  skip "systemd-analyze not found (Debian package systemd); unit not verified"
[ -f "$unit" ] || { echo "FAIL: no unit file at $unit"; exit 1; }
[ -x "$binary" ] || { echo "FAIL: $binary is not executable"; exit 1; }

work=$(mktemp -d /tmp/mcring-systemd-verify.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Can systemd-analyze verify anything here? (A trivial unit must pass.)
printf '[Unit]\nDescription=probe\n[Service]\nExecStart=/bin/true\n' >"$work/probe.service"
if ! probe=$(systemd-analyze verify --man=no "$work/probe.service" 2>&1) || [ -n "$probe" ]; then
  skip "systemd-analyze cannot verify units in this environment: $probe"
fi
systemd-analyze --version | head -n1

sed "s#/usr/bin/mcring#$binary#g" "$unit" >"$work/mcring.service"
echo "== systemd-analyze verify --man=no mcring.service (ExecStart binary: $binary)"
rc=0
out=$(systemd-analyze verify --man=no "$work/mcring.service" 2>&1) || rc=$?
if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
  echo "$out"
  echo "FAIL: systemd-analyze verify (exit $rc, output above)"
  exit 1
fi
echo "ok: no errors, no warnings"

# The socket unit shipped next to the service (it activates that service).
socket_unit=$(dirname "$unit")/mcring.socket
if [ -f "$socket_unit" ]; then
  cp "$socket_unit" "$work/mcring.socket"
  echo "== systemd-analyze verify --man=no mcring.socket"
  rc=0
  out=$(systemd-analyze verify --man=no "$work/mcring.socket" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    echo "$out"
    echo "FAIL: systemd-analyze verify mcring.socket (exit $rc, output above)"
    exit 1
  fi
  echo "ok: mcring.socket: no errors, no warnings"
fi

echo "== systemd-analyze security --offline=yes --threshold=30"
if systemd-analyze security --help 2>/dev/null | grep -q -- '--offline'; then
  rc=0
  out=$(systemd-analyze security --offline=yes --threshold=30 "$work/mcring.service" 2>&1) || rc=$?
  grep -E 'Overall exposure level' <<<"$out" || true
  if [ "$rc" -ne 0 ]; then
    grep -E '^✗' <<<"$out" || true
    echo "FAIL: exposure above 3.0 (exit $rc)"
    exit 1
  fi
  echo "ok: exposure at or below 3.0"
else
  echo "note: this systemd-analyze has no 'security --offline'; exposure not scored"
fi
echo "systemd_verify: PASS"
