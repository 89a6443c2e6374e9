// The route tree (dispatch/route_tree.h, route_handlers.h) on its own: which handlers a route's
// config composes and in what order, and what each decides for a request, against a context
// that records what it is asked to do (no sockets, no worker). What the decisions do on the
// wire is routes_test.cc's and tests/integration/test_routes.py's.
#include "proxy/dispatch/route_tree.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/dispatch/route_handlers.h"
#include "proxy/protocol/request_parser.h"

using mcring::core::buildRouteTree;
using mcring::core::PoolRuntime;
using mcring::core::RouteCall;
using mcring::core::RouteContext;
using mcring::core::RouteHandler;
using mcring::core::RouteRuntime;
using mcring::core::ShadowTarget;

namespace {

// What the handlers asked for, in order, as short strings.
class Recorder final : public RouteContext {
 public:
  std::vector<std::string> calls;
  const std::vector<PoolRuntime*>* pools = nullptr;

  void refuse(std::string_view reply) override { calls.push_back("refuse " + std::string(reply)); }
  void capTtl(uint32_t max_ttl) override { calls.push_back("cap " + std::to_string(max_ttl)); }
  void shadowWrite(const ShadowTarget& t, size_t i) override {
    calls.push_back("shadow-write " + name(t.pool) + " " + std::to_string(i));
  }
  void shadowRead(const ShadowTarget& t, size_t i) override {
    calls.push_back("shadow-read " + name(t.pool) + " " + std::to_string(i));
  }
  void failOverTo(const RouteCall&, std::span<PoolRuntime* const> to, bool on_miss) override {
    std::string s = "failover";
    for (PoolRuntime* p : to) {
      s += " " + name(p);
    }
    calls.push_back(s + (on_miss ? " on-miss" : ""));
  }
  void sendTo(PoolRuntime& pool) override { calls.push_back("pool " + name(&pool)); }

  std::string name(const PoolRuntime* p) const { return p->name; }
};

struct Fixture {
  PoolRuntime a, b, c, d;
  mcring::config::RouteConfig rc;
  RouteRuntime route;
  std::shared_ptr<mcring::stats::RouteStats> stats =
      std::make_shared<mcring::stats::RouteStats>("front", "x:");

  Fixture() {
    a.name = "a";
    b.name = "b";
    c.name = "c";
    d.name = "d";
    rc.prefix = "x:";
    rc.pool = "a";
    route.config = &rc;
    route.pool = &a;
    route.stats = stats;
  }
  std::vector<std::string> kinds() {
    route.root = buildRouteTree(route);
    std::vector<std::string> out;
    for (const RouteHandler* h = route.root.get(); h != nullptr; h = h->next()) {
      out.emplace_back(h->kind());
    }
    return out;
  }
};

// Parses one request line (every key in route 0 unless key_routes says otherwise).
struct Req {
  mcring::protocol::Request req;
  std::string line;
  std::vector<uint32_t> key_routes;
  explicit Req(std::string l, std::vector<uint32_t> routes = {}) : line(std::move(l)) {
    mcring::protocol::RequestParser parser;
    REQUIRE(parser.parse(line, req) == mcring::protocol::ParseStatus::Ok);
    key_routes = routes.empty() ? std::vector<uint32_t>(req.keys.size(), 0) : routes;
  }
  RouteCall call(uint32_t route = 0) const { return RouteCall{req, line, key_routes, route}; }
};

// Both passes, as dispatch runs them for a request in one route.
std::vector<std::string> run(const RouteRuntime& route, const Req& r, uint32_t index = 0) {
  Recorder rec;
  if (route.root->admit(rec, r.call(index))) {
    route.root->send(rec, r.call(index));
  }
  return rec.calls;
}

uint64_t g_now_ns = 0;
uint64_t fakeNow() {
  return g_now_ns;
}

}  // namespace

TEST_CASE("a route with no options is counted and sent to its pool") {
  Fixture f;
  CHECK(f.kinds() == std::vector<std::string>{"count", "pool"});
  CHECK(run(f.route, Req("get x:1\r\n")) == std::vector<std::string>{"pool a"});
  CHECK(f.stats->requests.load() == 1);
}

