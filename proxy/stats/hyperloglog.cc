// HyperLogLog: registers, merge, and Ertl's improved cardinality estimator.
#include "proxy/stats/hyperloglog.h"

#include <xxhash.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

namespace mcring::stats {
namespace {

// Ertl 2017, algorithm 6: sigma corrects for registers still at 0 (the small range).
double sigma(double x) {
  if (x == 1.0) {
    return std::numeric_limits<double>::infinity();
  }
  double y = 1.0;
  double z = x;
  double previous;
  do {
    x *= x;
    previous = z;
    z += x * y;
    y += y;
  } while (z != previous);
  return z;
}

// tau corrects for registers at the cap 64 - p + 1 (only reachable near 2^64 distinct hashes).
double tau(double x) {
  if (x == 0.0 || x == 1.0) {
    return 0.0;
  }
  double y = 1.0;
  double z = 1.0 - x;
  double previous;
  do {
    x = std::sqrt(x);
    previous = z;
    y *= 0.5;
    z -= (1.0 - x) * (1.0 - x) * y;
  } while (z != previous);
  return z / 3.0;
}

}  // namespace

HyperLogLog::HyperLogLog(uint8_t precision)
    : precision_(std::clamp(precision, kMinPrecision, kMaxPrecision)),
      registers_(std::make_unique<std::atomic<uint8_t>[]>(size_t{1} << precision_)) {}

uint64_t HyperLogLog::hashKey(std::string_view key) {
  return XXH3_64bits(key.data(), key.size());
}

double HyperLogLog::estimate() const {
  const size_t m = registerCount();
  const int q = 64 - precision_;
  std::vector<uint32_t> histogram(static_cast<size_t>(q) + 2, 0);
  for (size_t i = 0; i < m; ++i) {
    ++histogram[registers_[i].load(std::memory_order_relaxed)];
  }
  const double md = static_cast<double>(m);
  double z = md * tau(1.0 - histogram[q + 1] / md);
  for (int k = q; k >= 1; --k) {
    z = 0.5 * (z + histogram[k]);
  }
  z += md * sigma(histogram[0] / md);
  constexpr double kAlphaInf = 0.5 / std::numbers::ln2;
  return kAlphaInf * md * md / z;
}

bool HyperLogLog::merge(const HyperLogLog& other) {
  if (other.precision_ != precision_) {
    return false;
  }
  const size_t m = registerCount();
  for (size_t i = 0; i < m; ++i) {
    const uint8_t theirs = other.registers_[i].load(std::memory_order_relaxed);
    if (theirs > registers_[i].load(std::memory_order_relaxed)) {
      registers_[i].store(theirs, std::memory_order_relaxed);
    }
  }
  return true;
}

void HyperLogLog::clear() {
  const size_t m = registerCount();
  for (size_t i = 0; i < m; ++i) {
    registers_[i].store(0, std::memory_order_relaxed);
  }
}

}  // namespace mcring::stats
