// Picks which key a request touches: uniform, or Zipf-distributed over the key space; optionally
// with a share of all requests on a few hot keys (the hot-key incident: one celebrity key).
#pragma once

#include <cstdint>

#include "bench/mcring_bench/rng.h"

namespace mcring::bench {

// Zipf uses rejection-inversion sampling (Hörmann & Derflinger 1996): O(1) time and memory per
// draw whatever the key space, where a precomputed CDF would cost 8 bytes per key. Rank 1 (the
// hottest) is key index 0. Immutable after construction, so threads share one.
class KeyChooser {
 public:
  // zipf_exponent <= 0 means uniform. hot_share (0..1) of the draws go to key indexes
  // 0..hot_keys-1, uniformly; the others follow the distribution over the whole key space.
  KeyChooser(uint64_t keys, double zipf_exponent, uint64_t hot_keys = 0, double hot_share = 0);

  uint64_t next(Rng& rng) const {
    if (hot_keys_ > 0 && rng.unit() < hot_share_) {
      return rng.below(hot_keys_);
    }
    return zipf_ ? nextZipf(rng) - 1 : rng.below(keys_);
  }

 private:
  uint64_t nextZipf(Rng& rng) const;
  double h(double x) const;
  double hIntegral(double x) const;
  double hIntegralInverse(double x) const;

  uint64_t keys_;
  bool zipf_;
  double exponent_;
  double h_integral_x1_ = 0;
  double h_integral_n_ = 0;
  double s_ = 0;
  uint64_t hot_keys_ = 0;
  double hot_share_ = 0;
};

}  // namespace mcring::bench
