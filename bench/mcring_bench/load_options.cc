// Flag parsing and validation for `mcring-bench load`.
#include "bench/mcring_bench/load_options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "bench/mcring_bench/key_space.h"

namespace mcring::bench {

const char kLoadUsage[] = R"(usage: mcring-bench load --server HOST:PORT [options]

Drives a memcached-text endpoint (memcached, nutcracker, mcring) on this machine with gets and
sets, and reports throughput, hit ratio, latency percentiles, errors and its own CPU use.

target
  --server HOST:PORT     loopback only: 127.0.0.0/8, [::1] or localhost   (required)
  --server-pid PID       also report that process's CPU (utime + stime from /proc/PID/stat)
                         over the measured run, in total and per reply
workload presets (applied first; any flag below overrides them, whatever the order)
  --workload NAME        mix:       50 connections, pipeline 1, set:get 1:10, 100000 uniform
                                    keys, values 32-100 B
                         gets:      as mix, gets only (0:1)
                         multiget:  as gets, each get asks 10 keys
                         pipelined: as mix, pipeline 16, set:get 1:9
                         hot:       as mix, 30% of requests on one key (--hot-keys 1:0.3)
load shape
  --connections N        TCP connections (default 16)
  --pipeline D           requests in flight per connection (default 1)
  --threads T            worker threads, each with its own event loop (default 1)
  --rate OPS             open loop: OPS requests/s scheduled over all connections, latency
                         measured from each request's scheduled time; without it, closed loop
  --timeout MS           a request unanswered this long fails its connection (default 1000)
keys and values
  --keys N               key space size (default 100000)
  --key-prefix P         key name prefix (default "key:"; keys look like key:00000042)
  --key-dist D           uniform (default) or zipf:S (Zipf with exponent S, e.g. zipf:0.99)
  --hot-keys N:SHARE     SHARE (0..1) of all requests go to the first N keys, uniformly, the
                         rest follow --key-dist (e.g. 1:0.3: 30% on one key)
  --value-size N|MIN-MAX value bytes, fixed or uniform in [MIN, MAX] (default 100)
  --ratio SET:GET        mix of sets and gets (default 1:10; 0:1 = gets only)
  --multiget K           each get asks K keys: get k1 .. kK (default 1)
  --warm                 first set every key once (pipelined, not measured), then run
  --seed N               random seed (default 1)
bounds (a run is always bounded)
  --duration S           seconds to run (default 10 when --requests is not given; max 3600)
  --requests N           stop after N requests (max 1e10); with --duration, whichever first
output
  --tls                  speak TLS to the server (its certificate is not verified: loopback
                         benchmarks only)
  --quiet                no progress line on stderr
  --json                 print the summary as one JSON object on stdout
  --timeline FILE.csv    one row per second: t,ops,gets,hits,hit_ratio,p50_us,p99_us,errors
  --help                 this text
)";

