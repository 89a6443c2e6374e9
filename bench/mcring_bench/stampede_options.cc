// Flag parsing for `mcring-bench stampede`, and the scenario table's theory.
#include "bench/mcring_bench/stampede_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <type_traits>

namespace mcring::bench {

const char kStampedeUsage[] = R"(usage: mcring-bench stampede [options]

Cache stampede experiment. Starts K memcached backends and mcring on loopback, warms the key
space through mcring (every key set once), runs a steady open-loop get load with Zipf-distributed
keys, then at time T changes the pool (rewrites the YAML and sends SIGHUP, or kills a backend)
and records the hit ratio per second before and after, for each distribution. The client is
cache-aside by default: a get miss is followed by a set of that key (the "database" answer), so
the hit ratio recovers as the new owners are filled. The fraction of warmed keys that moved is
measured on the backends themselves (which keys each holds under the old and the new config)
and cross-checked with `mcring route`.

experiment
  --scenario S           add | remove | double | crash | all (default add)
                           add: N -> N+1   remove: N -> N-1   double: N -> 2N
                           crash: kill -9 of one backend, no config change
  --distributions LIST   comma-separated (default modula,ketama,jump,rendezvous,maglev)
  --backends N           N, the pool size before the change (default 10; 2..64)
  --with-nutcracker      also run the add scenario against nutcracker (modula and/or ketama,
                         whichever are in LIST; ketama otherwise), restarted with the new config
  --quick                the add scenario, all 5 distributions, in under a minute: --keys 100000
                         --rate 2000 --before 3 --after 4 (flags given explicitly still win);
                         with --warmup, only modula,ketama unless --distributions is given
  --warmup               run each distribution twice against mcring: without and with warm
                         migration (`warmup_window: MS` in the pool config before and after the
                         change); labelled DIST and DIST+warmup. nutcracker runs never warm up
  --replicas LIST        comma-separated replica counts, e.g. 1,2 (default 1): each distribution
                         runs once per count with `replicas: R` in the pool config (writes go
                         to the key's R servers, reads fail over); labelled DIST+rR for R > 1.
                         jump has no replica sets: it runs with R = 1 only
  --warmup-window MS     the warm-up window (default: --after + 5 s, so that it covers the whole
                         measured period after the change; 1..3600000); implies --warmup
load
  --keys N               warmed key space (default 200000)
  --zipf S               Zipf exponent of the get keys (default 0.5; 0 = uniform)
  --rate R               gets per second, open loop (default 5000); refill sets come on top.
                         Keep it well below what the proxy sustains on this machine
  --before S             seconds of load before the change (default 5)
  --after S              seconds of load after the change is applied (default 30)
  --connections N        client connections (default 8)
  --pipeline D           requests in flight per connection at most (default 8)
  --value-size N         value bytes (default 100)
  --no-refill            do not set a key after a miss (the hit ratio then never recovers)
  --timeout MS           a request unanswered this long fails its connection (default 1000)
  --seed N               random seed (default 1)
processes
  --mcring PATH          mcring binary (default: the one next to mcring-bench)
  --proxy-threads N      mcring --threads (default 1)
  --memcached PATH       (default /usr/bin/memcached)
  --nutcracker PATH      (default /usr/sbin/nutcracker)
  --servers PORTS        use memcached servers already running on 127.0.0.1 at these ports
                         (comma-separated, at least as many as the scenario needs; they are
                         flushed) instead of starting them; not with crash
  --hash H               key hash in the pool config (default fnv1a_64)
output
  --out DIR              CSV per run, summary table (.md, .json) and plots (default bench/results)
  --json                 print the summary as one JSON object on stdout
  --quiet                no progress on stderr
  --help                 this text

Every process started is stopped by its PID at the end, on error and on Ctrl-C. Runs are
bounded: --before and --after are at most 600 s each.
)";

namespace {

struct ScenarioRow {
  Scenario id;
  std::string_view name;
  std::string_view text;
};

constexpr ScenarioRow kScenarios[] = {
#define MCRING_X(id, name, text) {Scenario::id, name, text},
    MCRING_STAMPEDE_SCENARIOS(MCRING_X)
#undef MCRING_X
};

template <typename T>
bool parseInteger(std::string_view text, T* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parseDouble(std::string_view text, double* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(*out);
}

std::vector<std::string> splitComma(std::string_view text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string_view::npos ? text.size() : comma;
    if (end > start) {
      parts.emplace_back(text.substr(start, end - start));
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return parts;
}

}  // namespace

std::string_view scenarioName(Scenario s) {
  return kScenarios[static_cast<size_t>(s)].name;
}
std::string_view scenarioText(Scenario s) {
  return kScenarios[static_cast<size_t>(s)].text;
}

uint32_t serversBefore(Scenario, uint32_t n) {
  return n;
}

uint32_t serversAfter(Scenario s, uint32_t n) {
  switch (s) {
    case Scenario::Add:
      return n + 1;
    case Scenario::Remove:
      return n - 1;
    case Scenario::Double:
      return 2 * n;
    case Scenario::Crash:
      return n;
  }
  return n;
}

uint32_t backendsNeeded(Scenario s, uint32_t n) {
  return s == Scenario::Add || s == Scenario::Double ? serversAfter(s, n) : n;
}

double theoryMovedFraction(Scenario s, std::string_view distribution, uint32_t n,
                           uint32_t replicas) {
  const double N = n;
  const bool modula = distribution == "modula";
  if (replicas > 1) {
    const double R = replicas;
    switch (s) {
      case Scenario::Add:  // the new server joins R/(N+1) of the sets, replacing one member
        return modula ? -1 : std::min(1.0, R / (N + 1));
      case Scenario::Remove:  // the sets that held the removed server: R/N
        return modula ? -1 : std::min(1.0, R / N);
      case Scenario::Double:
        return -1;
      case Scenario::Crash:  // a key is lost only if all its copies were on the dead server
        return 0;
    }
  }
  switch (s) {
    case Scenario::Add:
      // modula: a key stays iff h mod N == h mod (N+1), i.e. for 1 value in N+1.
      return modula ? N / (N + 1) : 1 / (N + 1);
    case Scenario::Remove:
      return modula ? (N - 1) / N : 1 / N;
    case Scenario::Double:
      // modula: h mod 2N == h mod N iff h mod 2N < N: half stay, as for a consistent ring.
      return 0.5;
    case Scenario::Crash:
      // mcring has no ejection: the dead server's keys are lost, nothing else moves.
      return 1 / N;
  }
  return 0;
}

std::string theoryText(Scenario s, uint32_t n, uint32_t replicas) {
  char text[300];
  if (replicas > 1) {
    switch (s) {
      case Scenario::Add:
        std::snprintf(text, sizeof(text),
                      "%u -> %u with replicas %u: a key moves when its replica set changes; the "
                      "new server joins R/(N+1) = %.4f of the sets (modula: nearly all change)",
                      n, n + 1, replicas, std::min(1.0, replicas / (n + 1.0)));
        return text;
      case Scenario::Remove:
        std::snprintf(text, sizeof(text),
                      "%u -> %u with replicas %u: the sets that held the removed server change, "
                      "R/N = %.4f (modula: nearly all)",
                      n, n - 1, replicas, std::min(1.0, replicas / static_cast<double>(n)));
        return text;
      case Scenario::Double:
        std::snprintf(text, sizeof(text),
                      "%u -> %u with replicas %u: most replica sets change (no simple formula)", n,
                      2 * n, replicas);
        return text;
      case Scenario::Crash:
        std::snprintf(text, sizeof(text),
                      "crash of 1 of %u with replicas %u: no key loses every copy (0); the dead "
                      "server held a copy of R/N = %.4f of them, which reads must fail over",
                      n, replicas, std::min(1.0, replicas / static_cast<double>(n)));
        return text;
    }
  }
  switch (s) {
    case Scenario::Add:
      std::snprintf(text, sizeof(text),
                    "%u -> %u: modula moves N/(N+1) = %.4f, the others 1/(N+1) = %.4f", n, n + 1,
                    n / (n + 1.0), 1 / (n + 1.0));
      break;
    case Scenario::Remove:
      std::snprintf(text, sizeof(text),
                    "%u -> %u: modula moves (N-1)/N = %.4f, the others 1/N = %.4f", n, n - 1,
                    (n - 1.0) / n, 1.0 / n);
      break;
    case Scenario::Double:
      std::snprintf(text, sizeof(text),
                    "%u -> %u: every distribution moves 1/2 (modula too: h mod 2N = h mod N iff h "
                    "mod 2N < N)",
                    n, 2 * n);
      break;
    case Scenario::Crash:
      std::snprintf(text, sizeof(text),
                    "crash of 1 of %u: the dead server's 1/N = %.4f of the keys are lost, whatever "
                    "the distribution (no ejection, nothing moves)",
                    n, 1.0 / n);
      break;
  }
  return text;
}

std::optional<StampedeOptions> parseStampedeFlags(const std::vector<std::string>& args, bool* help,
                                                  std::string* error) {
  StampedeOptions o;
  *help = false;
  for (const auto& a : args) {
    if (a == "--quick") {
      o.quick = true;
      o.keys = 100000;
      o.rate = 2000;
      o.before_s = 3;
      o.after_s = 4;
    }
  }
  static const std::set<std::string> kDistributions = {"modula", "ketama", "jump", "rendezvous",
                                                       "maglev"};
  bool scenario_given = false;
  bool distributions_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) {
        *error = flag + " needs a value";
        return false;
      }
      *out = args[++i];
      return true;
    };
    auto number = [&](double lo, double hi, double* out) {
      std::string v;
      if (!value(&v)) {
        return false;
      }
      if (!parseDouble(v, out) || *out < lo || *out > hi) {
        char text[160];
        std::snprintf(text, sizeof(text), "%s %s: expected a number in [%g, %g]", flag.c_str(),
                      v.c_str(), lo, hi);
        *error = text;
        return false;
      }
      return true;
    };
    auto integer = [&](uint64_t lo, uint64_t hi, auto* out) {
      std::string v;
      if (!value(&v)) {
        return false;
      }
      uint64_t n = 0;
      if (!parseInteger(v, &n) || n < lo || n > hi) {
        *error = flag + " " + v + ": expected an integer in [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]";
        return false;
      }
      *out = static_cast<std::remove_reference_t<decltype(*out)>>(n);
      return true;
    };
    std::string v;
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return std::nullopt;
    } else if (flag == "--quick") {
      // applied above
    } else if (flag == "--scenario") {
      if (!value(&v)) {
        return std::nullopt;
      }
      o.scenarios.clear();
      for (const ScenarioRow& row : kScenarios) {
        if (v == "all" || v == row.name) {
          o.scenarios.push_back(row.id);
        }
      }
      if (o.scenarios.empty()) {
        *error = "--scenario " + v + ": expected add, remove, double, crash or all";
        return std::nullopt;
      }
      scenario_given = true;
    } else if (flag == "--distributions") {
      if (!value(&v)) {
        return std::nullopt;
      }
      o.distributions = splitComma(v);
      distributions_given = true;
      if (o.distributions.empty()) {
        *error = "--distributions: empty list";
        return std::nullopt;
      }
      for (const auto& d : o.distributions) {
        if (!kDistributions.count(d)) {
          *error = "--distributions: '" + d +
                   "' is not one of modula, ketama, jump, rendezvous, maglev (random has no key "
                   "affinity, so there is no cache to lose)";
          return std::nullopt;
        }
      }
    } else if (flag == "--backends") {
      if (!integer(2, 64, &o.backends)) {
        return std::nullopt;
      }
    } else if (flag == "--keys") {
      if (!integer(100, 10'000'000, &o.keys)) {
        return std::nullopt;
      }
    } else if (flag == "--zipf") {
      if (!number(0, 5, &o.zipf)) {
        return std::nullopt;
      }
    } else if (flag == "--rate") {
      if (!number(10, 1e6, &o.rate)) {
        return std::nullopt;
      }
    } else if (flag == "--before") {
      if (!number(1, 600, &o.before_s)) {
        return std::nullopt;
      }
    } else if (flag == "--after") {
      if (!number(1, 600, &o.after_s)) {
        return std::nullopt;
      }
    } else if (flag == "--connections") {
      if (!integer(1, 1024, &o.connections)) {
        return std::nullopt;
      }
    } else if (flag == "--pipeline") {
      if (!integer(1, 256, &o.pipeline)) {
        return std::nullopt;
      }
    } else if (flag == "--value-size") {
      if (!integer(1, 1024 * 1024 - 1024, &o.value_size)) {
        return std::nullopt;
      }
    } else if (flag == "--no-refill") {
      o.refill = false;
    } else if (flag == "--timeout") {
      if (!integer(10, 60000, &o.timeout_ms)) {
        return std::nullopt;
      }
    } else if (flag == "--seed") {
      if (!integer(0, UINT64_MAX, &o.seed)) {
        return std::nullopt;
      }
    } else if (flag == "--mcring") {
      if (!value(&o.mcring_path)) {
        return std::nullopt;
      }
    } else if (flag == "--proxy-threads") {
      if (!integer(1, 64, &o.proxy_threads)) {
        return std::nullopt;
      }
    } else if (flag == "--memcached") {
      if (!value(&o.memcached_path)) {
        return std::nullopt;
      }
    } else if (flag == "--nutcracker") {
      if (!value(&o.nutcracker_path)) {
        return std::nullopt;
      }
    } else if (flag == "--with-nutcracker") {
      o.with_nutcracker = true;
    } else if (flag == "--replicas") {
      if (!value(&v)) {
        return std::nullopt;
      }
      o.replicas.clear();
      for (const auto& part : splitComma(v)) {
        uint32_t r = 0;
        if (!parseInteger(part, &r) || r < 1 || r > 8) {
          *error = "--replicas: '" + part + "' is not a replica count in [1, 8]";
          return std::nullopt;
        }
        if (std::find(o.replicas.begin(), o.replicas.end(), r) == o.replicas.end()) {
          o.replicas.push_back(r);
        }
      }
      if (o.replicas.empty()) {
        *error = "--replicas: empty list";
        return std::nullopt;
      }
    } else if (flag == "--warmup") {
      o.warmup = true;
    } else if (flag == "--warmup-window") {
      if (!integer(1, 3'600'000, &o.warmup_window_ms)) {
        return std::nullopt;
      }
      o.warmup = true;
    } else if (flag == "--servers") {
      if (!value(&v)) {
        return std::nullopt;
      }
      for (const auto& p : splitComma(v)) {
        uint16_t port = 0;
        if (!parseInteger(p, &port) || port == 0) {
          *error = "--servers: '" + p + "' is not a port (the servers must be on 127.0.0.1)";
          return std::nullopt;
        }
        o.given_servers.push_back(port);
      }
    } else if (flag == "--hash") {
      if (!value(&o.hash)) {
        return std::nullopt;
      }
    } else if (flag == "--out") {
      if (!value(&o.out_dir)) {
        return std::nullopt;
      }
    } else if (flag == "--json") {
      o.json = true;
    } else if (flag == "--quiet") {
      o.quiet = true;
    } else {
      *error = "unknown flag '" + flag + "' (see --help)";
      return std::nullopt;
    }
    if (!error->empty()) {
      return std::nullopt;
    }
  }
  if (o.quick && !scenario_given) {
    o.scenarios = {Scenario::Add};
  }
  if (o.warmup) {
    if (o.quick && !distributions_given) {
      // Twice the runs: keep --quick quick with the two that tell the story (mod N, a ring).
      o.distributions = {"modula", "ketama"};
    }
    if (o.warmup_window_ms == 0) {
      o.warmup_window_ms =
          (static_cast<uint32_t>(std::ceil(o.after_s)) + kWarmupWindowMarginS) * 1000;
    }
  }
  for (uint32_t r : o.replicas) {
    for (Scenario s : o.scenarios) {
      if (r > serversAfter(s, o.backends)) {
        *error = "--replicas " + std::to_string(r) + ": scenario " +
                 std::string(scenarioName(s)) + " leaves " +
                 std::to_string(serversAfter(s, o.backends)) + " servers";
        return std::nullopt;
      }
    }
  }
  if (!o.given_servers.empty()) {
    for (Scenario s : o.scenarios) {
      if (s == Scenario::Crash) {
        *error = "--servers: the crash scenario kills a backend, so it needs backends it started";
        return std::nullopt;
      }
      if (o.given_servers.size() < backendsNeeded(s, o.backends)) {
        *error = "--servers: scenario " + std::string(scenarioName(s)) + " with --backends " +
                 std::to_string(o.backends) + " needs " +
                 std::to_string(backendsNeeded(s, o.backends)) + " servers";
        return std::nullopt;
      }
    }
  }
  return o;
}

}  // namespace mcring::bench
