// Spike detector: fires on a real spike, stays quiet on noise, measures recovery and extra misses.
#include "proxy/stats/spike_detector.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "proxy/stats/miss_timeline.h"

namespace mcring::stats {
namespace {

constexpr int64_t kChange = 120;

// A noise-free point: `lookups` answered lookups, round(ratio * lookups) of them misses.
MissPoint exact(int64_t second, double ratio, uint64_t lookups = 100000) {
  const auto misses = static_cast<uint64_t>(std::llround(ratio * static_cast<double>(lookups)));
  return {second, lookups, lookups - misses, misses};
}

// Seconds [0, length), the ratio at each given by `ratio(second)`.
std::vector<MissPoint> exactSeries(int64_t length, const std::function<double(int64_t)>& ratio) {
  std::vector<MissPoint> s;
  for (int64_t t = 0; t < length; ++t) {
    s.push_back(exact(t, ratio(t)));
  }
  return s;
}

// Baseline 0.1, then at the change a jump to 0.6 decaying back with a 30 s time constant.
double decayingSpike(int64_t t) {
  return t < kChange ? 0.1 : 0.1 + 0.5 * std::exp(-static_cast<double>(t - kChange) / 30.0);
}

// Binomial misses around `ratio(t)` with a lookup count drawn around `mean_lookups`.
std::vector<MissPoint> noisySeries(uint64_t seed, int64_t length, uint64_t mean_lookups,
                                   const std::function<double(int64_t)>& ratio) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> lookups(mean_lookups / 2, mean_lookups * 3 / 2);
  std::vector<MissPoint> s;
  for (int64_t t = 0; t < length; ++t) {
    const uint64_t n = lookups(rng);
    const uint64_t misses = std::binomial_distribution<uint64_t>(n, ratio(t))(rng);
    s.push_back({t, n, n - misses, misses});
  }
  return s;
}

TEST_CASE("fires on a synthetic spike: baseline, peak, recovery, extra misses") {
  const auto s = exactSeries(600, decayingSpike);
  const SpikeReport r = analyzeMissSpike(s, kChange);
  REQUIRE(r.baseline_valid);
  CHECK(r.baseline == doctest::Approx(0.1));
  CHECK(r.baseline_points == 60);
  CHECK(r.threshold == doctest::Approx(0.15));  // max(0.05, 0.5 * 0.1) above 0.1
  CHECK(r.spike);
  CHECK(r.spike_start == kChange);
  CHECK(r.peak == doctest::Approx(0.6));
  CHECK(r.peak_second == kChange);
  // Tolerance max(0.01, 0.2 * 0.1) = 0.02: 0.5 * exp(-d / 30) <= 0.02 first at d = 97.
  REQUIRE(r.recovered);
  CHECK(r.recovery_seconds == 97);
  CHECK(r.recovered_at == kChange + 97);
  // Extra misses: the sum of 0.5 * exp(-d / 30) * lookups for d in [0, 97), closed form.
  const double q = std::exp(-1.0 / 30.0);
  const double expected = 0.5 * 100000 * (1 - std::pow(q, 97)) / (1 - q);
  CHECK(r.extra_misses == doctest::Approx(expected).epsilon(1e-3));
}

TEST_CASE("fires on a noisy spike and finds about the right recovery, for many seeds") {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    CAPTURE(seed);
    const auto s = noisySeries(seed, 600, 1000, decayingSpike);
    const SpikeReport r = analyzeMissSpike(s, kChange);
    CHECK(r.spike);
    CHECK(r.spike_start == kChange);
    CHECK(r.peak > 0.55);
    CHECK(r.recovered);
    // Noise-free recovery is at 97 s; noise of ~1 pp per second moves it by a few seconds.
    CHECK(r.recovery_seconds >= 85);
    CHECK(r.recovery_seconds <= 125);
  }
}

TEST_CASE("stays quiet on noise around a baseline, for many seeds") {
  int spikes = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    for (double base : {0.02, 0.1, 0.3}) {
      CAPTURE(seed);
      CAPTURE(base);
      auto s = noisySeries(seed, 600, 1000, [&](int64_t) { return base; });
      // Sparse seconds with wild ratios must be ignored, not taken for a spike.
      for (size_t i = kChange; i < s.size(); i += 7) {
        s[i] = {s[i].second, 3, 0, 3};
      }
      const SpikeReport r = analyzeMissSpike(s, kChange);
      REQUIRE(r.baseline_valid);
      CHECK(std::abs(r.baseline - base) < 0.01);
      spikes += r.spike ? 1 : 0;
      CHECK(r.recovered);
      CHECK(r.recovery_seconds < 30);
    }
  }
  CHECK(spikes == 0);
}

