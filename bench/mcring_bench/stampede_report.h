// What a stampede run found, and how it is shown: per-second series aligned to the change, the
// summary metrics, CSV, markdown table, JSON and the gnuplot figure.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/mcring_bench/load_stats.h"
#include "bench/mcring_bench/stampede_client.h"
#include "bench/mcring_bench/stampede_options.h"
#include "bench/mcring_bench/stampede_processes.h"

namespace mcring::bench {

// One second of a run. t counts seconds from the change: row t covers [t0 + (t-1) s, t0 + t s),
// so t = 1 is the first second after the change and t <= 0 are before it.
struct StampedeSecond {
  int t = 0;
  StampedeSlot counts;
  // hits / gets; -1 when no get ended in it.
  double hitRatio() const {
    return counts.gets == 0 ? -1.0 : static_cast<double>(counts.hits) / counts.gets;
  }
};

struct StampedeRun {
  std::string proxy;  // "mcring" or "nutcracker"
  std::string distribution;
  bool warmup = false;  // mcring with `warmup_window` in the pool config (--warmup)
  uint32_t replicas = 1;  // the pool's `replicas` (--replicas)
  Scenario scenario = Scenario::Add;
  uint32_t servers_before = 0;
  uint32_t servers_after = 0;
  std::vector<StampedeSecond> seconds;

  // Summary (see summarize()).
  double hit_ratio_before = -1;         // baseline: whole seconds before, but the first and t = 0
  double hit_ratio_after = -1;          // t = 1
  double hit_ratio_min = -1;            // over t = 1 .. after
  std::optional<int> recovery_seconds;  // first t >= 1 at >= 95% of baseline
  double moved_fraction = -1;           // measured on the backends
  double moved_weighted = -1;  // the same, each key weighted by its Zipf request probability
  std::optional<double> moved_fraction_route;  // `mcring route` with both configs
  double theory_moved_fraction = 0;
  uint64_t keys_checked = 0;    // warmed keys found on exactly one backend before
  uint64_t warm_anomalies = 0;  // keys missing or on two backends after the warm-up
  double change_ms = 0;         // SIGHUP -> applied; stop -> serving again; kill -> reaped
  std::string change_source;    // reload record source (signal/file), or what was done
  uint64_t errors_after = 0;    // requests ended by an error in t = 1 .. after
  std::array<uint64_t, kLoadErrorCount> error_kinds{};  // whole run
  uint64_t unsent = 0;
  uint64_t refills_dropped = 0;
  std::string csv_path;
  std::string error;  // non-empty: the run failed (and says why)

  // What replication costs (--replicas), -1 when not measured. Backend writes are the backends'
  // own `stats` (cmd_set + deletes + incr/decr + touches); the crashed backend's are read just
  // before the kill. CPU is the proxy's utime + stime from /proc/PID/stat.
  uint64_t warm_client_sets = 0;       // warm-up sets through the proxy (every key once)
  uint64_t warm_backend_writes = 0;    // what the backends counted over the warm-up
  uint64_t load_client_writes = 0;     // refill sets ended over the load (before and after t0)
  uint64_t load_backend_writes = 0;    // what the backends counted over the load
  uint64_t load_requests = 0;          // client requests ended over the load (gets and sets)
  uint64_t load_requests_before = 0;   // ... of which before the change (t0)
  double proxy_cpu_warm_s = -1;        // the proxy's CPU over the warm-up
  double proxy_cpu_load_s = -1;        // ... over the load
  double proxy_cpu_before_s = -1;      // ... over the load before the change
  double warmWriteAmplification() const {
    return warm_client_sets == 0 ? -1
                                 : static_cast<double>(warm_backend_writes) / warm_client_sets;
  }
  double loadWriteAmplification() const {
    return load_client_writes == 0 ? -1
                                   : static_cast<double>(load_backend_writes) / load_client_writes;
  }
  double proxyUsPerWarmSet() const {
    return proxy_cpu_warm_s < 0 || warm_client_sets == 0 ? -1
                                                         : proxy_cpu_warm_s * 1e6 / warm_client_sets;
  }
  double proxyUsPerLoadRequest() const {
    return proxy_cpu_load_s < 0 || load_requests == 0 ? -1
                                                       : proxy_cpu_load_s * 1e6 / load_requests;
  }
  double proxyUsPerRequestBefore() const {
    return proxy_cpu_before_s < 0 || load_requests_before == 0
               ? -1
               : proxy_cpu_before_s * 1e6 / load_requests_before;
  }
  double proxyUsPerRequestAfter() const {
    const uint64_t after = load_requests - load_requests_before;
    return proxy_cpu_before_s < 0 || proxy_cpu_load_s < 0 || after == 0
               ? -1
               : (proxy_cpu_load_s - proxy_cpu_before_s) * 1e6 / after;
  }

  // The distribution as the table and the plot show it: `ketama+warmup` for a warm-up run,
  // `ketama+r2` for replicas 2.
  std::string shownDistribution() const {
    return distribution + (warmup ? "+warmup" : "") +
           (replicas > 1 ? "+r" + std::to_string(replicas) : "");
  }
  // The run's name in file names, the plot's key and progress: `ketama`, `ketama+warmup`,
  // `nutcracker-ketama`.
  std::string label() const {
    return proxy == "mcring" ? shownDistribution() : proxy + "-" + shownDistribution();
  }
};

// Cuts the client's millisecond slots into whole seconds around t0 (both CLOCK_MONOTONIC ns):
// as many whole seconds before t0 as fit after start_ns, and after_seconds after it.
std::vector<StampedeSecond> secondsAround(const std::vector<StampedeSlot>& slots, uint64_t start_ns,
                                          uint64_t t0_ns, int after_seconds);

// Fills the hit-ratio fields of run from run->seconds.
void summarize(StampedeRun* run);

// t,gets,hits,hit_ratio,ops,errors,refills: one row per second. False (and *error) on I/O errors.
bool writeRunCsv(const StampedeRun& run, const std::string& path, std::string* error);

// The markdown table of one scenario's runs (and the theory line above it).
std::string markdownTable(const StampedeOptions& options, Scenario scenario,
                          const std::vector<StampedeRun>& runs);
std::string markdownReport(const StampedeOptions& options, const std::vector<StampedeRun>& runs,
                           const std::string& command);

// One JSON object: params and one entry per run.
std::string jsonReport(const StampedeOptions& options, const std::vector<StampedeRun>& runs,
                       const std::vector<std::string>& plots);

// Writes <out>/stampede_<scenario>.gp and renders .svg and .png with gnuplot. Returns the paths
// written; when gnuplot is missing prints a warning to stderr and returns none.
// gnuplot runs as a child of `processes`, bounded in time.
std::vector<std::string> plotScenario(const StampedeOptions& options, Scenario scenario,
                                      const std::vector<StampedeRun>& runs,
                                      ChildProcesses& processes);

}  // namespace mcring::bench
