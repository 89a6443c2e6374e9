// Miss-ratio spike after a change: baseline, peak, spike run, recovery run, extra misses.
#include "proxy/stats/spike_detector.h"

#include <algorithm>

namespace mcring::stats {
namespace {

// The first second of the first run of `k` usable points in [begin, end) satisfying `pred`;
// -1 (as an index) when there is none.
template <typename Pred>
ptrdiff_t firstRun(std::span<const MissPoint> s, size_t begin, size_t end, uint64_t min_lookups,
                   int k, Pred pred) {
  int run = 0;
  ptrdiff_t run_start = -1;
  for (size_t i = begin; i < end; ++i) {
    if (s[i].lookups() < min_lookups) {
      continue;  // too few lookups to judge: neither extends nor breaks a run
    }
    if (!pred(s[i].missRatio())) {
      run = 0;
      continue;
    }
    if (run == 0) {
      run_start = static_cast<ptrdiff_t>(i);
    }
    if (++run >= k) {
      return run_start;
    }
  }
  return -1;
}

}  // namespace

SpikeReport analyzeMissSpike(std::span<const MissPoint> series, int64_t change_second,
                             const SpikeOptions& options) {
  SpikeReport r;
  const int k = std::max(options.consecutive, 1);
  uint64_t base_misses = 0;
  uint64_t base_lookups = 0;
  for (const MissPoint& p : series) {
    if (p.second >= change_second - options.baseline_seconds && p.second < change_second &&
        p.lookups() >= options.min_lookups) {
      base_misses += p.misses;
      base_lookups += p.lookups();
      ++r.baseline_points;
    }
  }
  if (r.baseline_points == 0) {
    return r;
  }
  r.baseline_valid = true;
  r.baseline = static_cast<double>(base_misses) / static_cast<double>(base_lookups);
  r.threshold = r.baseline + std::max(options.abs_threshold, options.rel_threshold * r.baseline);
  const double tolerance =
      std::max(options.recovery_abs_tolerance, options.recovery_rel_tolerance * r.baseline);

  // [begin, end): the points judged, from the change to the horizon.
  const auto by_second = [](const MissPoint& p, int64_t s) { return p.second < s; };
  const auto begin = static_cast<size_t>(
      std::lower_bound(series.begin(), series.end(), change_second, by_second) - series.begin());
  const auto end =
      static_cast<size_t>(std::lower_bound(series.begin(), series.end(),
                                           change_second + options.horizon_seconds, by_second) -
                          series.begin());
  if (begin >= end) {
    return r;
  }

  const ptrdiff_t spike = firstRun(series, begin, end, options.min_lookups, k,
                                   [&](double ratio) { return ratio >= r.threshold; });
  r.spike = spike >= 0;
  if (r.spike) {
    r.spike_start = series[static_cast<size_t>(spike)].second;
  }

  // Seconds of a spike run are above the threshold, so a recovery run starts after it begins.
  const ptrdiff_t recovered =
      firstRun(series, r.spike ? static_cast<size_t>(spike) : begin, end, options.min_lookups, k,
               [&](double ratio) { return ratio <= r.baseline + tolerance; });
  r.recovered = recovered >= 0;
  const size_t episode_end = r.recovered ? static_cast<size_t>(recovered) : end;
  if (r.recovered) {
    r.recovered_at = series[episode_end].second;
    r.recovery_seconds = r.recovered_at - change_second;
  }

  // The peak of the episode, so a lone noisy second long after the recovery does not count.
  const size_t peak_end = r.spike && r.recovered ? episode_end : end;
  bool any_usable = false;
  for (size_t i = begin; i < peak_end; ++i) {
    if (series[i].lookups() >= options.min_lookups &&
        (!any_usable || series[i].missRatio() > r.peak)) {
      any_usable = true;
      r.peak = series[i].missRatio();
      r.peak_second = series[i].second;
    }
  }

  double extra = 0;
  for (size_t i = begin; i < episode_end; ++i) {
    extra += static_cast<double>(series[i].misses) -
             r.baseline * static_cast<double>(series[i].lookups());
  }
  r.extra_misses = std::max(extra, 0.0);
  return r;
}

}  // namespace mcring::stats
