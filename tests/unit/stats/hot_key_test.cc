// HotKeySketch (Space-Saving) and HotKeyBoard (the workers' windows merged).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>

#include "proxy/stats/hot_key_board.h"
#include "proxy/stats/hot_key_sketch.h"
#include "proxy/stats/hyperloglog.h"

// operator delete frees what operator new got from malloc: the pair is consistent.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

// Every operator new of this test binary is counted, so a test can show that recording keys
// allocates nothing.
namespace {
std::atomic<uint64_t> g_news{0};
}
void* operator new(size_t n) {
  g_news.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) {
    return p;
  }
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace mcring::stats {
namespace {

void record(HotKeySketch& s, const std::string& key) {
  s.record(key, HyperLogLog::hashKey(key));
}

// A Zipf-like stream over `distinct` keys, with `hot_share` of it on the key "hot".
std::vector<std::string> stream(size_t n, size_t distinct, double hot_share, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> weights(distinct);
  for (size_t i = 0; i < distinct; ++i) {
    weights[i] = 1.0 / static_cast<double>(i + 1);
  }
  std::discrete_distribution<size_t> zipf(weights.begin(), weights.end());
  std::bernoulli_distribution hot(hot_share);
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(hot(rng) ? std::string("hot") : "key:" + std::to_string(zipf(rng)));
  }
  return out;
}

TEST_CASE("hot key sketch: Space-Saving's bounds hold on a skewed stream") {
  HotKeySketch sketch(64);
  std::map<std::string, uint64_t> truth;
  for (const std::string& k : stream(200000, 20000, 0.3, 7)) {
    record(sketch, k);
    ++truth[k];
  }
  CHECK(sketch.total() == 200000);
  auto top = sketch.top(64);
  REQUIRE(top.size() == 64);
  CHECK(top[0].key == "hot");
  std::set<std::string> listed;
  for (const auto& e : top) {
    CHECK(listed.insert(e.key).second);  // no key twice: the index and heap agree
    uint64_t t = truth[e.key];
    CHECK(e.count >= t);            // never under
    CHECK(e.count - e.error <= t);  // over by at most the error
  }
  for (size_t i = 1; i < top.size(); ++i) {
    CHECK(top[i - 1].count >= top[i].count);
  }
  // Every key above total/capacity is listed; every unlisted key is at most floor().
  for (const auto& [key, t] : truth) {
    if (t > sketch.total() / sketch.capacity()) {
      CHECK(listed.count(key) == 1);
    }
    if (listed.count(key) == 0) {
      CHECK(t <= sketch.floor());
    }
  }
  // The hot key's estimate is within 1% of its true count here.
  CHECK(static_cast<double>(top[0].count) <= 1.01 * static_cast<double>(truth["hot"]));
}

TEST_CASE("hot key sketch: counts exactly while there is room, and clear() starts afresh") {
  HotKeySketch sketch(8);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j <= i; ++j) {
      record(sketch, "k" + std::to_string(i));
    }
  }
  CHECK(sketch.floor() == 0);  // not full: an unseen key was never requested
  auto top = sketch.top(3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].key == "k4");
  CHECK(top[0].count == 5);
  CHECK(top[0].error == 0);
  CHECK(top[2].key == "k2");
  sketch.clear();
  CHECK(sketch.total() == 0);
  CHECK(sketch.top(8).empty());
  record(sketch, "k1");
  CHECK(sketch.top(8).at(0).count == 1);
}

TEST_CASE("hot key sketch: keys longer than memcached allows are not recorded") {
  HotKeySketch sketch(8);
  record(sketch, std::string(HotKeySketch::kMaxKeyLength, 'a'));
  record(sketch, std::string(HotKeySketch::kMaxKeyLength + 1, 'b'));
  CHECK(sketch.total() == 1);
  CHECK(sketch.top(8).size() == 1);
}

