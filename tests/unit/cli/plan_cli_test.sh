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

# The least any ring must move for 4 -> 5 equal servers is 1/5; ketama is near it: no warning.
assert abs(pool["ideal_moved"] - 0.2) < 1e-9, pool["ideal_moved"]
assert pool["warning"] is None, pool["warning"]
assert abs(back["pools"][0]["ideal_moved"] - 0.2) < 1e-9  # removing 1 of 5
print(f"ketama moved {plan['moved']:.4%}, modula moved {modula['moved']:.4%}")
PY

# --- Human output: the same numbers, readable ---------------------------------------------------
"$mcring" plan "$old" "$new" --pool cache >"$tmp/human.txt"
moved=$("$python" -c 'import json,sys; print("%.2f%%" % (100 * json.load(open(sys.argv[1]))["pools"][0]["plan"]["moved"]))' "$tmp/forward.json")
grep -q "Keys moved:  *$moved  ketama, exact" "$tmp/human.txt" || fail "human output lacks '$moved ketama, exact'"
grep -q "80.00%  if the pool used modula" "$tmp/human.txt" || fail "human output lacks modula's 80%"
grep -q "10.0.0.5:11211 (new)" "$tmp/human.txt" || fail "human output does not mark the new server"
grep -q "added: *10.0.0.5:11211" "$tmp/human.txt" || fail "human output does not list the added server"
grep -q "Ideal: *20.00%" "$tmp/human.txt" || fail "human output lacks the ideal 20%"
grep -q "Warning:" "$tmp/human.txt" && fail "a change near the ideal share warns"

# A change that moves far more than it must (the hash changed with the server added) warns, in
# both forms.
sed 's/hash: fnv1a_64/hash: murmur/' "$new" >"$tmp/new_hash.yml"
"$mcring" plan "$old" "$tmp/new_hash.yml" >"$tmp/human_hash.txt"
grep -q "Warning: moves .* more than twice the 20.00% this change of servers must move" \
  "$tmp/human_hash.txt" || fail "a hash change with a server added does not warn"
"$mcring" plan "$old" "$tmp/new_hash.yml" --json |
  "$python" -c 'import json,sys; w=json.load(sys.stdin)["pools"][0]["warning"]; assert w and w.startswith("moves "), w'

# --- Replicas: moved replica sets beside moved primaries ------------------------------
# Without replicas nothing is added: the replica section exists only when a side has replicas > 1.
grep -q '"replica_sets"' "$tmp/forward.json" && fail "replicas 1 plan has replica_sets"
grep -q "Replica sets" "$tmp/human.txt" && fail "replicas 1 human output has a replica section"
r10=$data/plan_replicas_ketama_10.yml
r11=$data/plan_replicas_ketama_11.yml
"$mcring" plan "$r10" "$r11" --json >"$tmp/replicas.json"
"$mcring" plan "$data/plan_replicas_modula_10.yml" "$data/plan_replicas_modula_11.yml" --json \
  >"$tmp/replicas_modula.json"
"$python" - "$tmp/replicas.json" "$tmp/replicas_modula.json" <<'PY'
import json, sys

pool = json.load(open(sys.argv[1]))["pools"][0]
plan, modula = pool["plan"], pool["modula"]
rs, ms = plan["replica_sets"], modula["replica_sets"]
assert rs["replicas_before"] == 2 and rs["replicas_after"] == 2, rs
assert rs["method"] == "exact" and ms["method"] == "exact", (rs["method"], ms["method"])
# Adding 1 server to 10 with replicas 2: the new server joins ~2/11 of the sets under ketama
# (its arcs' share of set membership), nearly all sets change under modula.
assert abs(rs["changed"] - 2 / 11) <= 0.03, f"ketama replica sets changed {rs['changed']:.4f}"
assert ms["changed"] > 0.85, f"modula replica sets changed {ms['changed']:.4f}"
assert rs["none_kept"] == 0 and rs["order_only"] == 0, rs
# The primaries' plan is what it was.
assert abs(plan["moved"] - 1 / 11) <= 0.02, plan["moved"]
for r in (rs, ms):
    assert abs(sum(m["before"] for m in r["membership"]) - 2) < 1e-9
    assert abs(sum(m["after"] for m in r["membership"]) - 2) < 1e-9
    assert abs(sum(m["gained"] for m in r["membership"]) - sum(m["lost"] for m in r["membership"])) < 1e-9
new = next(m for m in rs["membership"] if m["server"] == "10.0.0.11:11211")
assert new["before"] == 0 and abs(new["gained"] - rs["changed"]) < 1e-9, new
assert all(m["gained"] == 0 for m in rs["membership"] if m["server"] != "10.0.0.11:11211")
# Both sides modula: the comparison is the plan itself.
only = json.load(open(sys.argv[2]))["pools"][0]
assert only["plan"]["replica_sets"] == only["modula"]["replica_sets"]
assert abs(only["plan"]["replica_sets"]["changed"] - ms["changed"]) < 1e-9
print(f"replicas 2: ketama sets changed {rs['changed']:.4%}, modula {ms['changed']:.4%}")
PY
"$mcring" plan "$r10" "$r11" >"$tmp/replicas.txt"
changed=$("$python" -c 'import json,sys; print("%.2f%%" % (100 * json.load(open(sys.argv[1]))["pools"][0]["plan"]["replica_sets"]["changed"]))' "$tmp/replicas.json")
grep -q "Replica sets (replicas 2)" "$tmp/replicas.txt" || fail "no replica section"
grep -q "Sets changed:  *$changed  ketama, exact" "$tmp/replicas.txt" ||
  fail "human output lacks 'Sets changed: $changed ketama, exact'"
grep -q "if the pool used modula (for comparison), exact" "$tmp/replicas.txt" ||
  fail "human output lacks modula's replica sets"
grep -q "Replica-set membership per server" "$tmp/replicas.txt" || fail "no membership table"
grep -q "10.0.0.11:11211 (new)" "$tmp/replicas.txt" || fail "membership does not mark the new server"

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
