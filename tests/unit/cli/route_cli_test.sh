#!/usr/bin/env bash
# `mcring route` on a pool with routes: each key's route, pool, server and shadow server, "no
# route" for a key no route takes; an ordinary pool's output keeps its KEY<TAB>SERVER form.
# Usage: route_cli_test.sh MCRING_BINARY REPO_ROOT
set -euo pipefail

mcring=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() {  # expect NAME ACTUAL WANTED
  [[ $2 == "$3" ]] || fail "$1: got [$2], want [$3]"
}

examples=$root/config/examples
tab=$'\t'

# --- routes.yml, --pool front --------------------------------------------------------------------
out=$("$mcring" route -c "$examples/routes.yml" --pool front sess:1 user:7 zz)
printf '%s\n' "$out"
expect "sess:1" "$(sed -n 1p <<<"$out")" \
  "sess:1${tab}sess:${tab}sessions${tab}127.0.0.1:11214${tab}shadow sessions_v2 127.0.0.1:11215"
expect "user:7" "$(sed -n 2p <<<"$out" | cut -f1-3)" "user:7${tab}user:${tab}users"
server=$(sed -n 2p <<<"$out" | cut -f4)
[[ $server == 127.0.0.1:11211 || $server == 127.0.0.1:11212 ]] || fail "user:7 server $server"
# The route's server is the route pool's own answer.
expect "user:7 = users" "$server" "$("$mcring" route -c "$examples/routes.yml" --pool users user:7 | cut -f2)"
expect "zz" "$(sed -n 3p <<<"$out" | cut -f1-3)" "zz${tab}default${tab}users"

# The only listening pool has routes: it is the default --pool.
expect "default pool" "$("$mcring" route -c "$examples/routes.yml" sess:1 user:7 zz)" "$out"

# --- no default: a key no prefix matches has no route; the longest prefix wins --------------------
cat >"$tmp/nodefault.yml" <<'YML'
a: {servers: [127.0.0.1:11301:1]}
b: {servers: [127.0.0.1:11302:1 bee]}
front:
  listen: 127.0.0.1:22122
  routes:
    - {prefix: "x:", pool: a}
    - {prefix: "x:y:", pool: b}
YML
out=$("$mcring" route -c "$tmp/nodefault.yml" x:1 x:y:1 other)
printf '%s\n' "$out"
expect "x:1" "$(sed -n 1p <<<"$out")" "x:1${tab}x:${tab}a${tab}127.0.0.1:11301"
expect "x:y:1" "$(sed -n 2p <<<"$out")" "x:y:1${tab}x:y:${tab}b${tab}127.0.0.1:11302 bee"
expect "other" "$(sed -n 3p <<<"$out")" "other${tab}no route"

# --- an ordinary pool: KEY<TAB>HOST:PORT[<TAB>NAME] as before -------------------------------------
expect "ordinary" "$("$mcring" route -c "$tmp/nodefault.yml" --pool b k)" "k${tab}127.0.0.1:11302${tab}bee"
expect "local.yml" "$("$mcring" route -c "$examples/local.yml" foo)" "foo${tab}127.0.0.1:11301"

# --- mcring plan: the key families a route change sends to another pool --------------------------
sed -e 's/^      pool: sessions$/      pool: sessions_v2/' \
    -e 's/shadow: { pool: sessions_v2, percent: 100 }/shadow: { pool: sessions, percent: 100 }/' \
    -e 's/^    - default: users /    - { prefix: "new:", pool: users_dr }\n    - default: users /' \
    "$examples/routes.yml" >"$tmp/routes_new.yml"
grep -q 'prefix: "new:"' "$tmp/routes_new.yml" || fail "routes_new.yml not edited"
out=$("$mcring" plan "$examples/routes.yml" "$tmp/routes_new.yml" --pool front)
printf '%s\n' "$out"
grep -Eq "^  'sess:'\.\.\. +sess: -> sessions +sess: -> sessions_v2 +MOVES" <<<"$out" || fail "sess: moves"
grep -Eq "^  'new:'\.\.\. +default -> users +new: -> users_dr +MOVES" <<<"$out" || fail "new: moves"
grep -Eq "^  'user:'\.\.\. +user: -> users +user: -> users +stays" <<<"$out" || fail "user: stays"
grep -Eq "^  other keys +default -> users +default -> users +stays" <<<"$out" || fail "others stay"
grep -q "2 of 4 key families change pool." <<<"$out" || fail "count"
"$mcring" plan "$examples/routes.yml" "$tmp/routes_new.yml" --json >"$tmp/plan.json"
/usr/bin/python3 - "$tmp/plan.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
front = [p for p in doc["routed_pools"] if p["pool"] == "front"][0]
moved = {r["prefix"]: r["after"]["pool"] for r in front["routes"] if r["moves"]}
assert moved == {"sess:": "sessions_v2", "new:": "users_dr"}, moved
assert all(p["name"] != "front" for p in doc["pools"]), "front has no servers of its own"
PY
echo "PASS"
