// planPoolChange: the two sides' routers, their migration plan and modula's; its JSON.
#include "config/change_plan.h"

#include <cstdio>
#include <map>
#include <memory>
#include <utility>

#include "proxy/common/json.h"
#include "proxy/routing/router.h"

namespace mcring::config {
namespace {

struct Side {
  std::vector<std::string> ids;  // ServerConfig::identity(), in config order
  std::unique_ptr<const routing::Router> router;
};

std::optional<Side> buildSide(const PoolConfig& pool, const routing::RouterOptions& o,
                              std::string* error) {
  Side side;
  std::vector<routing::ServerSpec> specs;
  for (const auto& s : pool.servers) {
    specs.push_back(s.spec);
    side.ids.push_back(s.identity());
  }
  side.router = routing::Router::build(specs, o, error);
  if (!side.router) {
    return std::nullopt;
  }
  return side;
}

routing::RouterOptions asModula(routing::RouterOptions o) {
  o.distribution = routing::Distribution::Modula;
  return o;
}

}  // namespace

std::optional<PoolChangePlan> planPoolChange(const PoolConfig& before, const PoolConfig& after,
                                             std::string* error) {
  PoolChangePlan p;
  p.before = &before;
  p.after = &after;
  std::string err;
  auto a = buildSide(before, before.routing, &err);
  if (!a) {
    *error = "pool '" + before.name + "' in OLD: " + err;
    return std::nullopt;
  }
  auto b = buildSide(after, after.routing, &err);
  if (!b) {
    *error = "pool '" + after.name + "' in NEW: " + err;
    return std::nullopt;
  }
  p.plan = routing::planMigration(*a->router, a->ids, *b->router, b->ids);
  const bool replicated = before.routing.replicas > 1 || after.routing.replicas > 1;
  if (replicated) {
    p.replicas = routing::planReplicaSets(*a->router, a->ids, *b->router, b->ids);
  }
  p.ideal_moved = idealMovedShare(before.servers, after.servers);
  p.warning = excessMoveWarning(p.plan.moved, p.ideal_moved);
  p.already_modula = before.routing.distribution == routing::Distribution::Modula &&
                     after.routing.distribution == routing::Distribution::Modula;
  auto ma = buildSide(before, asModula(before.routing), &err);
  auto mb = ma ? buildSide(after, asModula(after.routing), &err) : std::nullopt;
  if (ma && mb) {
    p.modula = routing::planMigration(*ma->router, ma->ids, *mb->router, mb->ids);
    if (replicated && !p.already_modula) {
      p.modula_replicas = routing::planReplicaSets(*ma->router, ma->ids, *mb->router, mb->ids);
    }
  } else {
    p.modula_error = err;
  }
  return p;
}

double idealMovedShare(const std::vector<ServerConfig>& before,
                       const std::vector<ServerConfig>& after) {
  auto shares = [](const std::vector<ServerConfig>& servers) {
    std::map<std::string, double> out;
    double total = 0;
    for (const auto& s : servers) {
      total += s.spec.weight;
    }
    for (const auto& s : servers) {
      out[s.identity()] += total > 0 ? s.spec.weight / total : 0;
    }
    return out;
  };
  const std::map<std::string, double> a = shares(before);
  const std::map<std::string, double> b = shares(after);
  double lost = 0;
  for (const auto& [id, share] : a) {
    auto it = b.find(id);
    const double kept = it == b.end() ? 0 : it->second;
    lost += share > kept ? share - kept : 0;
  }
  return lost;
}

std::string excessMoveWarning(double moved, double ideal) {
  constexpr double kSlack = 0.001;  // a sampled plan's noise is well below this
  if (moved <= 2 * ideal || moved <= ideal + kSlack) {
    return "";
  }
  auto pct = [](double f) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * f);
    return std::string(buf);
  };
  return "moves " + pct(moved) + " of keys, more than twice the " + pct(ideal) +
         " this change of servers must move: keys also move between servers that stay (see "
         "\"A pool that grows\" in docs/configuration.md for a ring that moves only what it "
         "must)";
}

std::vector<PlanServerRow> planServerRows(const routing::MigrationPlan& p) {
  std::vector<PlanServerRow> rows;
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < p.before.size(); ++i) {
    row_of[p.before[i]] = rows.size();
    rows.push_back({p.before[i], i, std::nullopt});
  }
  for (size_t j = 0; j < p.after.size(); ++j) {
    auto it = row_of.find(p.after[j]);
    if (it != row_of.end()) {
      rows[it->second].after = j;
    } else {
      rows.push_back({p.after[j], std::nullopt, j});
    }
  }
  return rows;
}

