// A token bucket shared by threads, as the generic cell rate algorithm (GCRA): one atomic, the
// theoretical arrival time of the next request. A request at time `now` conforms if that time is
// at most `burst - 1` intervals ahead of now; it then pushes the time one interval on. Lock-free
// (a compare-and-swap loop), and the clock is the caller's, so tests drive it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace mcring::common {

class TokenBucket {
 public:
  // rate: requests per second (>= 1); burst: requests that may come at once (0: rate).
  TokenBucket(uint32_t rate, uint32_t burst) { configure(rate, burst); }

  // Changes the rate and burst (a reload); what was used stays used.
  void configure(uint32_t rate, uint32_t burst) {
    const uint64_t r = std::max<uint32_t>(rate, 1);
    const uint64_t b = burst == 0 ? r : burst;
    interval_ns_.store(1000000000 / r, std::memory_order_relaxed);
    tolerance_ns_.store((b - 1) * (1000000000 / r), std::memory_order_relaxed);
  }

  // Takes one token at `now_ns` (a monotonic clock); false if none is left.
  bool tryTake(uint64_t now_ns) {
    const uint64_t interval = interval_ns_.load(std::memory_order_relaxed);
    const uint64_t tolerance = tolerance_ns_.load(std::memory_order_relaxed);
    uint64_t tat = tat_ns_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t start = std::max(tat, now_ns);
      if (start - now_ns > tolerance) {
        return false;
      }
      if (tat_ns_.compare_exchange_weak(tat, start + interval, std::memory_order_relaxed)) {
        return true;
      }
    }
  }

 private:
  std::atomic<uint64_t> interval_ns_{0};
  std::atomic<uint64_t> tolerance_ns_{0};
  std::atomic<uint64_t> tat_ns_{0};
};

}  // namespace mcring::common
