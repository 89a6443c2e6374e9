// The routes' report as `stats routes`, /metrics and /routes show it: counters summed over
// workers, beside the config's pool and shadow pool; the shadow agreement ratio; label values
// escaped; a route that left the config no longer shown.
#include "proxy/admin/route_report.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "proxy/admin/stats_reporter.h"

namespace mcring::core {
namespace {

config::RouteConfig route(std::string prefix, std::string pool) {
  config::RouteConfig r;
  r.prefix = std::move(prefix);
  r.pool = std::move(pool);
  return r;
}

config::RouteConfig defaultRoute(std::string pool) {
  config::RouteConfig r;
  r.is_default = true;
  r.pool = std::move(pool);
  return r;
}

std::shared_ptr<const config::Topology> topology(
    std::vector<std::pair<std::string, std::vector<config::RouteConfig>>> listeners) {
  auto t = std::make_shared<config::Topology>();
  for (auto& [name, routes] : listeners) {
    auto p = std::make_shared<config::PoolTopology>();
    p->config.name = name;
    p->config.routes = std::move(routes);
    t->pools.push_back(p);
  }
  return t;
}

void count(stats::RouteStatsList& list, const std::string& listener, const std::string& name,
           uint64_t requests, uint64_t compared = 0, uint64_t agreed = 0) {
  auto s = list.add(listener, name);
  s->requests += requests;
  s->errors += 1;
  s->rate_limited += 2;
  s->failovers += 3;
  s->shadow_sent += 4;
  s->shadow_dropped += 5;
  s->shadow_compared += compared;
  s->shadow_agreed += agreed;
}

// The reply's lines, without their CRLF.
std::vector<std::string> lines(const std::string& reply) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < reply.size()) {
    size_t end = reply.find("\r\n", at);
    REQUIRE(end != std::string::npos);
    out.push_back(reply.substr(at, end - at));
    at = end + 2;
  }
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& line) {
  return std::find(v.begin(), v.end(), line) != v.end();
}

TEST_CASE("stats routes: counters of every worker beside the config's pools, in config order") {
  StatsReporter rep;
  stats::RouteStatsList worker0, worker1;
  rep.addRouteStats(&worker0);
  rep.addRouteStats(&worker1);
  config::RouteConfig sess = route("sess:", "sessions");
  sess.shadow = config::ShadowConfig{"sessions_v2", 100, false, {}};
  rep.setTopology(topology({{"plain", {}}, {"front", {sess, defaultRoute("users")}}}));
  count(worker0, "front", "sess:", 10, 600, 450);
  count(worker1, "front", "sess:", 5, 200, 150);
  count(worker1, "front", "default", 7);

  std::string out;
  REQUIRE(rep.render("routes", &out));
  std::vector<std::string> l = lines(out);
  CHECK(l.front() == "STAT route:front:sess::pool sessions");
  CHECK(l.back() == "END");
  CHECK(has(l, "STAT route:front:sess::shadow_pool sessions_v2"));
  CHECK(has(l, "STAT route:front:sess::requests 15"));
  CHECK(has(l, "STAT route:front:sess::errors 2"));
  CHECK(has(l, "STAT route:front:sess::rate_limited 4"));
  CHECK(has(l, "STAT route:front:sess::failovers 6"));
  CHECK(has(l, "STAT route:front:sess::shadow_sent 8"));
  CHECK(has(l, "STAT route:front:sess::shadow_dropped 10"));
  CHECK(has(l, "STAT route:front:sess::shadow_compared 800"));
  CHECK(has(l, "STAT route:front:sess::shadow_agreed 600"));
  CHECK(has(l, "STAT route:front:sess::shadow_agreement 0.7500"));
  CHECK(has(l, "STAT route:front:default:pool users"));
  CHECK(has(l, "STAT route:front:default:shadow_pool -"));
  CHECK(has(l, "STAT route:front:default:requests 7"));
  CHECK(has(l, "STAT route:front:default:shadow_agreement -"));
  CHECK(l.size() == 2 * 11 + 1);
  // Every line is three tokens, as exporters of memcached's stats read them.
  for (const std::string& line : l) {
    if (line != "END") {
      CHECK(std::count(line.begin(), line.end(), ' ') == 2);
    }
  }
  // The sess: block comes first (config order), the default's after it.
  CHECK(out.find("route:front:sess::") < out.find("route:front:default:"));
}