TEST_CASE("hot key sketch: a 10-million-distinct-key scan allocates nothing and stays in bound") {
  HotKeySketch sketch(128);
  const size_t bound = HotKeySketch::memoryFor(128);
  CHECK(sketch.memoryBytes() == bound);
  char key[32];
  const uint64_t before = g_news.load();
  for (uint32_t i = 0; i < 10000000; ++i) {
    int n = std::snprintf(key, sizeof(key), "scan:%u", i);
    std::string_view k(key, static_cast<size_t>(n));
    sketch.record(k, HyperLogLog::hashKey(k));
    if (i % 64 == 0) {
      sketch.record("hot", HyperLogLog::hashKey("hot"));  // 1/65 of the stream
    }
  }
  CHECK(g_news.load() - before == 0);
  CHECK(sketch.memoryBytes() == bound);
  CHECK(bound < 64 * 1024);
  // A key taking 1.5% of a stream of unique keys is still found, first.
  CHECK(sketch.top(1).at(0).key == "hot");
}

TEST_CASE("hot key board: workers' windows merge into rates and shares") {
  HotKeyBoard board;
  HotKeyWindow a;
  a.start_ms = 10000;
  a.end_ms = 11000;  // 1 s
  a.total = 1000;
  a.floor = 2;
  a.memory_bytes = 100;
  a.top = {{"hot", 300, 0}, {"warm", 50, 1}};
  HotKeyWindow b;
  b.start_ms = 10000;
  b.end_ms = 10500;  // 0.5 s
  b.total = 500;
  b.floor = 1;
  b.memory_bytes = 100;
  b.top = {{"hot", 150, 0}};
  board.publish(0, "p", a);
  board.publish(1, "p", b);
  board.publish(0, "other", a);
  MergedHotKeys m = board.merged("p", 11000, 10);
  CHECK(m.workers == 2);
  CHECK(m.request_rate == doctest::Approx(2000));  // 1000/s + 1000/s
  CHECK(m.memory_bytes == 200);
  REQUIRE(m.keys.size() == 2);
  CHECK(m.keys[0].key == "hot");
  CHECK(m.keys[0].rate == doctest::Approx(600));
  CHECK(m.keys[0].share == doctest::Approx(0.3));
  CHECK(m.keys[0].error == doctest::Approx(0));
  CHECK(m.keys[1].key == "warm");
  CHECK(m.keys[1].rate == doctest::Approx(50));
  // Listed by worker 0 with error 1/s; worker 1 may have seen it up to its floor (1 in 0.5 s).
  CHECK(m.keys[1].error == doctest::Approx(3));
  CHECK(board.merged("p", 11000, 1).keys.size() == 1);
  // A worker whose window ended long ago no longer counts; a withdrawn one neither.
  CHECK(board.merged("p", 13000, 10).workers == 1);
  board.withdraw(0, "p");
  CHECK(board.merged("p", 11000, 10).workers == 1);
  CHECK(board.merged("none", 11000, 10).keys.empty());
}

TEST_CASE("hot key board: keys the sketch cannot tell from the rest are not listed") {
  // A uniform stream over far more keys than the sketch monitors: every monitored key's count is
  // mostly its error; none is listed. A key well above 1/capacity still is.
  HotKeySketch sketch(16);
  for (int round = 0; round < 20; ++round) {
    for (int k = 0; k < 400; ++k) {
      std::string key = "u:" + std::to_string(k);
      sketch.record(key, HyperLogLog::hashKey(key));
      if (k % 4 == 0) {
        sketch.record("hot", HyperLogLog::hashKey("hot"));
      }
    }
  }
  HotKeyWindow w;
  w.start_ms = 10000;
  w.end_ms = 11000;
  w.total = sketch.total();
  w.floor = sketch.floor();
  w.top = sketch.top(sketch.capacity());
  REQUIRE(w.top.size() == 16);
  HotKeyBoard board;
  board.publish(0, "p", w);
  MergedHotKeys m = board.merged("p", 11000, 20);
  REQUIRE(m.keys.size() == 1);
  CHECK(m.keys[0].key == "hot");
  CHECK(m.keys[0].rate - m.keys[0].error >= 2000);
}

}  // namespace
}  // namespace mcring::stats