namespace {

template <typename T>
bool parseInteger(std::string_view text, T* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parseDouble(std::string_view text, double* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*out);
}

// Reads an integer flag within [lo, hi], or explains why not.
template <typename T>
bool integerIn(std::string_view flag, std::string_view text, T lo, T hi, T* out,
               std::string* error) {
  if (!parseInteger(text, out) || *out < lo || *out > hi) {
    *error = std::string(flag) + " " + std::string(text) + ": expected an integer in " +
             std::to_string(lo) + ".." + std::to_string(hi);
    return false;
  }
  return true;
}

std::string formatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

const char kWorkloadNames[] = "mix, gets, multiget, pipelined, hot";

bool applyWorkloadPreset(const std::string& name, LoadOptions* options) {
  if (name != "mix" && name != "gets" && name != "multiget" && name != "pipelined" &&
      name != "hot") {
    return false;
  }
  // What all four share: the shape of the outside review's measurement (50 connections, 100000
  // uniformly drawn keys, 32-100 B values).
  options->connections = 50;
  options->pipeline = 1;
  options->keys = 100000;
  options->zipf_exponent = 0;
  options->value_min = 32;
  options->value_max = 100;
  options->set_weight = 1;
  options->get_weight = 10;
  options->multiget = 1;
  options->hot_keys = 0;
  options->hot_share = 0;
  if (name == "hot") {
    options->hot_keys = 1;
    options->hot_share = 0.3;
  }
  if (name == "gets" || name == "multiget") {
    options->set_weight = 0;
    options->get_weight = 1;
  }
  if (name == "multiget") {
    options->multiget = 10;
  }
  if (name == "pipelined") {
    options->pipeline = 16;
    options->set_weight = 1;
    options->get_weight = 9;
  }
  options->workload = name;
  return true;
}

std::string keyDistText(const LoadOptions& options) {
  std::string text =
      options.zipf_exponent > 0 ? "zipf:" + formatDouble(options.zipf_exponent) : "uniform";
  if (options.hot_keys > 0) {
    text += " hot:" + std::to_string(options.hot_keys) + ":" + formatDouble(options.hot_share);
  }
  return text;
}

std::string valueSizeText(const LoadOptions& options) {
  if (options.value_min == options.value_max) {
    return std::to_string(options.value_min);
  }
  return std::to_string(options.value_min) + "-" + std::to_string(options.value_max);
}

std::string ratioText(const LoadOptions& options) {
  return std::to_string(options.set_weight) + ":" + std::to_string(options.get_weight);
}

std::optional<LoadOptions> parseLoadFlags(const std::vector<std::string>& args, LoadOutput* output,
                                          bool* help, std::string* error) {
  LoadOptions options;
  bool have_server = false;
  bool have_duration = false;
  *help = false;

  // The preset first, so that every other flag overrides it wherever it stands.
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name;
    if (args[i] == "--workload" && i + 1 < args.size()) {
      name = args[i + 1];
    } else if (args[i].starts_with("--workload=")) {
      name = args[i].substr(std::string_view("--workload=").size());
    } else {
      continue;
    }
    if (!options.workload.empty() && options.workload != name) {
      *error = "--workload given twice";
      return std::nullopt;
    }
    if (!applyWorkloadPreset(name, &options)) {
      *error = "--workload " + name + ": expected one of " + kWorkloadNames;
      return std::nullopt;
    }
  }

  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view flag = args[i];
    std::string inline_value;
    bool has_inline = false;
    if (const size_t eq = flag.find('='); flag.starts_with("--") && eq != std::string_view::npos) {
      inline_value = std::string(flag.substr(eq + 1));
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    // Boolean flags first; every other flag takes one value.
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return std::nullopt;
    }
    if (flag == "--warm" || flag == "--quiet" || flag == "--json" || flag == "--tls") {
      if (has_inline) {
        *error = std::string(flag) + " takes no value";
        return std::nullopt;
      }
      if (flag == "--warm") {
        options.warm = true;
      } else if (flag == "--quiet") {
        output->quiet = true;
      } else if (flag == "--tls") {
        output->tls = true;
      } else {
        output->json = true;
      }
      continue;
    }
    std::string value;
    if (has_inline) {
      value = inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = std::string(flag) + " needs a value (see --help)";
      return std::nullopt;
    }

