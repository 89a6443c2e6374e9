// What a load run does (the engine's input) and the `mcring-bench load` flags that set it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/mcring_bench/endpoint.h"

namespace mcring::bench {

struct LoadOptions {
  // Hard caps: a run is always bounded, whatever the flags say.
  static constexpr double kMaxDurationSeconds = 3600;
  static constexpr uint64_t kMaxRequests = 10'000'000'000ULL;
  static constexpr double kDefaultDurationSeconds = 10;

  Endpoint server;
  uint32_t connections = 16;
  uint32_t pipeline = 1;  // requests in flight per connection
  uint32_t threads = 1;
  uint64_t keys = 100000;
  std::string key_prefix = "key:";
  double zipf_exponent = 0;  // 0: uniform
  uint64_t hot_keys = 0;     // --hot-keys N:SHARE: SHARE of requests on keys 0..N-1
  double hot_share = 0;
  uint32_t value_min = 100;
  uint32_t value_max = 100;
  uint32_t set_weight = 1;  // --ratio SET:GET
  uint32_t get_weight = 10;
  uint32_t multiget = 1;                        // keys per get
  double rate = 0;                              // requests/s over all connections; 0: closed loop
  double duration_s = kDefaultDurationSeconds;  // always set, capped
  uint64_t requests = 0;                        // 0: no request bound
  bool warm = false;
  uint64_t seed = 1;
  uint32_t timeout_ms = 1000;  // a request without reply for this long fails its connection
  std::string workload;        // the --workload preset the flags started from; empty: none
  int server_pid = 0;          // --server-pid: also report this process's CPU; 0: none

  bool openLoop() const { return rate > 0; }
};

// CLI-only settings: where the report goes.
struct LoadOutput {
  bool tls = false;  // --tls: every connection speaks TLS (ClientSocket::useTls)
  bool quiet = false;
  bool json = false;
  std::string timeline_path;
};

extern const char kLoadUsage[];

// --workload NAME: a named preset of the load-shape, key and value flags, applied before the other
// flags (which override it whatever their order). False for an unknown name.
//   mix        50 connections, pipeline 1, 1:10 set:get, 100000 uniform keys, 32-100 B values
//   gets       as mix, gets only (0:1)
//   multiget   as gets, each get asks 10 keys
//   pipelined  as mix with pipeline 16 and 1:9
bool applyWorkloadPreset(const std::string& name, LoadOptions* options);
extern const char kWorkloadNames[];  // "mix, gets, multiget, pipelined"

// Parses `load` flags (args exclude the subcommand). On error returns nullopt with a sentence in
// *error. help is set (and nullopt returned) for --help.
std::optional<LoadOptions> parseLoadFlags(const std::vector<std::string>& args, LoadOutput* output,
                                          bool* help, std::string* error);

// "zipf:0.99" or "uniform", "100" or "10-1000", "1:10": the spellings reports print back.
std::string keyDistText(const LoadOptions& options);
std::string valueSizeText(const LoadOptions& options);
std::string ratioText(const LoadOptions& options);

}  // namespace mcring::bench
