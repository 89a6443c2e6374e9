// common::TokenBucket on an injected clock: the burst, the rate, no credit past the burst, a
// reload's new rate, and two threads never taking more than the bucket holds.
#include "proxy/common/token_bucket.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace mcring::common {
namespace {

constexpr uint64_t kSecond = 1000000000;

int takeAll(TokenBucket& b, uint64_t now, int most) {
  int n = 0;
  while (n < most && b.tryTake(now)) {
    ++n;
  }
  return n;
}

TEST_CASE("a full bucket gives its burst at once, then one token per interval") {
  TokenBucket b(100, 10);  // 100/s: one per 10 ms
  const uint64_t t0 = 50 * kSecond;
  CHECK(takeAll(b, t0, 1000) == 10);
  CHECK_FALSE(b.tryTake(t0 + kSecond / 1000));  // 1 ms later: nothing yet
  CHECK(b.tryTake(t0 + kSecond / 100));         // 10 ms later: one
  CHECK_FALSE(b.tryTake(t0 + kSecond / 100));
  // A second of requests at the rate all pass: 100 in a second, never more.
  int passed = 0;
  for (int ms = 11; ms <= 1010; ++ms) {
    passed += b.tryTake(t0 + static_cast<uint64_t>(ms) * kSecond / 1000) ? 1 : 0;
  }
  CHECK(passed == 100);
}

TEST_CASE("idle time refills up to the burst, not beyond") {
  TokenBucket b(10, 5);
  const uint64_t t0 = 10 * kSecond;
  CHECK(takeAll(b, t0, 100) == 5);
  CHECK(takeAll(b, t0 + 3600 * kSecond, 100) == 5);  // an hour idle: still only the burst
}

TEST_CASE("burst 0 means one second's worth") {
  TokenBucket b(20, 0);
  CHECK(takeAll(b, 7 * kSecond, 1000) == 20);
}

TEST_CASE("configure changes the rate for what follows") {
  TokenBucket b(1, 1);
  const uint64_t t0 = 5 * kSecond;
  CHECK(takeAll(b, t0, 10) == 1);
  b.configure(1000, 1);
  CHECK(takeAll(b, t0 + 2 * kSecond, 10) == 1);
  CHECK(b.tryTake(t0 + 2 * kSecond + kSecond / 1000));
}

TEST_CASE("two threads together take exactly the burst at one instant") {
  TokenBucket b(1000, 500);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] { taken += takeAll(b, 100 * kSecond, 10000); });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(taken.load() == 500);
}

}  // namespace
}  // namespace mcring::common
