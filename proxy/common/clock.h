// The proxy's clocks: monotonic time in nanoseconds (vDSO reads, no system call).
#pragma once

#include <time.h>

#include <cstdint>

namespace mcring::common {

// For latencies and rates.
inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// Cheaper, with the kernel tick's resolution (1-4 ms): for backoffs and idle sweeps.
inline uint64_t coarseMonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace mcring::common
