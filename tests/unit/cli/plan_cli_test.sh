#!/usr/bin/env bash
# `mcring plan` end to end: 4 -> 5 equal ketama servers moves ~20% of keys, modula ~80%.
# Usage: plan_cli_test.sh MCRING_BINARY DATA_DIR
set -euo pipefail

mcring=$1
data=$2
old=$data/plan_old.yml
new=$data/plan_new.yml
python=/usr/bin/python3
[[ -x $python ]] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# --- JSON: the numbers -------------------------------------------------------------------------
"$mcring" plan "$old" "$new" --json >"$tmp/forward.json"
"$mcring" plan "$new" "$old" --json >"$tmp/backward.json"
"$python" - "$tmp/forward.json" "$tmp/backward.json" <<'PY'
import json, sys

fwd = json.load(open(sys.argv[1]))
back = json.load(open(sys.argv[2]))
assert len(fwd["pools"]) == 1, fwd["pools"]
pool = fwd["pools"][0]
plan, modula = pool["plan"], pool["modula"]

assert plan["distribution"] == "ketama" and plan["method"] == "exact", plan["method"]
assert abs(plan["moved"] - 0.20) <= 0.02, f"ketama moved {plan['moved']:.4f}, want 20% +- 2 pp"
# modula 4 -> 5: a hash stays only when h % 4 == h % 5, 4 residues in 20.
assert abs(modula["moved"] - 0.80) <= 0.001, f"modula moved {modula['moved']:.4f}, want 80%"

for p in (plan, modula):
    before = sum(o["before"] for o in p["ownership"])
    after = sum(o["after"] for o in p["ownership"])
    assert abs(before - 1) < 1e-9 and abs(after - 1) < 1e-9, (before, after)
    cells = sum(c["fraction"] for c in p["matrix"])
    assert abs(cells - 1) < 1e-9, cells
    moved = sum(c["fraction"] for c in p["matrix"] if c["moved"])
    assert abs(moved - p["moved"]) < 1e-9, (moved, p["moved"])

# Ketama only moves keys to the new server, and exactly its share.
new = next(o for o in plan["ownership"] if o["server"] == "10.0.0.5:11211")
assert new["before"] == 0 and abs(new["moved_in"] - plan["moved"]) < 1e-9, new
assert all(c["to"] == "10.0.0.5:11211" for c in plan["matrix"] if c["moved"]), plan["matrix"]

# Removing the server again moves exactly the same keys back.
assert abs(back["pools"][0]["plan"]["moved"] - plan["moved"]) < 1e-9
print(f"ketama moved {plan['moved']:.4%}, modula moved {modula['moved']:.4%}")
PY

# --- Human output: the same numbers, readable ---------------------------------------------------
"$mcring" plan "$old" "$new" --pool cache >"$tmp/human.txt"
moved=$("$python" -c 'import json,sys; print("%.2f%%" % (100 * json.load(open(sys.argv[1]))["pools"][0]["plan"]["moved"]))' "$tmp/forward.json")
grep -q "Keys moved:  *$moved  ketama, exact" "$tmp/human.txt" || fail "human output lacks '$moved ketama, exact'"
grep -q "80.00%  if the pool used modula" "$tmp/human.txt" || fail "human output lacks modula's 80%"
grep -q "10.0.0.5:11211 (new)" "$tmp/human.txt" || fail "human output does not mark the new server"
grep -q "added: *10.0.0.5:11211" "$tmp/human.txt" || fail "human output does not list the added server"

# --- Errors -------------------------------------------------------------------------------------
set +e
"$mcring" plan "$old" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "one file should be a usage error (exit 2)"
"$mcring" plan "$old" "$new" --pool nope >/dev/null 2>&1
[[ $? -eq 1 ]] || fail "an unknown pool should exit 1"
"$mcring" plan "$old" "$tmp/missing.yml" >/dev/null 2>&1
[[ $? -eq 1 ]] || fail "a missing file should exit 1"
set -e
echo "cli_plan: ok"
