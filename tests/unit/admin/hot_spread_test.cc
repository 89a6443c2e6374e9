// Hot-key spread without sockets: the spread set's life as planSpread decides it (fresh entries,
// collapse before removal, acks, a new snapshot), and the entry's read choice and fill state.
#include "proxy/backend/hot_spread.h"

#include <doctest/doctest.h>

#include <memory>
#include <set>
#include <string>

#include "proxy/admin/hot_spread_plan.h"

namespace mcring::core {
namespace {

std::shared_ptr<const config::PoolTopology> pool(uint32_t spread, int servers = 10) {
  auto p = std::make_shared<config::PoolTopology>();
  p->config.name = "alpha";
  p->config.hot_key_spread = spread;
  std::vector<routing::ServerSpec> specs;
  for (int i = 0; i < servers; ++i) {
    config::ServerConfig s;
    s.address.host = "10.0.0." + std::to_string(i + 1);
    s.address.port = 11211;
    s.spec = {s.address.host, s.address.port, 1, ""};
    p->config.servers.push_back(s);
    specs.push_back(s.spec);
  }
  std::string error;
  p->router = routing::Router::build(specs, p->config.routing, &error);
  REQUIRE(p->router != nullptr);
  return p;
}

void ackAll(const SpreadSet& s, uint64_t now_ms = 1) {
  for (int i = 0; i < s.workers; ++i) {
    s.ack(now_ms);
  }
}

TEST_CASE("planSpread: a hot key is spread, collapses when it cools, and goes once all acked") {
  auto p = pool(5);
  CHECK(planSpread(p, {}, nullptr, 2) == nullptr);  // nothing hot, nothing ever published

  auto s1 = planSpread(p, {"hot"}, nullptr, 2);
  REQUIRE(s1 != nullptr);
  REQUIRE(s1->entries.size() == 1);
  const auto e = s1->entries[0];
  CHECK(e->key == "hot");
  CHECK(e->copies.size() == 5);
  CHECK(e->copies[0] == p->router->route("hot"));
  CHECK(e->filled.load() == 1u);  // only the primary
  CHECK(e->phase.load() == SpreadPhase::Spreading);
  CHECK(s1->settle_ms > p->config.timeout_ms);

  // Still hot: nothing to publish.
  CHECK(planSpread(p, {"hot"}, s1.get(), 2) == nullptr);

  // Cools: the same entry, now collapsing (writes still to every copy).
  auto s2 = planSpread(p, {}, s1.get(), 2);
  REQUIRE(s2 != nullptr);
  REQUIRE(s2->entries.size() == 1);
  CHECK(s2->entries[0] == e);
  CHECK(e->phase.load() == SpreadPhase::Collapsing);
  CHECK(e->pickRead(12345, 0) == 0);  // reads to the primary only

  // Not every worker applied the collapsing set: the entry stays.
  s2->ack(1);
  CHECK(planSpread(p, {}, s2.get(), 2) == nullptr);
  // Every worker did: the entry goes (writes to the primary only from now on).
  s2->ack(1);
  auto s3 = planSpread(p, {}, s2.get(), 2);
  REQUIRE(s3 != nullptr);
  CHECK(s3->entries.empty());
  CHECK(planSpread(p, {}, s3.get(), 2) == nullptr);
}

TEST_CASE("planSpread: a key a text line cannot carry is not spread") {
  auto p = pool(5);
  CHECK(planSpread(p, {"with space", std::string("nul\0x", 5), std::string(251, 'k')}, nullptr,
                   1) == nullptr);
}

TEST_CASE("planSpread: a collapsing key that heats again starts afresh, nothing filled") {
  auto p = pool(3);
  auto s1 = planSpread(p, {"k"}, nullptr, 1);
  auto old = s1->entries[0];
  old->filled.store(old->fullMask());
  auto s2 = planSpread(p, {}, s1.get(), 1);
  REQUIRE(s2 != nullptr);
  auto s3 = planSpread(p, {"k"}, s2.get(), 1);
  REQUIRE(s3 != nullptr);
  REQUIRE(s3->entries.size() == 1);
  CHECK(s3->entries[0] != old);
  CHECK(s3->entries[0]->filled.load() == 1u);
  CHECK(s3->entries[0]->phase.load() == SpreadPhase::Spreading);
}

TEST_CASE("planSpread: a new snapshot gets fresh entries; spread off collapses everything") {
  auto p = pool(4);
  auto s1 = planSpread(p, {"k"}, nullptr, 1);
  s1->entries[0]->filled.store(s1->entries[0]->fullMask());
  auto q = pool(4);  // a reload: another snapshot (same servers)
  auto s2 = planSpread(q, {"k"}, s1.get(), 1);
  REQUIRE(s2 != nullptr);
  CHECK(s2->topology == q);
  CHECK(s2->entries[0] != s1->entries[0]);
  CHECK(s2->entries[0]->filled.load() == 1u);

  auto off = pool(0);
  auto s3 = planSpread(off, {"k"}, s2.get(), 1);  // new snapshot with spread off: nothing
  REQUIRE(s3 != nullptr);
  CHECK(s3->entries.empty());
  CHECK_FALSE(spreadsHotKeys(*off));
  CHECK_FALSE(spreadsHotKeys(*pool(5, 1)));  // one server: nowhere to spread
}

TEST_CASE("SpreadSet: settled only once every worker acked and the settle time passed") {
  auto p = pool(2);
  auto s = planSpread(p, {"k"}, nullptr, 2);
  s->settle_ms = 100;
  CHECK_FALSE(s->settled(1000));
  s->ack(1000);
  CHECK_FALSE(s->settled(5000));
  s->ack(1050);
  CHECK_FALSE(s->settled(1100));
  CHECK(s->settled(1150));
  CHECK(s->find("k") != nullptr);
  CHECK(s->find("other") == nullptr);
}

TEST_CASE("SpreadSet: settled at once when every worker acked quiet") {
  auto p = pool(2);
  auto s = planSpread(p, {"k"}, nullptr, 2);
  s->settle_ms = 100;
  s->ack(1000, /*quiet=*/true);
  CHECK_FALSE(s->settled(1000));  // one worker has not applied it yet
  s->ack(1010, /*quiet=*/true);
  CHECK(s->settled(1010));
  auto loud = planSpread(p, {"k"}, nullptr, 2);
  loud->settle_ms = 100;
  loud->ack(1000, /*quiet=*/true);
  loud->ack(1010, /*quiet=*/false);  // a write to the primary alone may still be in flight
  CHECK_FALSE(loud->settled(1050));
  CHECK(loud->settled(1110));
}

TEST_CASE("SpreadEntry: reads go to filled copies only, spread evenly over them") {
  SpreadEntry e("k", {3, 1, 4, 7});
  for (uint64_t r = 0; r < 100; ++r) {
    CHECK(e.pickRead(r, 0) == 0);  // only the primary is filled
  }
  CHECK(e.firstUnfilled(0) == 1);
  e.markFilled(2, 0);
  CHECK(e.firstUnfilled(0) == 1);
  int counts[4] = {0, 0, 0, 0};
  for (uint64_t r = 0; r < 1000; ++r) {
    ++counts[e.pickRead(r, 0)];
  }
  CHECK(counts[1] == 0);
  CHECK(counts[3] == 0);
  CHECK(counts[0] == 500);
  CHECK(counts[2] == 500);
  e.clearCopy(0);  // the primary never loses its bit
  e.clearCopy(2);
  CHECK(e.filled.load() == 1u);
  e.filled.store(e.fullMask());
  CHECK(e.allFilled(0));
  CHECK(e.firstUnfilled(0) == 0);
}

TEST_CASE("SpreadEntry: with hot_key_copy_ttl a copy is read only until that long after its fill") {
  SpreadEntry e("k", {0, 1, 2}, 1000);
  e.markFilled(1, 5000);
  e.markFilled(2, 5500);
  CHECK(e.readable(5999) == 0b111u);
  CHECK(e.readable(6000) == 0b101u);  // copy 1's fill is 1 s old: filled again before a read
  CHECK(e.firstUnfilled(6000) == 1);
  CHECK_FALSE(e.allFilled(6000));
  CHECK(e.readable(6500) == 0b001u);
  for (uint64_t r = 0; r < 50; ++r) {
    CHECK(e.pickRead(r, 6500) == 0);
  }
  e.markFilled(1, 6500);  // a fill refreshes it
  CHECK(e.readable(6600) == 0b011u);
}

}  // namespace
}  // namespace mcring::core