TEST_CASE("a shift below the margin is not a spike; above it is") {
  auto shifted = [](double after) {
    return exactSeries(400, [after](int64_t t) { return t < kChange ? 0.1 : after; });
  };
  CHECK_FALSE(analyzeMissSpike(shifted(0.13), kChange).spike);  // +3 pp < 5 pp
  CHECK(analyzeMissSpike(shifted(0.16), kChange).spike);        // +6 pp
}

TEST_CASE("a high baseline needs the relative margin") {
  auto shifted = [](double after) {
    return exactSeries(400, [after](int64_t t) { return t < kChange ? 0.4 : after; });
  };
  // Margin max(0.05, 0.5 * 0.4) = 0.2: +15 pp is not a spike, +25 pp is.
  CHECK_FALSE(analyzeMissSpike(shifted(0.55), kChange).spike);
  CHECK(analyzeMissSpike(shifted(0.65), kChange).spike);
}

TEST_CASE("a spike must last k consecutive usable seconds") {
  const auto s =
      exactSeries(400, [](int64_t t) { return t == kChange + 5 || t == kChange + 6 ? 0.9 : 0.1; });
  CHECK_FALSE(analyzeMissSpike(s, kChange).spike);  // k = 3 by default
  SpikeOptions two;
  two.consecutive = 2;
  const SpikeReport r = analyzeMissSpike(s, kChange, two);
  CHECK(r.spike);
  CHECK(r.spike_start == kChange + 5);
}

TEST_CASE("recovery needs k seconds in a row; a late lone outlier changes nothing") {
  const auto s = exactSeries(600, [](int64_t t) {
    const int64_t d = t - kChange;
    if (d < 0) {
      return 0.1;
    }
    if (d < 10) {
      return 0.5;
    }
    if (d < 12) {
      return 0.1;  // two good seconds: not yet recovered
    }
    if (d < 20) {
      return 0.4;
    }
    return d == 300 ? 0.95 : 0.1;
  });
  const SpikeReport r = analyzeMissSpike(s, kChange);
  CHECK(r.spike);
  REQUIRE(r.recovered);
  CHECK(r.recovery_seconds == 20);
  CHECK(r.peak == doctest::Approx(0.5));
  CHECK(r.peak_second == kChange);
  CHECK(r.extra_misses == doctest::Approx(10 * 0.4 * 100000 + 8 * 0.3 * 100000));
}

TEST_CASE("a spike that never recovers counts extra misses to the end of the series") {
  const auto s = exactSeries(200, [](int64_t t) { return t < kChange ? 0.1 : 0.5; });
  const SpikeReport r = analyzeMissSpike(s, kChange);
  CHECK(r.spike);
  CHECK_FALSE(r.recovered);
  CHECK(r.extra_misses == doctest::Approx(80 * 0.4 * 100000));
}

TEST_CASE("seconds with too few lookups are left out of the baseline") {
  auto s = exactSeries(300, [](int64_t) { return 0.1; });
  for (int64_t t = kChange - 60; t < kChange; t += 2) {
    s[static_cast<size_t>(t)] = {t, 10, 0, 10};  // all misses, but only 10 lookups
  }
  const SpikeReport r = analyzeMissSpike(s, kChange);
  REQUIRE(r.baseline_valid);
  CHECK(r.baseline == doctest::Approx(0.1));
  CHECK(r.baseline_points == 30);
}

TEST_CASE("no usable second before the change: no baseline, no verdict") {
  const auto s = exactSeries(300, [](int64_t t) { return t < kChange ? 0.1 : 0.9; });
  const std::vector<MissPoint> after(s.begin() + kChange, s.end());
  const SpikeReport r = analyzeMissSpike(after, kChange);
  CHECK_FALSE(r.baseline_valid);
  CHECK_FALSE(r.spike);
  CHECK(analyzeMissSpike({}, kChange).baseline_valid == false);
}

TEST_CASE("works on what MissTimeline records") {
  MissTimeline timeline;
  MissCounters totals;
  timeline.sample(1000, totals);
  for (int64_t t = 1001; t <= 1300; ++t) {
    const uint64_t misses = t >= 1200 && t < 1230 ? 400 : 50;  // 30 s at 40% after the change
    totals.gets += 1000;
    totals.hits += 1000 - misses;
    totals.misses += misses;
    timeline.sample(t, totals);
  }
  const std::vector<MissPoint> s = timeline.series();
  const SpikeReport r = analyzeMissSpike(s, 1200);
  CHECK(r.baseline == doctest::Approx(0.05));
  CHECK(r.spike);
  CHECK(r.recovery_seconds == 30);
  CHECK(r.extra_misses == doctest::Approx(30 * 350));
}

}  // namespace
}  // namespace mcring::stats
