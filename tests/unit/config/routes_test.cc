// The `routes` pool key: a front listener sending keys by prefix to other pools. Parsing,
// every validation error at its FILE:LINE:COL, and what `listen` being optional means.
#include <doctest/doctest.h>

#include <ostream>

#include "config/config.h"
#include "config/topology.h"

namespace mcring::config {
namespace {

struct Errors {
  Errors(std::initializer_list<std::string> l) : lines(l) {}
  explicit Errors(std::vector<std::string> l) : lines(std::move(l)) {}
  bool operator==(const Errors&) const = default;
  friend std::ostream& operator<<(std::ostream& os, const Errors& e) {
    for (const std::string& line : e.lines) {
      os << "\n  " << line;
    }
    return os << "\n";
  }
  std::vector<std::string> lines;
};

Errors errorsOf(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "t.yml");
  std::vector<std::string> out;
  for (const ConfigError& e : r.errors) {
    out.push_back(e.toString());
  }
  CHECK(r.config.has_value() == out.empty());
  return Errors(std::move(out));
}

Config loadOk(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "t.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.ok());
  return *r.config;
}

const PoolConfig& pool(const Config& c, const std::string& name) {
  for (const PoolConfig& p : c.pools) {
    if (p.name == name) {
      return p;
    }
  }
  FAIL("no pool " << name);
  return c.pools.front();
}

// Three target pools (lines 1-3), then the front whose routes each test writes (line 4 on).
const std::string kPools =
    "users: {listen: 127.0.0.1:30001, servers: [127.0.0.1:11211:1]}\n"
    "sessions: {listen: 127.0.0.1:30002, servers: [127.0.0.1:11212:1]}\n"
    "sessions_v2: {listen: 127.0.0.1:30003, servers: [127.0.0.1:11213:1]}\n";

Errors routeErrors(const std::string& routes) {
  return errorsOf(kPools + "front:\n  listen: 127.0.0.1:22122\n  routes:\n" + routes);
}

TEST_CASE("the issue's example loads: every route key sets its field") {
  Config c = loadOk(R"(users:
  hash: fnv1a_64
  distribution: ketama
  servers: [127.0.0.1:11211:1, 127.0.0.1:11212:1]
users_dr: { servers: [127.0.0.1:11214:1] }
sessions: { servers: [127.0.0.1:11215:1] }
sessions_v2: { servers: [127.0.0.1:11216:1] }
front:
  listen: 127.0.0.1:22122
  routes:
    - prefix: "sess:"
      pool: sessions
      shadow: { pool: sessions_v2, percent: 100 }
    - prefix: "user:"
      pool: users
      max_ttl: 3600
      failover: [users_dr]
      failover_on_miss: false
      rate_limit: { requests_per_second: 5000, burst: 500 }
    - default: users
)");
  const PoolConfig& front = pool(c, "front");
  CHECK(front.routed());
  CHECK(front.listens);
  CHECK(front.servers.empty());
  REQUIRE(front.routes.size() == 3);
  const RouteConfig& sess = front.routes[0];
  CHECK(sess.prefix == "sess:");
  CHECK(!sess.is_default);
  CHECK(sess.pool == "sessions");
  REQUIRE(sess.shadow);
  CHECK(sess.shadow->pool == "sessions_v2");
  CHECK(sess.shadow->percent == 100);
  CHECK(!sess.shadow->writes_only);
  CHECK(sess.max_ttl == 0);
  CHECK(!sess.rate_limit);
  CHECK(sess.mark.line == 11);
  CHECK(sess.pool_mark.line == 12);
  const RouteConfig& user = front.routes[1];
  CHECK(user.name() == "user:");
  CHECK(user.max_ttl == 3600);
  CHECK(user.failover == std::vector<std::string>{"users_dr"});
  CHECK(!user.failover_on_miss);
  REQUIRE(user.rate_limit);
  CHECK(user.rate_limit->requests_per_second == 5000);
  CHECK(user.rate_limit->burst == 500);
  const RouteConfig& def = front.routes[2];
  CHECK(def.is_default);
  CHECK(def.prefix.empty());
  CHECK(def.name() == "default");
  CHECK(def.pool == "users");
  for (const char* name : {"users", "users_dr", "sessions", "sessions_v2"}) {  // no listen
    CHECK(!pool(c, name).listens);
    CHECK(!pool(c, name).routed());
  }
}

TEST_CASE("config/examples/routes.yml loads: one routed listener, four pools routed to") {
  LoadResult r = loadConfigFile("config/examples/routes.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.config);
  const PoolConfig& front = pool(*r.config, "front");
  CHECK(front.routed());
  CHECK(front.routes.size() == 3);
  int listening = 0;
  for (const PoolConfig& p : r.config->pools) {
    listening += p.listens ? 1 : 0;
  }
  CHECK(listening == 1);
}

TEST_CASE("Topology builds a pool with routes (no router) and pools without listen") {
  LoadResult r = loadConfigFile("config/examples/routes.yml");
  REQUIRE(r.ok());
  std::vector<std::string> errors;
  auto topo = Topology::build(*r.config, 1, &errors);
  for (const std::string& e : errors) {
    FAIL_CHECK(e);
  }
  REQUIRE(topo);
  const PoolTopology* front = topo->findPool("front");
  REQUIRE(front);
  CHECK(front->router == nullptr);  // no servers of its own: Router::build refuses 0 servers
  CHECK(front->server_addresses.empty());
  CHECK(front->listen_address.toString() == "127.0.0.1:22122");
  const PoolTopology* users = topo->findPool("users");
  REQUIRE(users);
  CHECK(users->router != nullptr);
  CHECK(users->server_addresses.size() == 2);
  CHECK(!users->config.listens);
}

TEST_CASE("shadow writes_only and percent, failover_on_miss, burst default") {
  Config c = loadOk(kPools + R"(front:
  listen: 127.0.0.1:22122
  routes:
    - prefix: "s:"
      pool: sessions
      shadow: { pool: sessions_v2, percent: 5, writes_only: true }
      failover: [users, sessions_v2]
      failover_on_miss: true
      rate_limit: { requests_per_second: 1 }
)");
  const RouteConfig& r = pool(c, "front").routes.at(0);
  CHECK(r.shadow->percent == 5);
  CHECK(r.shadow->writes_only);
  CHECK(r.failover == std::vector<std::string>{"users", "sessions_v2"});
  CHECK(r.failover_on_miss);
  CHECK(r.rate_limit->requests_per_second == 1);
  CHECK(r.rate_limit->burst == 0);
}

TEST_CASE("an ordinary pool still needs listen unless a route sends to it") {
  CHECK(errorsOf("a:\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:1:1: pool 'a': pool 'a' has no listen and no route sends to it"});
  // Named only as a shadow or a failover pool counts as being sent to.
  Config c = loadOk(kPools + "dr: {servers: [127.0.0.1:9:1]}\n" + R"(front:
  listen: 127.0.0.1:22122
  routes:
    - prefix: "s:"
      pool: sessions
      shadow: { pool: sessions_v2 }
      failover: [dr]
    - default: users
)");
  CHECK(!pool(c, "dr").listens);
}

TEST_CASE("a pool with routes needs listen and has no servers") {
  CHECK(errorsOf(kPools + "front:\n  routes:\n    - default: users\n") ==
        Errors{"t.yml:5:3: pool 'front': a pool with routes needs 'listen' (it is the listener "
               "its routes serve)"});
  CHECK(errorsOf(kPools + "front:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n  routes:\n"
                          "    - default: users\n") ==
        Errors{"t.yml:6:3: pool 'front': a pool with routes has no servers of its own (its "
               "routes' pools have them): remove 'servers' or 'routes'"});
}

TEST_CASE("route shape errors, each at its line and column") {
  CHECK(routeErrors("    - pool: users\n") ==
        Errors{"t.yml:7:7: pool 'front': routes[0]: a route needs 'prefix' (with 'pool') or "
               "'default: POOL'"});
  CHECK(routeErrors("    - prefix: a\n      default: users\n") ==
        Errors{"t.yml:8:16: pool 'front': routes[0]: default: a route has either 'prefix' or "
               "'default', not both"});
  CHECK(routeErrors("    - prefix: 'a:'\n") ==
        Errors{"t.yml:7:7: pool 'front': routes[0]: the route of prefix 'a:' needs 'pool'"});
  CHECK(routeErrors("    - default: users\n      pool: users\n") ==
        Errors{"t.yml:8:13: pool 'front': routes[0]: pool: a default route names its pool in "
               "'default:'; remove 'pool'"});
  CHECK(routeErrors("    - users\n") ==
        Errors{"t.yml:7:7: pool 'front': routes[0]: expected a route mapping (prefix or "
               "default, pool, ...), got 'users'"});
  CHECK(errorsOf(kPools + "front:\n  listen: 127.0.0.1:1\n  routes: []\n") ==
        Errors{"t.yml:6:11: pool 'front': routes: empty routes list: a pool with routes needs "
               "at least one"});
  CHECK(errorsOf(kPools + "front:\n  listen: 127.0.0.1:1\n  routes: users\n") ==
        Errors{"t.yml:6:11: pool 'front': routes: expected a list of routes, got 'users'"});
}

TEST_CASE("unknown keys in a route, shadow and rate_limit suggest the closest") {
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      max_tll: 5\n") ==
        Errors{"t.yml:9:16: pool 'front': routes[0]: max_tll: unknown route key 'max_tll'; did "
               "you mean 'max_ttl'?"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {pool: sessions, "
                    "precent: 5}\n") ==
        Errors{"t.yml:9:41: pool 'front': routes[0]: shadow: precent: unknown shadow key "
               "'precent'; did you mean 'percent'?"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      rate_limit: {requests_per_second: "
                    "5, brust: 1}\n") ==
        Errors{"t.yml:9:51: pool 'front': routes[0]: rate_limit: brust: unknown rate_limit key "
               "'brust'; did you mean 'burst'?"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      colour: blue\n") ==
        Errors{"t.yml:9:15: pool 'front': routes[0]: colour: unknown route key 'colour' (known "
               "keys: prefix, default, pool, shadow, max_ttl, failover, failover_on_miss, "
               "rate_limit)"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      pool: sessions\n") ==
        Errors{"t.yml:9:13: pool 'front': routes[0]: pool: duplicate key 'pool' (first at line "
               "8)"});
}

TEST_CASE("prefix: non-empty, no whitespace or control bytes, at most 250 bytes") {
  CHECK(routeErrors("    - prefix: ''\n      pool: users\n") ==
        Errors{"t.yml:7:15: pool 'front': routes[0]: prefix: empty prefix: use 'default: POOL' "
               "for the keys no prefix matches"});
  CHECK(routeErrors("    - prefix: 'a b'\n      pool: users\n") ==
        Errors{"t.yml:7:15: pool 'front': routes[0]: prefix: a prefix cannot hold whitespace or "
               "control bytes (memcached keys do not)"});
  CHECK(routeErrors("    - prefix: \"a\\tb\"\n      pool: users\n") ==
        Errors{"t.yml:7:15: pool 'front': routes[0]: prefix: a prefix cannot hold whitespace or "
               "control bytes (memcached keys do not)"});
  CHECK(routeErrors("    - prefix: " + std::string(251, 'k') + "\n      pool: users\n") ==
        Errors{"t.yml:7:15: pool 'front': routes[0]: prefix: prefix of 251 bytes is longer "
               "than a key (250)"});
  Config c = loadOk(kPools + "front:\n  listen: 127.0.0.1:1\n  routes:\n    - prefix: " +
                    std::string(250, 'k') + "\n      pool: users\n");
  CHECK(pool(c, "front").routes.at(0).prefix.size() == 250);
}

TEST_CASE("duplicate prefix, second default, too many routes") {
  CHECK(
      routeErrors("    - prefix: a\n      pool: users\n    - prefix: a\n      pool: sessions\n") ==
      Errors{"t.yml:9:7: pool 'front': routes[1]: duplicate prefix 'a' (first at line 7)"});
  CHECK(routeErrors("    - default: users\n    - default: sessions\n") ==
        Errors{"t.yml:8:7: pool 'front': routes[1]: a second default route (the first is "
               "routes[0])"});
  std::string many;
  for (int i = 0; i < 1001; ++i) {
    many += "    - {prefix: 'p" + std::to_string(i) + ":', pool: users}\n";
  }
  CHECK(routeErrors(many) ==
        Errors{"t.yml:7:5: pool 'front': routes: 1001 routes; at most 1000 are allowed"});
  many.erase(many.rfind("    - "));
  Config c = loadOk(kPools + "front:\n  listen: 127.0.0.1:1\n  routes:\n" + many);
  CHECK(pool(c, "front").routes.size() == 1000);
}

TEST_CASE("route pools: exist, have servers, have no routes of their own") {
  CHECK(routeErrors("    - prefix: a\n      pool: user\n") ==
        Errors{"t.yml:8:13: pool 'front': routes[0]: pool: no pool named 'user'; did you mean "
               "'users'?"});
  CHECK(routeErrors("    - default: nowhere_at_all\n") ==
        Errors{"t.yml:7:16: pool 'front': routes[0]: default: no pool named 'nowhere_at_all'"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {pool: gone}\n") ==
        Errors{"t.yml:9:22: pool 'front': routes[0]: shadow: pool: no pool named 'gone'"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      failover: [sessions, gone]\n") ==
        Errors{"t.yml:9:28: pool 'front': routes[0]: failover[1]: no pool named 'gone'"});
  // Routes do not nest.
  CHECK(errorsOf(kPools + R"(inner:
  listen: 127.0.0.1:2
  routes: [{default: users}]
front:
  listen: 127.0.0.1:1
  routes:
    - default: inner
)") == Errors{"t.yml:10:16: pool 'front': routes[0]: default: pool 'inner' has routes of its "
              "own; a route sends to a pool with servers (routes do not nest)"});
  // A target without servers reports its own missing key, once.
  CHECK(errorsOf("empty: {timeout: 5}\nfront:\n  listen: 127.0.0.1:1\n  routes: [{default: "
                 "empty}]\n") == Errors{"t.yml:1:1: pool 'empty': missing required key 'servers'"});
}

TEST_CASE("shadow and failover pools differ from the route's pool and each other") {
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {pool: users}\n") ==
        Errors{"t.yml:9:15: pool 'front': routes[0]: shadow: the shadow pool is the route's "
               "pool 'users': a shadow copies requests to another pool"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      failover: [users]\n") ==
        Errors{"t.yml:9:18: pool 'front': routes[0]: failover[0]: failover pool 'users' is the "
               "route's own pool"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      failover: [sessions, sessions]\n") ==
        Errors{"t.yml:9:28: pool 'front': routes[0]: failover[1]: failover pool 'sessions' is "
               "listed twice"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      failover: []\n") ==
        Errors{"t.yml:9:17: pool 'front': routes[0]: failover: empty failover list: name the "
               "pools to try, or remove 'failover'"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      failover_on_miss: true\n") ==
        Errors{"t.yml:9:25: pool 'front': routes[0]: failover_on_miss: failover_on_miss: true "
               "needs 'failover' (the pools to try)"});
}

TEST_CASE("numeric ranges: percent 1..100, max_ttl 1..30 days, requests_per_second >= 1") {
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {pool: sessions, percent: "
                    "0}\n") ==
        Errors{"t.yml:9:41: pool 'front': routes[0]: shadow: percent: 0 is out of range "
               "1..100"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {pool: sessions, percent: "
                    "101}\n") ==
        Errors{"t.yml:9:41: pool 'front': routes[0]: shadow: percent: 101 is out of range "
               "1..100"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      shadow: {percent: 5}\n") ==
        Errors{"t.yml:9:15: pool 'front': routes[0]: shadow: a shadow needs 'pool' (the pool "
               "that gets the copies)"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      max_ttl: 0\n") ==
        Errors{"t.yml:9:16: pool 'front': routes[0]: max_ttl: 0 is out of range 1..2592000"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      max_ttl: 2592001\n") ==
        Errors{"t.yml:9:16: pool 'front': routes[0]: max_ttl: 2592001 is out of range "
               "1..2592000"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      rate_limit: {requests_per_second: "
                    "0}\n") ==
        Errors{"t.yml:9:41: pool 'front': routes[0]: rate_limit: requests_per_second: 0 is out "
               "of range 1..2147483647"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      rate_limit: {burst: 5}\n") ==
        Errors{"t.yml:9:19: pool 'front': routes[0]: rate_limit: a rate_limit needs "
               "'requests_per_second'"});
  CHECK(routeErrors("    - prefix: a\n      pool: users\n      rate_limit: 5\n") ==
        Errors{"t.yml:9:19: pool 'front': routes[0]: rate_limit: expected a rate_limit mapping "
               "(requests_per_second, burst), got '5'"});
}

TEST_CASE("a TLS listener needs listen") {
  CHECK(errorsOf("a:\n  servers: [127.0.0.1:2:1]\n  listen_tls: true\n  tls_cert: c\n  tls_key: "
                 "k\nfront:\n  listen: 127.0.0.1:1\n  routes: [{default: a}]\n") ==
        Errors{"t.yml:3:3: pool 'a': a TLS listener needs 'listen' (this pool has no listener)"});
}

}  // namespace
}  // namespace mcring::config
