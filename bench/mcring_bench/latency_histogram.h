// Log-linear latency histogram (HdrHistogram-like): fixed memory, ~0.8% bucket width, mergeable.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace mcring::bench {

// Records nanoseconds. Values below 256 ns get one bucket each; above, every power of two is
// split into 128 linear sub-buckets, so a bucket is at most 1/128 of its values wide. Values
// from 2^36 ns (~69 s) up share the last bucket; the exact max is kept aside.
// One writer per instance (a worker thread); merged with add() by the controller.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr int kMaxExponent = 36;
  static constexpr uint32_t kBuckets = (kMaxExponent - kSubBits + 1) << kSubBits;

  void record(uint64_t ns) {
    ++counts_[bucketOf(ns)];
    ++count_;
    if (ns > max_) {
      max_ = ns;
    }
  }

  void add(const LatencyHistogram& other);
  void clear();

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }

  // The value at or below which `percent`% of the recorded values fall (highest value of the
  // bucket that reaches that rank, never above max()). 0 when empty.
  uint64_t percentile(double percent) const;

  static uint32_t bucketOf(uint64_t ns) {
    if (ns < (uint64_t{1} << (kSubBits + 1))) {
      return static_cast<uint32_t>(ns);
    }
    const int exponent = std::bit_width(ns) - 1;
    if (exponent >= kMaxExponent) {
      return kBuckets - 1;
    }
    const int shift = exponent - kSubBits;
    const uint32_t sub = static_cast<uint32_t>(ns >> shift) & ((1u << kSubBits) - 1);
    return (static_cast<uint32_t>(shift + 1) << kSubBits) + sub;
  }

  // Largest value that lands in `bucket`.
  static uint64_t highestIn(uint32_t bucket);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

}  // namespace mcring::bench