    if (flag == "--workload") {
      continue;  // applied above
    } else if (flag == "--server-pid") {
      if (!integerIn<int>(flag, value, 1, 1 << 30, &options.server_pid, error)) {
        return std::nullopt;
      }
    } else if (flag == "--server") {
      auto endpoint = parseLoopbackEndpoint(value, error);
      if (!endpoint) {
        return std::nullopt;
      }
      options.server = *endpoint;
      have_server = true;
    } else if (flag == "--connections") {
      if (!integerIn<uint32_t>(flag, value, 1, 4096, &options.connections, error)) {
        return std::nullopt;
      }
    } else if (flag == "--pipeline") {
      if (!integerIn<uint32_t>(flag, value, 1, 1024, &options.pipeline, error)) {
        return std::nullopt;
      }
    } else if (flag == "--threads") {
      if (!integerIn<uint32_t>(flag, value, 1, 64, &options.threads, error)) {
        return std::nullopt;
      }
    } else if (flag == "--keys") {
      if (!integerIn<uint64_t>(flag, value, 1, 1'000'000'000, &options.keys, error)) {
        return std::nullopt;
      }
    } else if (flag == "--key-prefix") {
      for (char c : value) {
        if (c <= ' ' || c == 0x7f) {
          *error = "--key-prefix: memcached keys cannot hold spaces or control characters";
          return std::nullopt;
        }
      }
      options.key_prefix = value;
    } else if (flag == "--key-dist") {
      if (value == "uniform") {
        options.zipf_exponent = 0;
      } else if (value.starts_with("zipf:") &&
                 parseDouble(std::string_view(value).substr(5), &options.zipf_exponent) &&
                 options.zipf_exponent > 0 && options.zipf_exponent <= 10) {
        // parsed in the condition
      } else {
        *error = "--key-dist " + value + ": expected uniform or zipf:S with 0 < S <= 10";
        return std::nullopt;
      }
    } else if (flag == "--hot-keys") {
      const size_t colon = value.find(':');
      if (colon == std::string::npos ||
          !parseInteger(std::string_view(value).substr(0, colon), &options.hot_keys) ||
          !parseDouble(std::string_view(value).substr(colon + 1), &options.hot_share) ||
          options.hot_keys == 0 || options.hot_share <= 0 || options.hot_share > 1) {
        *error = "--hot-keys " + value + ": expected N:SHARE with N >= 1 and 0 < SHARE <= 1";
        return std::nullopt;
      }
    } else if (flag == "--value-size") {
      const size_t dash = value.find('-');
      const std::string lo = value.substr(0, dash);
      const std::string hi = dash == std::string::npos ? lo : value.substr(dash + 1);
      if (!integerIn<uint32_t>(flag, lo, 1, 1024 * 1024, &options.value_min, error) ||
          !integerIn<uint32_t>(flag, hi, 1, 1024 * 1024, &options.value_max, error)) {
        return std::nullopt;
      }
      if (options.value_min > options.value_max) {
        *error = "--value-size " + value + ": MIN is above MAX";
        return std::nullopt;
      }
    } else if (flag == "--ratio") {
      const size_t colon = value.find(':');
      if (colon == std::string::npos ||
          !parseInteger(std::string_view(value).substr(0, colon), &options.set_weight) ||
          !parseInteger(std::string_view(value).substr(colon + 1), &options.get_weight) ||
          options.set_weight + options.get_weight == 0 || options.set_weight > 1000000 ||
          options.get_weight > 1000000) {
        *error = "--ratio " + value + ": expected SET:GET, e.g. 1:10 (not both 0)";
        return std::nullopt;
      }
    } else if (flag == "--multiget") {
      if (!integerIn<uint32_t>(flag, value, 1, 1000, &options.multiget, error)) {
        return std::nullopt;
      }
    } else if (flag == "--rate") {
      if (!parseDouble(value, &options.rate) || options.rate <= 0 || options.rate > 1e8) {
        *error = "--rate " + value + ": expected requests per second in (0, 1e8]";
        return std::nullopt;
      }
    } else if (flag == "--duration") {
      if (!parseDouble(value, &options.duration_s) || options.duration_s <= 0 ||
          options.duration_s > LoadOptions::kMaxDurationSeconds) {
        *error = "--duration " + value + ": expected seconds in (0, 3600]";
        return std::nullopt;
      }
      have_duration = true;
    } else if (flag == "--requests") {
      if (!integerIn<uint64_t>(flag, value, 1, LoadOptions::kMaxRequests, &options.requests,
                               error)) {
        return std::nullopt;
      }
    } else if (flag == "--seed") {
      if (!integerIn<uint64_t>(flag, value, 0, UINT64_MAX, &options.seed, error)) {
        return std::nullopt;
      }
    } else if (flag == "--timeout") {
      if (!integerIn<uint32_t>(flag, value, 1, 60000, &options.timeout_ms, error)) {
        return std::nullopt;
      }
    } else if (flag == "--timeline") {
      output->timeline_path = value;
    } else {
      *error = "unknown flag " + std::string(flag) + " (see --help)";
      return std::nullopt;
    }
  }

  if (!have_server) {
    *error = "--server HOST:PORT is required (see --help)";
    return std::nullopt;
  }
  // --requests alone still stops at the hard cap, so that a stalled server cannot hang a run.
  if (!have_duration) {
    options.duration_s = options.requests > 0 ? LoadOptions::kMaxDurationSeconds
                                              : LoadOptions::kDefaultDurationSeconds;
  }
  if (options.threads > options.connections) {
    *error = "--threads must not exceed --connections (each thread needs a connection)";
    return std::nullopt;
  }
  if (KeySpace(options.key_prefix, options.keys).keyLength() > 250) {
    *error = "--key-prefix: keys would exceed memcached's 250-byte limit";
    return std::nullopt;
  }
  return options;
}

}  // namespace mcring::bench