TEST_CASE("every option composes in mcrouter's order: limit, TTL, shadow, failover, pool") {
  Fixture f;
  f.rc.max_ttl = 3600;
  f.rc.shadow = mcring::config::ShadowConfig{"b", 100, false, {}};
  f.route.shadow = &f.b;
  f.rc.failover = {"c", "d"};
  f.route.failover = {&f.c, &f.d};
  f.route.limit = std::make_shared<mcring::common::TokenBucket>(1000, 10);
  CHECK(f.kinds() ==
        std::vector<std::string>{"count", "rate_limit", "max_ttl", "shadow", "failover", "pool"});
  CHECK(run(f.route, Req("set x:1 0 0 1\r\n")) ==
        std::vector<std::string>{"cap 3600", "shadow-write b 0", "failover c d", "pool a"});
  CHECK(run(f.route, Req("get x:1\r\n")) ==
        std::vector<std::string>{"cap 3600", "shadow-read b 0", "failover c d", "pool a"});
}

TEST_CASE("a refused request goes no further: no cap, no copy, no pool") {
  using namespace mcring::core;
  Fixture f;
  // Composed by hand, the rate limit on a clock the test moves: 1 request per second, a burst
  // of 2.
  auto bucket = std::make_shared<mcring::common::TokenBucket>(1, 2);
  g_now_ns = 5'000'000'000;
  f.route.root = std::make_shared<CountRoute>(
      f.stats.get(), std::make_unique<RateLimitRoute>(
                         bucket, f.stats.get(),
                         std::make_unique<TtlCapRoute>(
                             60, std::make_unique<ShadowRoute>(
                                     ShadowTarget{&f.b, f.stats.get(), 1ULL << 32, false},
                                     std::make_unique<PoolRoute>(&f.a))),
                         &fakeNow));
  const Req set("set x:1 0 0 1\r\n");
  const std::vector<std::string> sent{"cap 60", "shadow-write b 0", "pool a"};
  const std::vector<std::string> refused{"refuse SERVER_ERROR rate limited\r\n"};
  CHECK(run(f.route, set) == sent);
  CHECK(run(f.route, set) == sent);
  CHECK(run(f.route, set) == refused);
  CHECK(f.stats->rate_limited.load() == 1);
  g_now_ns += 1'000'000'000;  // a second later: one token again
  CHECK(run(f.route, set) == sent);
  CHECK(run(f.route, set) == refused);
  CHECK(f.stats->requests.load() == 5);
}

TEST_CASE("shadow: percent chooses keys by hash, writes_only skips reads, me is not copied") {
  Fixture f;
  f.rc.shadow = mcring::config::ShadowConfig{"b", 0, false, {}};
  f.route.shadow = &f.b;
  f.kinds();
  CHECK(run(f.route, Req("set x:1 0 0 1\r\n")) == std::vector<std::string>{"pool a"});
  // About half the keys at 50%, and a key is always or never copied.
  f.rc.shadow->percent = 50;
  f.kinds();
  int copied = 0;
  for (int i = 0; i < 200; ++i) {
    const Req r("get x:" + std::to_string(i) + "\r\n");
    const auto once = run(f.route, r);
    CHECK(run(f.route, r) == once);
    copied += once.size() == 2 ? 1 : 0;
  }
  CHECK(copied > 60);
  CHECK(copied < 140);
  f.rc.shadow = mcring::config::ShadowConfig{"b", 100, true, {}};
  f.kinds();
  CHECK(run(f.route, Req("get x:1\r\n")) == std::vector<std::string>{"pool a"});
  CHECK(run(f.route, Req("mg x:1 v\r\n")) == std::vector<std::string>{"pool a"});
  CHECK(run(f.route, Req("delete x:1\r\n")) ==
        std::vector<std::string>{"shadow-write b 0", "pool a"});
  f.rc.shadow->writes_only = false;
  f.kinds();
  CHECK(run(f.route, Req("me x:1\r\n")) == std::vector<std::string>{"pool a"});
}

TEST_CASE("a multi-get's route copies its own keys and fails them over") {
  Fixture f;
  f.rc.shadow = mcring::config::ShadowConfig{"b", 100, false, {}};
  f.route.shadow = &f.b;
  f.rc.failover = {"c"};
  f.route.failover = {&f.c};
  f.kinds();
  // Keys 0 and 2 are this route's (index 1); key 1 is another route's.
  const Req r("get x:1 y:1 x:2\r\n", {1, 0, 1});
  CHECK(run(f.route, r, 1) ==
        std::vector<std::string>{"shadow-read b 0", "shadow-read b 2", "failover c", "pool a"});
}
