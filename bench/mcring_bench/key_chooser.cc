// Rejection-inversion Zipf sampling, after Apache Commons RNG's RejectionInversionZipfSampler.
#include "bench/mcring_bench/key_chooser.h"

#include <algorithm>

#include <cmath>

namespace mcring::bench {
namespace {

// log1p(x)/x and expm1(x)/x, with their Taylor series near 0 where the quotients lose precision.
double helper1(double x) {
  if (std::fabs(x) > 1e-8) {
    return std::log1p(x) / x;
  }
  return 1 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

double helper2(double x) {
  if (std::fabs(x) > 1e-8) {
    return std::expm1(x) / x;
  }
  return 1 + x * 0.5 * (1 + x * (1.0 / 3.0) * (1 + 0.25 * x));
}

}  // namespace

KeyChooser::KeyChooser(uint64_t keys, double zipf_exponent, uint64_t hot_keys, double hot_share)
    : keys_(keys),
      zipf_(zipf_exponent > 0),
      exponent_(zipf_exponent),
      hot_keys_(hot_share > 0 ? std::min(hot_keys, keys) : 0),
      hot_share_(hot_share) {
  if (zipf_) {
    h_integral_x1_ = hIntegral(1.5) - 1;
    h_integral_n_ = hIntegral(static_cast<double>(keys_) + 0.5);
    s_ = 2 - hIntegralInverse(hIntegral(2.5) - h(2));
  }
}

// h(x) = 1/x^s, the unnormalised density.
double KeyChooser::h(double x) const {
  return std::exp(-exponent_ * std::log(x));
}

// The integral of h from 1 to x, written so that s = 1 (log) needs no special case.
double KeyChooser::hIntegral(double x) const {
  const double log_x = std::log(x);
  return helper2((1 - exponent_) * log_x) * log_x;
}

double KeyChooser::hIntegralInverse(double x) const {
  double t = x * (1 - exponent_);
  if (t < -1) {
    t = -1;  // rounding can push it just below the domain of log1p
  }
  return std::exp(helper1(t) * x);
}

uint64_t KeyChooser::nextZipf(Rng& rng) const {
  const double n = static_cast<double>(keys_);
  while (true) {
    const double u = h_integral_n_ + rng.unit() * (h_integral_x1_ - h_integral_n_);
    const double x = hIntegralInverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1) {
      k = 1;
    } else if (k > n) {
      k = n;
    }
    // Accepted at once for almost every draw; the second test is the rare exact check.
    if (k - x <= s_ || u >= hIntegral(k + 0.5) - h(k)) {
      return static_cast<uint64_t>(k);
    }
  }
}

}  // namespace mcring::bench
