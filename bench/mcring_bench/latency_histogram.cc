// Merging and percentile queries of LatencyHistogram (recording is inline in the header).
#include "bench/mcring_bench/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace mcring::bench {

void LatencyHistogram::add(const LatencyHistogram& other) {
  for (uint32_t i = 0; i < kBuckets; ++i) {
    counts_[i] += other.counts_[i];
  }
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::clear() {
  counts_.fill(0);
  count_ = 0;
  max_ = 0;
}

uint64_t LatencyHistogram::highestIn(uint32_t bucket) {
  if (bucket < (1u << (kSubBits + 1))) {
    return bucket;
  }
  const uint32_t shift = (bucket >> kSubBits) - 1;
  const uint64_t sub = bucket & ((1u << kSubBits) - 1);
  const uint64_t lowest = ((uint64_t{1} << kSubBits) + sub) << shift;
  return lowest + (uint64_t{1} << shift) - 1;
}

uint64_t LatencyHistogram::percentile(double percent) const {
  if (count_ == 0) {
    return 0;
  }
  const double wanted = std::ceil(percent / 100.0 * static_cast<double>(count_));
  const uint64_t rank = std::clamp<uint64_t>(static_cast<uint64_t>(wanted), 1, count_);
  uint64_t seen = 0;
  for (uint32_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      return std::min(highestIn(i), max_);
    }
  }
  return max_;
}

}  // namespace mcring::bench
