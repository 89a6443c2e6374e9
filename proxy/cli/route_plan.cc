// planRouteChange: each side's routes as the proxy matches them (routing::PrefixTable), asked
// for one representative key per family: the prefix itself, whose longest match on a side is
// the family's route there, and the empty key for the keys no prefix matches.
#include "proxy/cli/route_plan.h"

#include <algorithm>
#include <set>

#include "proxy/common/json.h"
#include "proxy/routing/prefix_table.h"

namespace mcring::cli {
namespace {

class Side {
 public:
  explicit Side(const config::PoolConfig& pool) : pool_(pool) {
    for (size_t i = 0; i < pool.routes.size(); ++i) {
      const config::RouteConfig& r = pool.routes[i];
      if (r.is_default) {
        table_.setDefault(static_cast<uint32_t>(i));
      } else {
        table_.add(r.prefix, static_cast<uint32_t>(i));
      }
    }
  }

  // The route and pool that take `key`.
  std::pair<std::string, std::string> place(const std::string& key) const {
    if (!pool_.routed()) {
      return {"servers", pool_.name};
    }
    uint32_t i = table_.match(key);
    if (i == routing::PrefixTable::kNoRoute) {
      return {"no route", ""};
    }
    return {pool_.routes[i].name(), pool_.routes[i].pool};
  }

 private:
  const config::PoolConfig& pool_;
  routing::PrefixTable table_;
};

std::string familyLabel(const RouteFamily& f) {
  return f.prefix.empty() ? "other keys" : "'" + f.prefix + "'...";
}

std::string side(const std::string& route, const std::string& pool) {
  if (pool.empty()) {
    return route;
  }
  return (route == "servers" ? "own servers" : route) + " -> " + pool;
}

std::string verdict(const RouteFamily& f) {
  if (!f.moves()) {
    return "stays";
  }
  if (f.after_pool.empty()) {
    return "LOSES ITS ROUTE (SERVER_ERROR)";
  }
  if (f.before_pool.empty()) {
    return "gains a route";
  }
  return "MOVES to another pool (misses there until set again)";
}

}  // namespace

size_t RoutePlan::moving() const {
  return static_cast<size_t>(
      std::count_if(families.begin(), families.end(), [](const auto& f) { return f.moves(); }));
}

RoutePlan planRouteChange(const config::PoolConfig& before, const config::PoolConfig& after) {
  RoutePlan plan;
  plan.pool = after.name;
  std::set<std::string> prefixes;
  for (const auto* p : {&before, &after}) {
    for (const config::RouteConfig& r : p->routes) {
      if (!r.is_default) {
        prefixes.insert(r.prefix);
      }
    }
  }
  Side a(before);
  Side b(after);
  auto add = [&](const std::string& prefix) {
    RouteFamily f;
    f.prefix = prefix;
    std::tie(f.before_route, f.before_pool) = a.place(prefix);
    std::tie(f.after_route, f.after_pool) = b.place(prefix);
    plan.families.push_back(std::move(f));
  };
  for (const std::string& p : prefixes) {
    add(p);
  }
  add("");
  return plan;
}

void renderRoutePlanHuman(const RoutePlan& plan, std::string* out) {
  *out += "Pool '" + plan.pool + "' (routes): a key family moves when the pool its route sends\n";
  *out += "it to changes.\n";
  size_t w_keys = 4;
  size_t w_before = 3;
  size_t w_after = 3;
  for (const auto& f : plan.families) {
    w_keys = std::max(w_keys, familyLabel(f).size());
    w_before = std::max(w_before, side(f.before_route, f.before_pool).size());
    w_after = std::max(w_after, side(f.after_route, f.after_pool).size());
  }
  auto pad = [](std::string s, size_t w) {
    s.resize(std::max(s.size(), w), ' ');
    return s;
  };
  *out += "  " + pad("keys", w_keys) + "  " + pad("OLD", w_before) + "  NEW\n";
  for (const auto& f : plan.families) {
    *out += "  " + pad(familyLabel(f), w_keys) + "  " +
            pad(side(f.before_route, f.before_pool), w_before) + "  " +
            pad(side(f.after_route, f.after_pool), w_after) + "  " + verdict(f) + "\n";
  }
  *out += "  " + std::to_string(plan.moving()) + " of " + std::to_string(plan.families.size()) +
          " key families change pool.\n\n";
}

void appendRoutePlanJson(std::string* out, const RoutePlan& plan) {
  *out += "{\"pool\":";
  common::appendJsonString(out, plan.pool);
  *out += ",\"routes\":[";
  for (size_t i = 0; i < plan.families.size(); ++i) {
    const RouteFamily& f = plan.families[i];
    *out += i ? ",{\"prefix\":" : "{\"prefix\":";
    if (f.prefix.empty()) {
      *out += "null";
    } else {
      common::appendJsonString(out, f.prefix);
    }
    for (auto [label, route, pool] : {std::tuple{",\"before\":", &f.before_route, &f.before_pool},
                                      std::tuple{",\"after\":", &f.after_route, &f.after_pool}}) {
      *out += label;
      *out += "{\"route\":";
      common::appendJsonString(out, *route);
      *out += ",\"pool\":";
      if (pool->empty()) {
        *out += "null";
      } else {
        common::appendJsonString(out, *pool);
      }
      *out += "}";
    }
    *out += f.moves() ? ",\"moves\":true}" : ",\"moves\":false}";
  }
  *out += "]}";
}

}  // namespace mcring::cli
