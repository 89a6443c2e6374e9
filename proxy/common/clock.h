// The proxy's clocks: monotonic time in nanoseconds (vDSO reads, no system call).
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace mcring::common {

namespace clock_detail {
// Added to every reading of both clocks. Always 0 in the proxy; unit tests advance it
// (advanceClockForTest) to pass backoffs and slow-reader limits without waiting. One relaxed load
// of a value nothing writes: no measurable cost. libevent's timers do not see it.
inline std::atomic<uint64_t> offset_ns{0};
}  // namespace clock_detail

// For latencies and rates.
inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec) +
         clock_detail::offset_ns.load(std::memory_order_relaxed);
}

// Cheaper, with the kernel tick's resolution (1-4 ms): for backoffs and idle sweeps.
inline uint64_t coarseMonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec) +
         clock_detail::offset_ns.load(std::memory_order_relaxed);
}

// Wall-clock milliseconds since the epoch: for windows that must line up across threads and
// with a client's own clock (hot-key windows). Not monotonic; not moved by advanceClockForTest.
inline int64_t wallClockMs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// Tests only: moves both clocks forward by ns, for every thread (never backward: they stay
// monotonic).
inline void advanceClockForTest(uint64_t ns) {
  clock_detail::offset_ns.fetch_add(ns, std::memory_order_relaxed);
}

}  // namespace mcring::common
