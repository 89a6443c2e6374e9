// setRoutes: each route a mapping of route keys (prefix or default, pool, shadow, max_ttl,
// failover, failover_on_miss, rate_limit), with the pool key table's error and suggestion style.
#include "config/route_keys.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <span>
#include <string_view>

#include "config/parse.h"

namespace mcring::config {
namespace {

constexpr uint64_t kIntMax = std::numeric_limits<int32_t>::max();

constexpr std::array<std::string_view, 8> kRouteKeys = {
    "prefix", "default", "pool", "shadow", "max_ttl", "failover", "failover_on_miss", "rate_limit"};
constexpr std::array<std::string_view, 3> kShadowKeys = {"pool", "percent", "writes_only"};
constexpr std::array<std::string_view, 2> kRateLimitKeys = {"requests_per_second", "burst"};

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// "unknown key 'x'; did you mean 'y'?" or "(known keys: ...)", as for pool keys.
void unknownKey(const ValueReader::Entry& e, std::string_view where,
                std::span<const std::string_view> known) {
  std::string message = "unknown " + std::string(where) + " key " + quoted(e.key);
  std::string_view near = closestName(e.key, known);
  if (!near.empty()) {
    message += "; did you mean " + quoted(near) + "?";
  } else {
    message += " (known keys: ";
    for (size_t i = 0; i < known.size(); ++i) {
      message += (i == 0 ? "" : ", ") + std::string(known[i]);
    }
    message += ")";
  }
  // At the key itself, in the context of the mapping that holds it.
  e.value->error(message);
}

// The entries of a mapping by key; a key given twice is reported at its second place.
struct Fields {
  std::vector<ValueReader::Entry> entries;
  ValueReader* find(std::string_view key) {
    for (auto& e : entries) {
      if (e.key == key) {
        return e.value.get();
      }
    }
    return nullptr;
  }
};

// Reads `map` as a mapping whose keys must be among `known`; nullopt when it is not a mapping.
std::optional<Fields> readFields(ValueReader& map, std::string_view what, std::string_view where,
                                 std::span<const std::string_view> known) {
  auto entries = map.mapping(what);
  if (!entries) {
    return std::nullopt;
  }
  Fields fields;
  for (auto& e : *entries) {
    if (std::find(known.begin(), known.end(), e.key) == known.end()) {
      unknownKey(e, where, known);
      continue;
    }
    if (ValueReader* first = fields.find(e.key)) {
      e.value->error("duplicate key " + quoted(e.key) + " (first at line " +
                     std::to_string(first->mark().line) + ")");
      continue;
    }
    fields.entries.push_back(std::move(e));
  }
  return fields;
}

std::optional<uint64_t> number(ValueReader& v, uint64_t min, uint64_t max) {
  auto text = v.scalar("a non-negative integer");
  if (!text) {
    return std::nullopt;
  }
  std::string error;
  auto n = parseUint(*text, min, max, &error);
  if (!n) {
    v.error(error);
  }
  return n;
}

std::optional<bool> boolean(ValueReader& v) {
  auto text = v.scalar("true or false");
  if (!text) {
    return std::nullopt;
  }
  std::string error;
  auto b = parseBool(*text, &error);
  if (!b) {
    v.error(error);
  }
  return b;
}

std::optional<std::string> poolName(ValueReader& v) {
  auto text = v.scalar("a pool name");
  if (text && text->empty()) {
    v.error("expected a pool name, got an empty string");
    return std::nullopt;
  }
  return text;
}

// Printable bytes only: a prefix is compared with keys, which memcached's text protocol
// delimits by whitespace and which may not hold control bytes.
std::optional<std::string> prefixOf(ValueReader& v) {
  auto text = v.scalar("a key prefix");
  if (!text) {
    return std::nullopt;
  }
  if (text->empty()) {
    v.error("empty prefix: use 'default: POOL' for the keys no prefix matches");
    return std::nullopt;
  }
  if (text->size() > kMaxRoutePrefix) {
    v.error("prefix of " + std::to_string(text->size()) + " bytes is longer than a key (" +
            std::to_string(kMaxRoutePrefix) + ")");
    return std::nullopt;
  }
  if (*text == "default") {
    v.error("prefix 'default' would share the default route's name in stats and metrics");
    return std::nullopt;
  }
  for (unsigned char c : *text) {
    if (c <= ' ' || c == 0x7f) {
      v.error("a prefix cannot hold whitespace or control bytes (memcached keys do not)");
      return std::nullopt;
    }
  }
  return text;
}

std::optional<ShadowConfig> shadowOf(ValueReader& v) {
  auto fields =
      readFields(v, "a shadow mapping (pool, percent, writes_only)", "shadow", kShadowKeys);
  if (!fields) {
    return std::nullopt;
  }
  ShadowConfig shadow;
  bool ok = true;
  if (ValueReader* p = fields->find("pool")) {
    auto name = poolName(*p);
    ok = ok && name.has_value();
    shadow.pool = name.value_or("");
    shadow.mark = p->mark();
  } else {
    v.error("a shadow needs 'pool' (the pool that gets the copies)");
    ok = false;
  }
  if (ValueReader* p = fields->find("percent")) {
    auto n = number(*p, 1, 100);
    ok = ok && n.has_value();
    shadow.percent = static_cast<uint32_t>(n.value_or(100));
  }
  if (ValueReader* w = fields->find("writes_only")) {
    auto b = boolean(*w);
    ok = ok && b.has_value();
    shadow.writes_only = b.value_or(false);
  }
  return ok ? std::optional(shadow) : std::nullopt;
}

std::optional<RateLimitConfig> rateLimitOf(ValueReader& v) {
  auto fields = readFields(v, "a rate_limit mapping (requests_per_second, burst)", "rate_limit",
                           kRateLimitKeys);
  if (!fields) {
    return std::nullopt;
  }
  RateLimitConfig limit;
  bool ok = true;
  if (ValueReader* r = fields->find("requests_per_second")) {
    auto n = number(*r, 1, kIntMax);
    ok = ok && n.has_value();
    limit.requests_per_second = static_cast<uint32_t>(n.value_or(0));
  } else {
    v.error("a rate_limit needs 'requests_per_second'");
    ok = false;
  }
  if (ValueReader* b = fields->find("burst")) {
    auto n = number(*b, 0, kIntMax);
    ok = ok && n.has_value();
    limit.burst = static_cast<uint32_t>(n.value_or(0));
  }
  return ok ? std::optional(limit) : std::nullopt;
}

// One route; nullopt when anything in it is wrong (reported).
std::optional<RouteConfig> routeOf(ValueReader& v) {
  auto fields =
      readFields(v, "a route mapping (prefix or default, pool, ...)", "route", kRouteKeys);
  if (!fields) {
    return std::nullopt;
  }
  RouteConfig route;
  route.mark = v.mark();
  bool ok = true;
  ValueReader* prefix = fields->find("prefix");
  ValueReader* def = fields->find("default");
  ValueReader* pool = fields->find("pool");
  if (prefix != nullptr && def != nullptr) {
    def->error("a route has either 'prefix' or 'default', not both");
    ok = false;
  } else if (prefix == nullptr && def == nullptr) {
    v.error("a route needs 'prefix' (with 'pool') or 'default: POOL'");
    ok = false;
  } else if (prefix != nullptr) {
    auto p = prefixOf(*prefix);
    ok = ok && p.has_value();
    route.prefix = p.value_or("");
    if (pool == nullptr) {
      v.error("the route of prefix " + quoted(route.prefix) + " needs 'pool'");
      ok = false;
    } else {
      auto name = poolName(*pool);
      ok = ok && name.has_value();
      route.pool = name.value_or("");
      route.pool_mark = pool->mark();
    }
  } else {
    route.is_default = true;
    auto name = poolName(*def);
    ok = ok && name.has_value();
    route.pool = name.value_or("");
    route.pool_mark = def->mark();
    if (pool != nullptr) {
      pool->error("a default route names its pool in 'default:'; remove 'pool'");
      ok = false;
    }
  }
  if (ValueReader* s = fields->find("shadow")) {
    route.shadow = shadowOf(*s);
    ok = ok && route.shadow.has_value();
    if (route.shadow && !route.pool.empty() && route.shadow->pool == route.pool) {
      s->error("the shadow pool is the route's pool " + quoted(route.pool) +
               ": a shadow copies requests to another pool");
      ok = false;
    }
  }
  if (ValueReader* t = fields->find("max_ttl")) {
    auto n = number(*t, 1, kMaxRouteTtl);
    ok = ok && n.has_value();
    route.max_ttl = static_cast<uint32_t>(n.value_or(0));
  }
  if (ValueReader* f = fields->find("failover")) {
    if (auto elements = f->sequence("a list of pool names")) {
      if (elements->empty()) {
        f->error("empty failover list: name the pools to try, or remove 'failover'");
        ok = false;
      }
      for (auto& element : *elements) {
        auto name = poolName(*element);
        if (!name) {
          ok = false;
          continue;
        }
        if (*name == route.pool) {
          element->error("failover pool " + quoted(*name) + " is the route's own pool");
          ok = false;
          continue;
        }
        if (std::find(route.failover.begin(), route.failover.end(), *name) !=
            route.failover.end()) {
          element->error("failover pool " + quoted(*name) + " is listed twice");
          ok = false;
          continue;
        }
        route.failover.push_back(*name);
        route.failover_marks.push_back(element->mark());
      }
    } else {
      ok = false;
    }
  }
  if (ValueReader* m = fields->find("failover_on_miss")) {
    auto b = boolean(*m);
    ok = ok && b.has_value();
    route.failover_on_miss = b.value_or(false);
    if (b.value_or(false) && route.failover.empty() && fields->find("failover") == nullptr) {
      m->error("failover_on_miss: true needs 'failover' (the pools to try)");
      ok = false;
    }
  }
  if (ValueReader* r = fields->find("rate_limit")) {
    route.rate_limit = rateLimitOf(*r);
    ok = ok && route.rate_limit.has_value();
  }
  return ok ? std::optional(route) : std::nullopt;
}

}  // namespace

void setRoutes(ValueReader& v, PoolConfig& pool) {
  auto elements = v.sequence("a list of routes");
  if (!elements) {
    return;
  }
  if (elements->empty()) {
    v.error("empty routes list: a pool with routes needs at least one");
    return;
  }
  if (elements->size() > kMaxRoutes) {
    v.error(std::to_string(elements->size()) + " routes; at most " + std::to_string(kMaxRoutes) +
            " are allowed");
    return;
  }
  std::vector<RouteConfig> routes;
  std::optional<size_t> default_at;
  for (size_t i = 0; i < elements->size(); ++i) {
    ValueReader& element = *(*elements)[i];
    auto route = routeOf(element);
    if (!route) {
      continue;
    }
    if (route->is_default) {
      if (default_at) {
        element.error("a second default route (the first is routes[" + std::to_string(*default_at) +
                      "])");
        continue;
      }
      default_at = i;
    } else {
      for (size_t j = 0; j < routes.size(); ++j) {
        if (!routes[j].is_default && routes[j].prefix == route->prefix) {
          element.error("duplicate prefix " + quoted(route->prefix) + " (first at line " +
                        std::to_string(routes[j].mark.line) + ")");
          break;
        }
      }
    }
    routes.push_back(std::move(*route));
  }
  // The routes that parsed are kept even when others did not (the file is refused either way):
  // the loader then checks the pools they name, so every problem is reported at once.
  pool.routes = std::move(routes);
}

}  // namespace mcring::config
