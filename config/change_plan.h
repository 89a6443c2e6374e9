// What replacing a pool's configuration with another would move: the routing migration plan
// (routing/migration.h) between the routers each side builds, beside what modula would move for
// the same server change. Shared by `mcring plan` (two files) and the admin endpoint's what-if
// (the pool in force against an edited server list), so both say the same thing.
//
// No address resolution: routers are built from the configs alone, so it runs anywhere.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/routing/migration.h"

namespace mcring::config {

struct PoolChangePlan {
  const PoolConfig* before = nullptr;  // not owned; outlive the plan
  const PoolConfig* after = nullptr;
  routing::MigrationPlan plan;
  std::optional<routing::MigrationPlan> modula;  // unset when modula cannot be built
  std::string modula_error;
  // Both sides already use modula: the comparison would repeat the plan.
  bool already_modula = false;
  // Set when either side has replicas > 1: what happens to whole replica sets (the plan above
  // is about primaries), for the pool's distribution and for modula.
  std::optional<routing::ReplicaPlan> replicas;
  std::optional<routing::ReplicaPlan> modula_replicas;
};

// The plan for `before` -> `after`; nullopt and *error ("pool 'x' in OLD: ...") when a side's
// router cannot be built.
std::optional<PoolChangePlan> planPoolChange(const PoolConfig& before, const PoolConfig& after,
                                             std::string* error);

// Servers of both sides: the old side's in config order, then the ones the new side adds.
struct PlanServerRow {
  std::string id;
  std::optional<size_t> before;  // index on the old side
  std::optional<size_t> after;   // index on the new side
};
std::vector<PlanServerRow> planServerRows(const routing::MigrationPlan& p);

// The pool's plan as JSON (`mcring plan --json`'s pool object): name, both sides' routing and
// servers, the plan (moved, ownership before/after/out/in per server, the matrix) and modula's.
// With replicas > 1 on a side, each plan object also has "replica_sets" (changed, order_only,
// none_kept, per-server membership before/after/lost/gained); with replicas 1 on both sides the
// output is what it was before replicas existed.
void appendPoolChangeJson(std::string* out, const PoolChangePlan& p);

}  // namespace mcring::config
