// Watches pools over time: samples miss ratios each second, and turns every membership change
// into an event with its predicted cost (from the two topologies) and its measured cost (the
// miss spike that followed).
//
// Main thread writes (sampling, new events); any thread reads (a mutex guards events; the
// timelines lock themselves). Never on the request path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/net/event_loop.h"
#include "proxy/routing/migration.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/miss_timeline.h"
#include "proxy/stats/spike_detector.h"

namespace mcring::core {

struct MembershipEvent {
  uint64_t id = 0;
  int64_t time = 0;           // unix seconds
  int64_t change_second = 0;  // on the monitor's monotonic second clock
  std::string kind;           // "reload"
  std::string pool;
  size_t servers_before = 0;
  size_t servers_after = 0;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  uint32_t warmup_window_ms = 0;  // warm migration was on for this change (0: off)
  // Prediction.
  std::string method;  // exact / sampled / independent
  double predicted_moved = 0;
  double modula_moved = 0;
  // The least any ring must move for this change (config::idealMovedShare), and the warning
  // when the prediction is above twice that (config::excessMoveWarning; "" when not).
  double ideal_moved = 0;
  std::string warning;
  std::vector<routing::MigrationCell> cells;  // largest first
  std::vector<std::string> before_ids;
  std::vector<std::string> after_ids;
  // Measurement (updated each second until judged): misses as clients saw them, so misses
  // answered by warm-up from a key's previous server do not count.
  stats::SpikeReport measured;
  bool judged = false;  // recovered, or horizon reached: the verdict line was logged
  std::string verdict;
};

class MembershipMonitor {
 public:
  // `backend_lists`: each worker's per-backend stats (they outlive the monitor).
  MembershipMonitor(net::EventLoop& loop, std::vector<const stats::BackendStatsList*> lists);

  // Records events for the pools whose servers changed between two snapshots. kind: "reload",
  // "eject" (a failing server left the ring) or "return" (it came back).
  void onTopologyChange(const config::Topology& before, const config::Topology& after,
                        const std::string& kind = "reload");

  std::vector<MembershipEvent> events() const;
  // Per-second miss points of a pool ("" = none) or of one of its backends.
  std::vector<stats::MissPoint> poolSeries(const std::string& pool) const;
  std::vector<stats::MissPoint> backendSeries(const std::string& pool,
                                              const std::string& identity) const;
  const stats::SpikeOptions& spikeOptions() const { return spike_options_; }
  // The monotonic second clock that MissPoint::second and change_second count on.
  int64_t nowSecond() const;

 private:
  void sampleSecond();
  void judge(MembershipEvent& e);

  std::vector<const stats::BackendStatsList*> lists_;
  std::unique_ptr<net::Timer> timer_;
  stats::SpikeOptions spike_options_;
  mutable std::mutex mutex_;  // guards the maps' structure and events_
  std::map<std::string, std::unique_ptr<stats::MissTimeline>> pool_timelines_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<stats::MissTimeline>>
      backend_timelines_;
  std::vector<MembershipEvent> events_;
  uint64_t next_id_ = 1;
  static constexpr size_t kKeepEvents = 100;
};

}  // namespace mcring::core
