// HyperLogLog: an estimate of how many distinct keys were seen, in fixed memory (2^p bytes).
//
// Threading: one writer (the worker thread that calls add()), any number of readers on other
// threads calling estimate() or passing it to merge(). Registers are relaxed atomics, so reading
// while the writer adds is not a data race. A register only ever grows, so a reader that sees
// some registers before and others after a concurrent add() still reads the sketch of a subset
// of the keys added so far: a valid (slightly stale) estimate, never a torn one.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace mcring::stats {

class HyperLogLog {
 public:
  static constexpr uint8_t kMinPrecision = 4;
  static constexpr uint8_t kMaxPrecision = 18;
  // 16 KiB per sketch; standard error 1.04 / sqrt(2^14) = 0.81%.
  static constexpr uint8_t kDefaultPrecision = 14;

  // 2^precision registers; precision is clamped to [kMinPrecision, kMaxPrecision].
  explicit HyperLogLog(uint8_t precision = kDefaultPrecision);

  HyperLogLog(const HyperLogLog&) = delete;
  HyperLogLog& operator=(const HyperLogLog&) = delete;

  // The 64-bit key hash add() expects: XXH3_64bits of the key bytes. Sketches merge only if
  // they were fed the same hash, so callers should use this one.
  static uint64_t hashKey(std::string_view key);

  // Writer only. Adding a hash already seen changes nothing.
  void add(uint64_t hash) {
    const size_t index = static_cast<size_t>(hash >> (64 - precision_));
    const uint8_t rank = rankOf(hash);
    std::atomic<uint8_t>& r = registers_[index];
    if (rank > r.load(std::memory_order_relaxed)) {
      r.store(rank, std::memory_order_relaxed);
    }
  }
  void addKey(std::string_view key) { add(hashKey(key)); }

  // Any thread. Distinct hashes added (to this sketch and those merged into it), using Ertl's
  // improved estimator ("New cardinality estimation algorithms for HyperLogLog sketches",
  // 2017). It needs no empirical bias tables: its correction on the count of empty registers
  // is linear counting's, so small cardinalities are as accurate as with linear counting, and
  // the transition to the large range has no bias bump.
  double estimate() const;

  // Writes *this (so the caller must be *this's only writer); reads `other` from any thread,
  // even while its writer adds. Afterwards *this estimates the union. Returns false, changing
  // nothing, when the precisions differ.
  bool merge(const HyperLogLog& other);

  // Writer only: forget everything.
  void clear();

  uint8_t precision() const { return precision_; }
  size_t registerCount() const { return size_t{1} << precision_; }
  size_t memoryBytes() const { return sizeof(*this) + registerCount(); }

 private:
  // 1 + the number of leading zeros of the hash bits below the index, capped at 64 - p + 1.
  uint8_t rankOf(uint64_t hash) const {
    const int zeros = std::countl_zero(hash << precision_);  // 64 when all those bits are 0
    return static_cast<uint8_t>(std::min(zeros, 64 - precision_) + 1);
  }

  uint8_t precision_;
  std::unique_ptr<std::atomic<uint8_t>[]> registers_;
};

}  // namespace mcring::stats
