// Did a change (a reload, a membership change) cause a miss-ratio spike, how big, how long?
//
// Pure function of a per-second series (MissTimeline::series()) and the change's second; no
// state, safe from any thread.
//
// Definitions (all ratios are misses / answered lookups, see MissPoint):
// - A second is *usable* when it has at least min_lookups answered lookups; other seconds are
//   too noisy to judge and are skipped (they neither start nor break a run below).
// - baseline: the lookup-weighted mean miss ratio (sum of misses / sum of lookups) of the usable
//   seconds in [change - baseline_seconds, change). No usable second: no baseline, no verdict.
// - margin = max(abs_threshold, rel_threshold * baseline).
// - spike: `consecutive` usable seconds in a row, at or after the change and within the
//   horizon, each with miss ratio >= baseline + margin. spike_start is the first such run's
//   first second.
// - recovered: the first run of `consecutive` usable seconds, each with miss ratio <= baseline +
//   tolerance (tolerance = max(recovery_abs_tolerance, recovery_rel_tolerance * baseline)),
//   searched from spike_start when there is a spike, else from the change. A ratio below the
//   baseline counts as recovered. recovered_at is the run's first second; recovery_seconds =
//   recovered_at - change.
// - peak: the highest miss ratio among usable seconds from the change to recovered_at (to the
//   horizon when there is no spike or no recovery), and its second.
// - extra_misses: sum over every second in [change, recovered_at) (to the end of the horizon or
//   of the series when not recovered) of misses - baseline * lookups; never below 0. The misses
//   the change cost, over what the old miss ratio would have given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "proxy/stats/miss_timeline.h"

namespace mcring::stats {

struct SpikeOptions {
  int64_t baseline_seconds = 60;
  uint64_t min_lookups = 50;
  double abs_threshold = 0.05;  // miss-ratio units: 0.05 is 5 percentage points
  double rel_threshold = 0.5;   // of the baseline
  int consecutive = 3;          // k
  double recovery_abs_tolerance = 0.01;
  double recovery_rel_tolerance = 0.2;
  int64_t horizon_seconds = 900;  // judged at most this long after the change
};

struct SpikeReport {
  bool baseline_valid = false;
  double baseline = 0;
  size_t baseline_points = 0;  // usable seconds averaged
  double threshold = 0;        // baseline + margin

  bool spike = false;
  int64_t spike_start = 0;

  double peak = 0;
  int64_t peak_second = 0;

  bool recovered = false;
  int64_t recovered_at = 0;
  int64_t recovery_seconds = 0;

  double extra_misses = 0;
};

// `series` ascending by second (as MissTimeline::series() returns it).
SpikeReport analyzeMissSpike(std::span<const MissPoint> series, int64_t change_second,
                             const SpikeOptions& options = {});

}  // namespace mcring::stats
