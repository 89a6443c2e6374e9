// planPoolChange's ideal share and warning: a change that moves more than twice what it must.
#include "config/change_plan.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace mcring::config {
namespace {

// A pool of `n` servers 10.1.x.y:11211 (weight 1) with the given routing lines.
PoolConfig pool(int n, const std::string& routing) {
  std::string yaml = "alpha:\n  listen: 127.0.0.1:22122\n" + routing + "  servers:\n";
  for (int i = 0; i < n; ++i) {
    yaml +=
        "    - 10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":11211:1\n";
  }
  LoadResult r = loadConfigString(yaml);
  REQUIRE(r.ok());
  return r.config->pools.at(0);
}

TEST_CASE("ideal moved share: k/(n+k) to add, k/n to remove, weights by share") {
  PoolConfig ten = pool(10, "");
  PoolConfig eleven = pool(11, "");
  PoolConfig eight = pool(8, "");
  CHECK(idealMovedShare(ten.servers, eleven.servers) == doctest::Approx(1.0 / 11));
  CHECK(idealMovedShare(ten.servers, eight.servers) == doctest::Approx(2.0 / 10));
  CHECK(idealMovedShare(ten.servers, ten.servers) == 0);
  PoolConfig heavier = ten;
  heavier.servers[0].spec.weight = 2;  // 1/10 -> 2/11: the other nine lose 1/10 - 1/11 each
  CHECK(idealMovedShare(ten.servers, heavier.servers) == doctest::Approx(9 * (0.1 - 1.0 / 11)));
}

TEST_CASE("excess move warning: above twice the ideal share only") {
  CHECK(excessMoveWarning(0.20, 0.20).empty());
  CHECK(excessMoveWarning(0.0019, 0.001).empty());
  CHECK(excessMoveWarning(0.0005, 0).empty());  // sampling noise around nothing
  const std::string w = excessMoveWarning(0.0251, 1.0 / 1001);
  CHECK(w.find("moves 2.51% of keys, more than twice the 0.10%") == 0);
  CHECK(!excessMoveWarning(0.5, 0).empty());  // a rename or a hash change that moves keys
}

TEST_CASE("growing 1,000 -> 1,001 servers: the ring flavours of issue 29") {
  const PoolConfig before_twemproxy = pool(1000, "");
  const PoolConfig after_twemproxy = pool(1001, "");
  const PoolConfig before_libketama = pool(1000, "  ketama_compat: libketama\n");
  const PoolConfig after_libketama = pool(1001, "  ketama_compat: libketama\n");
  std::string err;
  auto tw = planPoolChange(before_twemproxy, after_twemproxy, &err);
  REQUIRE_MESSAGE(tw, err);
  auto lk = planPoolChange(before_libketama, after_libketama, &err);
  REQUIRE_MESSAGE(lk, err);
  std::printf("1000 -> 1001: ideal %.4f%%, twemproxy ketama %.4f%% (%s), libketama %.4f%% (%s)\n",
              100 * tw->ideal_moved, 100 * tw->plan.moved,
              tw->warning.empty() ? "no warning" : "warning", 100 * lk->plan.moved,
              lk->warning.empty() ? "no warning" : "warning");
  CHECK(tw->ideal_moved == doctest::Approx(1.0 / 1001));
  CHECK(tw->plan.moved > 0.02);  // float rounding gives every server 156 points, not 160
  CHECK(!tw->warning.empty());
  CHECK(lk->plan.moved < 2 * lk->ideal_moved);
  CHECK(lk->warning.empty());
  std::string json;
  appendPoolChangeJson(&json, *tw);
  CHECK(json.find("\"warning\":\"moves 2.") != std::string::npos);
  json.clear();
  appendPoolChangeJson(&json, *lk);
  CHECK(json.find("\"warning\":null") != std::string::npos);
}

}  // namespace
}  // namespace mcring::config
