// What a stampede experiment does: scenarios, their theory, and the `mcring-bench stampede` flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcring::bench {

// One table for the scenarios: flag name, what changes at time T, and the theory of how many
// warmed keys stop being found where they were. N is --backends.
#define MCRING_STAMPEDE_SCENARIOS(X)                                                  \
  X(Add, "add", "N -> N+1: a server is appended to the config, then SIGHUP")          \
  X(Remove, "remove", "N -> N-1: the last server is dropped from the config, SIGHUP") \
  X(Double, "double", "N -> 2N: N servers are appended to the config, then SIGHUP")   \
  X(Crash, "crash", "kill -9 of the last backend; config unchanged (no reload)")

enum class Scenario : uint8_t {
#define MCRING_X(id, name, text) id,
  MCRING_STAMPEDE_SCENARIOS(MCRING_X)
#undef MCRING_X
};

std::string_view scenarioName(Scenario s);
std::string_view scenarioText(Scenario s);
// Backends in the config before and after the change (crash: the same N, one of them dead).
uint32_t serversBefore(Scenario s, uint32_t n);
uint32_t serversAfter(Scenario s, uint32_t n);
// Backends the experiment needs running at the start (add and double start the new ones early,
// empty, so that the reload only has to change the config).
uint32_t backendsNeeded(Scenario s, uint32_t n);
// Fraction of keys that change server (crash: that are lost) in theory, for an ideal
// distribution; modula moves all but those whose hash agrees mod both sizes. With replicas
// R > 1 a key "moves" when its set of servers changes (crash: when no copy survives, so 0);
// -1 where there is no simple formula (modula, and double, with R > 1).
double theoryMovedFraction(Scenario s, std::string_view distribution, uint32_t n,
                           uint32_t replicas = 1);
// The sentence that goes with it in reports.
std::string theoryText(Scenario s, uint32_t n, uint32_t replicas = 1);

struct StampedeOptions {
  std::vector<Scenario> scenarios = {Scenario::Add};
  std::vector<std::string> distributions = {"modula", "ketama", "jump", "rendezvous", "maglev"};
  uint32_t backends = 10;     // N
  uint64_t keys = 200000;     // warmed key space
  double zipf = 0.5;          // get keys are Zipf(zipf) over the key space
  double rate = 5000;         // gets per second (open loop); refills come on top
  double before_s = 5;        // steady load before the change
  double after_s = 30;        // load after the change, counted from when it was applied
  uint32_t connections = 8;   // client connections to the proxy
  uint32_t pipeline = 8;      // requests in flight per connection at most
  uint32_t value_size = 100;  // bytes
  bool refill = true;         // cache-aside: a get miss is followed by a set of that key
  uint64_t seed = 1;
  uint32_t timeout_ms = 1000;  // a request unanswered this long fails its connection
  uint32_t proxy_threads = 1;  // mcring --threads
  // --replicas LIST: each distribution runs once per count, the pool config saying
  // `replicas: R` (omitted for 1). Runs with R > 1 are labelled DIST+rR.
  std::vector<uint32_t> replicas = {1};
  bool quick = false;
  bool with_nutcracker = false;
  // --warmup: each distribution runs twice against mcring, without and with the pool's warm
  // migration (`warmup_window: warmup_window_ms` in both configs). nutcracker never.
  bool warmup = false;
  // --warmup-window MS; 0 until parsed: then (ceil(--after) + kWarmupWindowMarginS) s, so that
  // the window covers the whole measured period after the change.
  uint32_t warmup_window_ms = 0;
  bool json = false;
  bool quiet = false;
  std::string out_dir = "bench/results";
  std::string mcring_path;  // empty: next to this binary
  std::string memcached_path = "/usr/bin/memcached";
  std::string nutcracker_path = "/usr/sbin/nutcracker";
  std::vector<uint16_t> given_servers;  // --servers: running backends to use instead of starting
  std::string hash = "fnv1a_64";
};

// Seconds the default --warmup-window adds to --after (the window opens at the switch, a few ms
// before t0; the margin also covers a slow machine).
constexpr uint32_t kWarmupWindowMarginS = 5;

extern const char kStampedeUsage[];

// Parses `stampede` flags (args exclude the subcommand). nullopt with *error (or *help) set.
std::optional<StampedeOptions> parseStampedeFlags(const std::vector<std::string>& args, bool* help,
                                                  std::string* error);

}  // namespace mcring::bench
