// HyperLogLog: accuracy across the range, duplicates, merge, reading while a writer adds.
#include "proxy/stats/hyperloglog.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

namespace mcring::stats {
namespace {

// Adds keys "<seed>:<i>" for i in [first, last), hashed as the proxy hashes them.
void addKeys(HyperLogLog* h, uint64_t seed, uint64_t first, uint64_t last) {
  const std::string prefix = "user:" + std::to_string(seed) + ":";
  for (uint64_t i = first; i < last; ++i) {
    h->addKey(prefix + std::to_string(i));
  }
}

double relativeError(double estimate, double truth) {
  return std::abs(estimate - truth) / truth;
}

TEST_CASE("an empty sketch estimates 0") {
  HyperLogLog h;
  CHECK(h.estimate() == 0.0);
  CHECK(h.registerCount() == 16384);
}

TEST_CASE("estimate is within 5% at 10k and 1M distinct keys") {
  for (uint64_t seed : {1, 2, 3}) {
    for (uint64_t n : {10000, 1000000}) {
      CAPTURE(seed);
      CAPTURE(n);
      HyperLogLog h;
      addKeys(&h, seed, 0, n);
      CHECK(relativeError(h.estimate(), static_cast<double>(n)) < 0.05);
    }
  }
}

TEST_CASE("small cardinalities are counted almost exactly (linear-counting range)") {
  for (uint64_t n : {1, 10, 100, 1000}) {
    CAPTURE(n);
    HyperLogLog h;
    addKeys(&h, 7, 0, n);
    CHECK(std::abs(h.estimate() - static_cast<double>(n)) <= std::max(1.0, 0.02 * n));
  }
}

TEST_CASE("no bias bump where classic HyperLogLog switches from linear counting") {
  // Classic HLL switches estimators at 2.5 * m = 40960 registers' worth; check both sides.
  for (uint64_t n : {20000, 40000, 50000, 80000, 200000}) {
    CAPTURE(n);
    HyperLogLog h;
    addKeys(&h, 11, 0, n);
    CHECK(relativeError(h.estimate(), static_cast<double>(n)) < 0.05);
  }
}

TEST_CASE("smaller precision: fewer registers, still within 5% at 1M") {
  HyperLogLog h(12);
  CHECK(h.registerCount() == 4096);
  addKeys(&h, 5, 0, 1000000);
  CHECK(relativeError(h.estimate(), 1e6) < 0.05);
}

TEST_CASE("precision is clamped to the supported range") {
  CHECK(HyperLogLog(1).precision() == HyperLogLog::kMinPrecision);
  CHECK(HyperLogLog(30).precision() == HyperLogLog::kMaxPrecision);
}

TEST_CASE("adding keys again changes nothing") {
  HyperLogLog h;
  addKeys(&h, 3, 0, 50000);
  const double once = h.estimate();
  for (int round = 0; round < 3; ++round) {
    addKeys(&h, 3, 0, 50000);
  }
  CHECK(h.estimate() == once);
}

TEST_CASE("merge estimates the union") {
  HyperLogLog a;
  HyperLogLog b;
  addKeys(&a, 9, 0, 600000);
  addKeys(&b, 9, 400000, 1000000);  // overlaps a on [400k, 600k)
  HyperLogLog total;
  REQUIRE(total.merge(a));
  REQUIRE(total.merge(b));
  CHECK(relativeError(total.estimate(), 1e6) < 0.05);

  // Merging is idempotent and the same as having added everything to one sketch.
  REQUIRE(total.merge(b));
  HyperLogLog direct;
  addKeys(&direct, 9, 0, 1000000);
  CHECK(total.estimate() == direct.estimate());
}

TEST_CASE("merge refuses a different precision and leaves the sketch unchanged") {
  HyperLogLog a(14);
  HyperLogLog b(12);
  addKeys(&a, 1, 0, 1000);
  addKeys(&b, 1, 1000, 100000);
  const double before = a.estimate();
  CHECK_FALSE(a.merge(b));
  CHECK(a.estimate() == before);
}

TEST_CASE("clear forgets everything") {
  HyperLogLog h;
  addKeys(&h, 1, 0, 1000);
  h.clear();
  CHECK(h.estimate() == 0.0);
}

TEST_CASE("a reader merges while the writer adds; the final merge sees every key") {
  HyperLogLog worker;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    addKeys(&worker, 21, 0, 300000);
    done.store(true, std::memory_order_release);
  });
  // The reader's snapshots are sketches of subsets of what was added: every register at most
  // its final value, and the estimator is monotone in each register.
  double last = 0;
  int snapshots = 0;
  while (!done.load(std::memory_order_acquire)) {
    HyperLogLog snapshot;
    snapshot.merge(worker);
    last = snapshot.estimate();
    ++snapshots;
  }
  writer.join();
  HyperLogLog final_view;
  final_view.merge(worker);
  CHECK(final_view.estimate() == worker.estimate());
  CHECK(last <= final_view.estimate());
  CHECK(relativeError(final_view.estimate(), 300000) < 0.05);
  MESSAGE("snapshots taken while writing: " << snapshots);
}

}  // namespace
}  // namespace mcring::stats
