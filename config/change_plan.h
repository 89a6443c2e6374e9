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
  double ideal_moved = 0;  // idealMovedShare of the two server lists
  std::string warning;     // excessMoveWarning(plan.moved, ideal_moved)
};

// The plan for `before` -> `after`; nullopt and *error ("pool 'x' in OLD: ...") when a side's
// router cannot be built.
std::optional<PoolChangePlan> planPoolChange(const PoolConfig& before, const PoolConfig& after,
                                             std::string* error);

// The least share of keys any ring must move for a change of servers: the weight share each
// server (by identity) loses, summed. k/(n+k) for k servers added to n of equal weight, k/n for k
// of n removed; 0 for a change of order, names or routing options alone.
double idealMovedShare(const std::vector<ServerConfig>& before,
                       const std::vector<ServerConfig>& after);

// A change that moves more than twice the ideal share (and 0.1 point more, so sampling noise
// never warns) gets a one-line warning: keys also move between servers that stay, as a ring
// flavour whose points shift with the server count does (docs/configuration.md, "A pool that
// grows"). "" when the change is within it.
std::string excessMoveWarning(double moved, double ideal);

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
