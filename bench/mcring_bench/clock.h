// The load generator's one clock: CLOCK_MONOTONIC in nanoseconds (vDSO, ~20 ns a read).
#pragma once

#include <sys/time.h>
#include <time.h>

#include <cstdint>

namespace mcring::bench {

inline uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// A libevent timeout from now until `target_ns` (zero if it has passed).
inline timeval delayUntil(uint64_t target_ns, uint64_t now_ns) {
  const uint64_t delta = target_ns > now_ns ? target_ns - now_ns : 0;
  timeval tv;
  tv.tv_sec = static_cast<time_t>(delta / 1'000'000'000ULL);
  tv.tv_usec = static_cast<suseconds_t>((delta % 1'000'000'000ULL) / 1000);
  return tv;
}

}  // namespace mcring::bench
