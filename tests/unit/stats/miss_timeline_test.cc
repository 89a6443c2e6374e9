// MissTimeline: per-second differences of cumulative counters, ring capacity, irregular samples.
#include "proxy/stats/miss_timeline.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace mcring::stats {
namespace {

// Feeds `seconds` samples from `start`, each second adding `gets` gets of which `misses` miss.
MissCounters feed(MissTimeline* t, MissCounters totals, int64_t start, int seconds, uint64_t gets,
                  uint64_t misses) {
  for (int i = 0; i < seconds; ++i) {
    totals.gets += gets;
    totals.hits += gets - misses;
    totals.misses += misses;
    t->sample(start + i, totals);
  }
  return totals;
}

TEST_CASE("the first sample only sets the starting totals") {
  MissTimeline t;
  t.sample(100, {500, 400, 100});
  CHECK(t.size() == 0);
  CHECK(t.series().empty());
}

TEST_CASE("one point per second: the difference of the totals") {
  MissTimeline t;
  MissCounters totals{1000, 900, 100};
  t.sample(100, totals);
  totals = feed(&t, totals, 101, 10, 200, 20);
  totals = feed(&t, totals, 111, 5, 100, 50);
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 15);
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].second == 101 + static_cast<int64_t>(i));
  }
  CHECK(s[0].gets == 200);
  CHECK(s[0].hits == 180);
  CHECK(s[0].misses == 20);
  CHECK(s[0].missRatio() == doctest::Approx(0.1));
  CHECK(s[14].gets == 100);
  CHECK(s[14].missRatio() == doctest::Approx(0.5));
}

TEST_CASE("the miss ratio is over answered lookups, and 0 without any") {
  MissPoint p{1, 100, 30, 10};  // 100 gets sent, 40 answered so far
  CHECK(p.lookups() == 40);
  CHECK(p.missRatio() == doctest::Approx(0.25));
  MissPoint idle{2, 0, 0, 0};
  CHECK(idle.missRatio() == 0.0);
}

TEST_CASE("keeps the last 1024 seconds, contiguous, oldest first") {
  MissTimeline t;
  MissCounters totals;
  t.sample(0, totals);
  for (int64_t s = 1; s <= 3000; ++s) {
    totals.gets += static_cast<uint64_t>(s);  // a distinct value per second
    totals.hits += static_cast<uint64_t>(s);
    t.sample(s, totals);
  }
  CHECK(t.size() == MissTimeline::kCapacity);
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == MissTimeline::kCapacity);
  CHECK(s.front().second == 3000 - 1023);
  CHECK(s.back().second == 3000);
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].gets == static_cast<uint64_t>(s[i].second));
  }
  const std::vector<MissPoint> last = t.series(60);
  REQUIRE(last.size() == 60);
  CHECK(last.front().second == 2941);
  CHECK(last.back().second == 3000);
}

TEST_CASE("a late timer spreads the difference evenly over the skipped seconds") {
  MissTimeline t;
  t.sample(10, {0, 0, 0});
  t.sample(14, {103, 90, 13});  // 4 seconds' worth at once
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 4);
  uint64_t gets = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].second == 11 + static_cast<int64_t>(i));
    CHECK((s[i].gets == 25 || s[i].gets == 26));
    gets += s[i].gets;
    hits += s[i].hits;
    misses += s[i].misses;
  }
  CHECK(gets == 103);
  CHECK(hits == 90);
  CHECK(misses == 13);
}

TEST_CASE("a second sample in the same second adds to it") {
  MissTimeline t;
  t.sample(1, {0, 0, 0});
  t.sample(2, {10, 9, 1});
  t.sample(2, {15, 12, 3});
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 1);
  CHECK(s[0].gets == 15);
  CHECK(s[0].hits == 12);
  CHECK(s[0].misses == 3);
}

TEST_CASE("a second from the past is ignored and its counts land in the next sample") {
  MissTimeline t;
  t.sample(1, {0, 0, 0});
  t.sample(2, {10, 10, 0});
  t.sample(1, {20, 20, 0});  // clock stepped back
  t.sample(3, {30, 30, 0});
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 2);
  CHECK(s[1].second == 3);
  CHECK(s[1].gets == 20);
}

TEST_CASE("counters going down restart from the new totals") {
  MissTimeline t;
  t.sample(1, {0, 0, 0});
  t.sample(2, {100, 90, 10});
  t.sample(3, {5, 5, 0});  // reset: no point for second 3
  t.sample(4, {15, 10, 5});
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 2);
  CHECK(s[0].second == 2);
  CHECK(s[1].second == 4);
  CHECK(s[1].gets == 10);
  CHECK(s[1].misses == 5);
}

TEST_CASE("a gap longer than the ring clears it") {
  MissTimeline t;
  MissCounters totals = feed(&t, {}, 0, 20, 10, 1);
  CHECK(t.size() == 19);
  totals.gets += 10;
  t.sample(19 + 5000, totals);
  CHECK(t.size() == 0);
  feed(&t, totals, 19 + 5001, 3, 10, 1);
  const std::vector<MissPoint> s = t.series();
  REQUIRE(s.size() == 3);
  CHECK(s[0].second == 19 + 5001);
}

TEST_CASE("clear starts over") {
  MissTimeline t;
  feed(&t, {}, 0, 10, 10, 1);
  t.clear();
  CHECK(t.size() == 0);
  t.sample(50, {1000, 1000, 0});  // a fresh start: sets totals only
  CHECK(t.size() == 0);
}

}  // namespace
}  // namespace mcring::stats