namespace {

std::string number(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", f);
  return buf;
}

void appendStringArray(std::string* out, const std::vector<std::string>& v) {
  *out += "[";
  for (size_t i = 0; i < v.size(); ++i) {
    *out += i ? "," : "";
    common::appendJsonString(out, v[i]);
  }
  *out += "]";
}

void appendSideJson(std::string* out, const PoolConfig& pool) {
  const routing::RouterOptions& o = pool.routing;
  *out += "{\"distribution\":";
  common::appendJsonString(out, routing::distributionName(o.distribution));
  *out += ",\"ketama_compat\":";
  common::appendJsonString(out, routing::ketamaCompatName(o.ketama_compat));
  *out += ",\"hash\":";
  common::appendJsonString(out, routing::hashFunctionName(o.hash));
  *out += ",\"hash_tag\":";
  common::appendJsonString(out, o.hash_tag);
  *out += ",\"servers\":";
  std::vector<std::string> ids;
  for (const auto& s : pool.servers) {
    ids.push_back(s.identity());
  }
  appendStringArray(out, ids);
  *out += "}";
}

void appendReplicaJson(std::string* out, const routing::ReplicaPlan& r) {
  *out += "{\"replicas_before\":" + std::to_string(r.replicas_before);
  *out += ",\"replicas_after\":" + std::to_string(r.replicas_after);
  *out += ",\"method\":";
  common::appendJsonString(out, routing::migrationMethodName(r.method));
  *out += ",\"samples\":" + std::to_string(r.samples);
  *out += ",\"changed\":" + number(r.changed);
  *out += ",\"order_only\":" + number(r.order_only);
  *out += ",\"none_kept\":" + number(r.none_kept);
  *out += ",\"membership\":[";
  for (size_t k = 0; k < r.servers.size(); ++k) {
    const routing::ReplicaServerShare& s = r.servers[k];
    *out += k ? "," : "";
    *out += "{\"server\":";
    common::appendJsonString(out, s.id);
    *out += ",\"before\":" + number(s.before);
    *out += ",\"after\":" + number(s.after);
    *out += ",\"lost\":" + number(s.lost);
    *out += ",\"gained\":" + number(s.gained);
    *out += "}";
  }
  *out += "]}";
}

void appendPlanJson(std::string* out, const routing::MigrationPlan& p,
                    routing::Distribution distribution,
                    const std::optional<routing::ReplicaPlan>& replicas) {
  *out += "{\"distribution\":";
  common::appendJsonString(out, routing::distributionName(distribution));
  *out += ",\"method\":";
  common::appendJsonString(out, routing::migrationMethodName(p.method));
  *out += ",\"samples\":" + std::to_string(p.samples);
  *out += ",\"moved\":" + number(p.moved);
  *out += ",\"ownership\":[";
  const std::vector<PlanServerRow> servers = planServerRows(p);
  for (size_t k = 0; k < servers.size(); ++k) {
    const PlanServerRow& s = servers[k];
    *out += k ? "," : "";
    *out += "{\"server\":";
    common::appendJsonString(out, s.id);
    *out += ",\"before\":" + number(s.before ? p.ownership_before[*s.before] : 0);
    *out += ",\"after\":" + number(s.after ? p.ownership_after[*s.after] : 0);
    *out += ",\"moved_out\":" + number(s.before ? p.movedOut(*s.before) : 0);
    *out += ",\"moved_in\":" + number(s.after ? p.movedIn(*s.after) : 0);
    *out += "}";
  }
  *out += "],\"matrix\":[";
  const std::vector<routing::MigrationCell> cells = p.cells();
  for (size_t k = 0; k < cells.size(); ++k) {
    *out += k ? "," : "";
    *out += "{\"from\":";
    common::appendJsonString(out, p.before[cells[k].from]);
    *out += ",\"to\":";
    common::appendJsonString(out, p.after[cells[k].to]);
    *out += ",\"fraction\":" + number(cells[k].fraction);
    *out += std::string(",\"moved\":") + (cells[k].moved ? "true" : "false") + "}";
  }
  *out += "]";
  if (replicas) {
    *out += ",\"replica_sets\":";
    appendReplicaJson(out, *replicas);
  }
  *out += "}";
}

}  // namespace

void appendPoolChangeJson(std::string* out, const PoolChangePlan& pp) {
  *out += "{\"name\":";
  common::appendJsonString(out, pp.after->name);
  *out += ",\"before\":";
  appendSideJson(out, *pp.before);
  *out += ",\"after\":";
  appendSideJson(out, *pp.after);
  *out += ",\"plan\":";
  appendPlanJson(out, pp.plan, pp.after->routing.distribution, pp.replicas);
  *out += ",\"ideal_moved\":" + number(pp.ideal_moved) + ",\"warning\":";
  if (pp.warning.empty()) {
    *out += "null";
  } else {
    common::appendJsonString(out, pp.warning);
  }
  *out += ",\"modula\":";
  if (pp.modula) {
    appendPlanJson(out, *pp.modula, routing::Distribution::Modula,
                   pp.already_modula ? pp.replicas : pp.modula_replicas);
  } else {
    *out += "null,\"modula_error\":";
    common::appendJsonString(out, pp.modula_error);
  }
  *out += "}";
}

}  // namespace mcring::config
