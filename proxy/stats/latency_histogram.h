// Log-linear latency histogram in microseconds with atomic buckets: one writer, any reader.
//
// 8 sub-buckets per power of two (at most 12.5% wide), exact below 16 µs, up to ~2^31 µs.
// Fixed 2 KiB; percentiles are read without stopping the writer.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>

namespace mcring::stats {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 3;
  static constexpr int kLinear = 16;
  static constexpr int kBuckets = kLinear + (32 - 4) * (1 << kSubBits);

  static int bucketOf(uint64_t us) {
    if (us < kLinear) {
      return static_cast<int>(us);
    }
    if (us >= (uint64_t{1} << 32)) {
      return kBuckets - 1;
    }
    int e = 63 - std::countl_zero(us);  // 4..31
    int sub = static_cast<int>((us >> (e - kSubBits)) & ((1 << kSubBits) - 1));
    return kLinear + (e - 4) * (1 << kSubBits) + sub;
  }
  // The upper bound (µs) of a bucket: what a percentile in it reports.
  static uint64_t upperBound(int b) {
    if (b < kLinear) {
      return static_cast<uint64_t>(b);
    }
    int e = (b - kLinear) / (1 << kSubBits) + 4;
    int sub = (b - kLinear) % (1 << kSubBits);
    return ((uint64_t{8} + sub + 1) << (e - kSubBits)) - 1;
  }

  // Writer only.
  void record(uint64_t us) {
    auto& c = buckets_[bucketOf(us)];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Any thread: adds this histogram's counts into `counts`.
  void addTo(std::array<uint64_t, kBuckets>& counts) const {
    for (int i = 0; i < kBuckets; ++i) {
      counts[i] += buckets_[i].load(std::memory_order_relaxed);
    }
  }

  // Percentile q in [0,1] of merged counts, in µs (0 when empty).
  static uint64_t percentile(const std::array<uint64_t, kBuckets>& counts, double q) {
    uint64_t total = 0;
    for (uint64_t c : counts) {
      total += c;
    }
    if (total == 0) {
      return 0;
    }
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total - 1)) + 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[i];
      if (seen >= rank) {
        return upperBound(i);
      }
    }
    return upperBound(kBuckets - 1);
  }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
};

}  // namespace mcring::stats