TEST_CASE("stats routes: END alone before a topology and without routes") {
  StatsReporter rep;
  std::string out;
  REQUIRE(rep.render("routes", &out));
  CHECK(out == "END\r\n");
  rep.setTopology(topology({{"plain", {}}}));
  out.clear();
  REQUIRE(rep.render("routes ", &out));
  CHECK(out == "END\r\n");
}

TEST_CASE("stats routes: a route that left the config is not shown; a new one shows zeros") {
  StatsReporter rep;
  stats::RouteStatsList worker;
  rep.addRouteStats(&worker);
  count(worker, "front", "old:", 9);
  rep.setTopology(topology({{"front", {route("new:", "b")}}}));
  std::string out;
  REQUIRE(rep.render("routes", &out));
  CHECK(out.find("old:") == std::string::npos);
  CHECK(out.find("STAT route:front:new::requests 0\r\n") != std::string::npos);
}

TEST_CASE("stats routes: a name a STAT line cannot carry shows its spaces and controls as _") {
  std::vector<RouteRow> rows(1);
  rows[0].listener = "front end";
  rows[0].config = route("a b\r\n", "p");
  std::string out;
  appendRouteStatLines(rows, &out);
  CHECK(out.starts_with("STAT route:front_end:a_b__:pool p\r\n"));
}

TEST_CASE("metrics: one sample per route per family, labels listener and route, escaped") {
  stats::RouteStatsList worker;
  config::RouteConfig quoted = route("say\"hi\\", "p");
  quoted.shadow = config::ShadowConfig{"p2", 50, false, {}};
  auto t = topology({{"front", {quoted, defaultRoute("users")}}});
  count(worker, "front", "say\"hi\\", 3, 4, 1);
  count(worker, "front", "default", 2);
  count(worker, "gone", "x:", 100);  // no longer in the config: not exported
  std::string out;
  appendRouteMetrics(buildRouteReport(*t, stats::sumRouteStats({&worker})), &out);
  const std::string quotedLabels = "{listener=\"front\",route=\"say\\\"hi\\\\\"}";
  const std::string defaultLabels = "{listener=\"front\",route=\"default\"}";
  for (const char* family : {"requests", "errors", "rate_limited", "failovers", "shadow_sent",
                             "shadow_dropped", "shadow_compared", "shadow_agreed"}) {
    const std::string name = std::string("mcring_route_") + family + "_total";
    CAPTURE(name);
    CHECK(out.find("# HELP " + name + " ") != std::string::npos);
    CHECK(out.find("# TYPE " + name + " counter\n") != std::string::npos);
    CHECK(out.find("\n" + name + quotedLabels + " ") != std::string::npos);
    CHECK(out.find("\n" + name + defaultLabels + " ") != std::string::npos);
  }
  CHECK(out.find("\nmcring_route_requests_total" + quotedLabels + " 3\n") != std::string::npos);
  CHECK(out.find("\nmcring_route_requests_total" + defaultLabels + " 2\n") != std::string::npos);
  CHECK(out.find("\nmcring_route_shadow_dropped_total" + quotedLabels + " 5\n") !=
        std::string::npos);
  CHECK(out.find("# TYPE mcring_route_shadow_agreement gauge\n") != std::string::npos);
  // The agreement gauge only where something was compared.
  CHECK(out.find("\nmcring_route_shadow_agreement" + quotedLabels + " 0.25\n") !=
        std::string::npos);
  CHECK(out.find("mcring_route_shadow_agreement" + defaultLabels) == std::string::npos);
  CHECK(out.find("gone") == std::string::npos);
  CHECK(out.find("x:") == std::string::npos);
}

