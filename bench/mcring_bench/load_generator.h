// The load engine: threads of workers against one endpoint, with a per-second callback.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "bench/mcring_bench/load_options.h"
#include "bench/mcring_bench/load_stats.h"

namespace mcring::bench {

struct LoadResult {
  IntervalStats total;     // the whole measured run (warm-up excluded)
  double duration_s = 0;   // from the start until the last reply or failure
  double cpu_seconds = 0;  // this process, user + system, during the measured run
  double cpu_user_seconds = 0;
  // --server-pid: that process's user + system CPU seconds over the same window; -1 when not
  // asked for or unreadable (the process is gone, or /proc is not Linux's).
  double server_cpu_seconds = -1;
  uint64_t unsent = 0;   // open loop: due but never sent, every connection being full
  uint32_t seconds = 0;  // intervals reported
  bool warmed = false;
  LoadCounters warm;  // the warm-up's sets (not in total)
  double warm_seconds = 0;

  double opsPerSecond() const {
    return duration_s > 0 ? static_cast<double>(total.counters.replies) / duration_s : 0;
  }
  // Server CPU microseconds per reply; -1 when unknown.
  double serverCpuUsPerReply() const {
    return server_cpu_seconds >= 0 && total.counters.replies > 0
               ? server_cpu_seconds * 1e6 / static_cast<double>(total.counters.replies)
               : -1;
  }
  double cpuPercentOfOneCore() const {
    return duration_s > 0 ? 100.0 * cpu_seconds / duration_s : 0;
  }
};

// Usage (the CLI and the stampede experiment):
//   LoadGenerator generator(options);
//   generator.onSecond([](const IntervalStats& s) { ... });  // runs on the calling thread
//   LoadResult result = generator.run();                     // blocks until the run ends
// requestStop() may be called from any thread, or a signal handler, to end the run early (it
// then drains for up to --timeout like at the deadline).
class LoadGenerator {
 public:
  using SecondCallback = std::function<void(const IntervalStats&)>;

  explicit LoadGenerator(LoadOptions options) : options_(std::move(options)) {}

  void onSecond(SecondCallback callback) { on_second_ = std::move(callback); }

  // Ignores SIGPIPE process-wide: a server closing mid-write must be an error count, not death.
  LoadResult run();

  // Async-signal-safe.
  void requestStop() { stop_.store(true, std::memory_order_relaxed); }

  const LoadOptions& options() const { return options_; }

 private:
  LoadOptions options_;
  SecondCallback on_second_;
  std::atomic<bool> stop_{false};
};

// User + system CPU seconds of process `pid` so far (all threads), from /proc/PID/stat; -1 when
// unreadable (e.g. the process is gone). Also used by the stampede experiment.
double processCpuSeconds(int pid);

}  // namespace mcring::bench