TEST_CASE("metrics: families without samples when no pool has routes") {
  auto t = topology({{"plain", {}}});
  std::string out;
  appendRouteMetrics(buildRouteReport(*t, {}), &out);
  CHECK(out.find("# TYPE mcring_route_requests_total counter\n") != std::string::npos);
  CHECK(out.find("{") == std::string::npos);
}

TEST_CASE("a repeated route name is shown once (one label set, one series)") {
  auto t = topology({{"front", {route("a:", "p"), route("a:", "q")}}});
  std::vector<RouteRow> rows = buildRouteReport(*t, {});
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].config.pool == "p");
}

TEST_CASE("agreement: agreed / compared, none while nothing was compared") {
  RouteRow r;
  CHECK_FALSE(r.agreement().has_value());
  r.totals.shadow_compared = 3;
  r.totals.shadow_agreed = 2;
  REQUIRE(r.agreement().has_value());
  CHECK(*r.agreement() == doctest::Approx(2.0 / 3));
}

TEST_CASE("/routes JSON: per listener its routes with config and counters") {
  stats::RouteStatsList worker;
  config::RouteConfig user = route("user:", "users");
  user.failover = {"users_dr"};
  user.max_ttl = 3600;
  user.rate_limit = config::RateLimitConfig{5000, 500};
  config::RouteConfig sess = route("sess:", "sessions");
  sess.shadow = config::ShadowConfig{"sessions_v2", 25, true, {}};
  auto t = topology({{"a", {user}}, {"plain", {}}, {"b", {sess, defaultRoute("users")}}});
  count(worker, "b", "sess:", 8, 10, 9);
  std::string json = routesJson(buildRouteReport(*t, stats::sumRouteStats({&worker})));
  CHECK(json ==
        "{\"listeners\":[{\"name\":\"a\",\"routes\":[{\"route\":\"user:\",\"prefix\":\"user:\","
        "\"default\":false,\"pool\":\"users\",\"shadow\":null,\"failover\":[\"users_dr\"],"
        "\"failover_on_miss\":false,\"max_ttl\":3600,\"rate_limit\":{\"requests_per_second\":"
        "5000,\"burst\":500},\"counters\":{\"requests\":0,\"errors\":0,\"rate_limited\":0,"
        "\"failovers\":0,\"shadow_sent\":0,\"shadow_dropped\":0,\"shadow_compared\":0,"
        "\"shadow_agreed\":0},\"shadow_agreement\":null}]},{\"name\":\"b\",\"routes\":[{"
        "\"route\":\"sess:\",\"prefix\":\"sess:\",\"default\":false,\"pool\":\"sessions\","
        "\"shadow\":{\"pool\":\"sessions_v2\",\"percent\":25,\"writes_only\":true},"
        "\"failover\":[],\"failover_on_miss\":false,\"max_ttl\":0,\"rate_limit\":null,"
        "\"counters\":{\"requests\":8,\"errors\":1,\"rate_limited\":2,\"failovers\":3,"
        "\"shadow_sent\":4,\"shadow_dropped\":5,\"shadow_compared\":10,\"shadow_agreed\":9},"
        "\"shadow_agreement\":0.9},{\"route\":\"default\",\"prefix\":\"\",\"default\":true,"
        "\"pool\":\"users\",\"shadow\":null,\"failover\":[],\"failover_on_miss\":false,"
        "\"max_ttl\":0,\"rate_limit\":null,\"counters\":{\"requests\":0,\"errors\":0,"
        "\"rate_limited\":0,\"failovers\":0,\"shadow_sent\":0,\"shadow_dropped\":0,"
        "\"shadow_compared\":0,\"shadow_agreed\":0},\"shadow_agreement\":null}]}]}\n");
  CHECK(routesJson({}) == "{\"listeners\":[]}\n");
}

}  // namespace
}  // namespace mcring::core
