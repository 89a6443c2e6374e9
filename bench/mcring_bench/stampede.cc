// `mcring-bench stampede`: backends, proxy, warm-up, steady load, the change at time T, where the
// keys went, and the reports. The main thread orchestrates; the load runs on the client's thread.
#include "bench/mcring_bench/stampede.h"

#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <bitset>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/key_space.h"
#include "bench/mcring_bench/load_generator.h"
#include "bench/mcring_bench/stampede_client.h"
#include "bench/mcring_bench/stampede_memcache.h"
#include "bench/mcring_bench/stampede_options.h"
#include "bench/mcring_bench/stampede_processes.h"
#include "bench/mcring_bench/stampede_report.h"

namespace mcring::bench {
namespace {

// Which backends (positions in the run's list: at most 2 x 64 for double) hold a key.
constexpr size_t kMaxBackends = 128;
using Holders = std::bitset<kMaxBackends>;
constexpr int kStartTimeoutMs = 5000;
constexpr int kReloadTimeoutMs = 5000;
constexpr int kStartAttempts = 5;
constexpr int kRouteTimeoutMs = 60000;
const std::string kKeyPrefix = "key:";

struct Backend {
  uint16_t port = 0;
  pid_t pid = -1;  // -1: given with --servers, not ours
};

double secondsSince(uint64_t from_ns) {
  return static_cast<double>(monotonicNs() - from_ns) / 1e9;
}

// Sleeps until CLOCK_MONOTONIC reaches target_ns; false if interrupted.
bool sleepUntil(uint64_t target_ns) {
  const uint64_t now = monotonicNs();
  if (target_ns <= now) {
    return !g_stampede_interrupted.load();
  }
  return sleepInterruptible(static_cast<int>((target_ns - now + 999'999) / 1'000'000));
}

std::string thisBinaryDir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

bool writeFileAtomically(const std::string& path, const std::string& text, std::string* error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      *error = "cannot write " + tmp;
      return false;
    }
  }
  // rename() is what editors and ConfigMaps do; the watcher sees one complete file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

// warmup_window_ms > 0 adds mcring's `warmup_window` (warm migration) beside the
// distribution; nutcracker does not know the key, so its runs always pass 0.
// replicas > 1 adds `replicas: R` (nutcracker runs always pass 1).
std::string poolYaml(uint16_t listen, const StampedeOptions& o, const std::string& distribution,
                     uint32_t warmup_window_ms, uint32_t replicas,
                     const std::vector<Backend>& servers) {
  std::string y = "# written by mcring-bench stampede\nstampede:\n";
  y += "  listen: 127.0.0.1:" + std::to_string(listen) + "\n";
  y += "  hash: " + o.hash + "\n";
  y += "  distribution: " + distribution + "\n";
  if (warmup_window_ms > 0) {
    y += "  warmup_window: " + std::to_string(warmup_window_ms) + "\n";
  }
  if (replicas > 1) {
    y += "  replicas: " + std::to_string(replicas) + "\n";
  }
  y += "  timeout: " + std::to_string(o.timeout_ms) + "\n";
  y += "  preconnect: true\n  auto_eject_hosts: false\n  servers:\n";
  // Named servers, so that nothing depends on which free ports this run got: ketama, rendezvous
  // and maglev hash the name instead of HOST:PORT, and modula orders its slots by name (as
  // twemproxy sorts its servers). Zero-padded, so that the servers a change appends also sort
  // last, as the theory assumes.
  char name[32];
  for (size_t i = 0; i < servers.size(); ++i) {
    std::snprintf(name, sizeof(name), "s%03zu", i);
    y += "    - 127.0.0.1:" + std::to_string(servers[i].port) + ":1 " + name + "\n";
  }
  return y;
}

class Experiment {
 public:
  Experiment(const StampedeOptions& options, ChildProcesses& processes, std::string work_dir,
             std::string mcring)
      : o_(options),
        processes_(processes),
        work_(std::move(work_dir)),
        mcring_(std::move(mcring)),
        keys_(kKeyPrefix, options.keys) {}

  bool prepare(std::string* error) {
    std::error_code ec;
    std::filesystem::create_directories(work_ + "/conf", ec);
    std::filesystem::create_directories(work_ + "/logs", ec);
    if (ec) {
      *error = "cannot create " + work_ + ": " + ec.message();
      return false;
    }
    // All keys, one per line: the input of `mcring route`.
    std::ofstream f(work_ + "/keys.txt");
    std::vector<char> key(keys_.keyLength());
    for (uint64_t i = 0; i < o_.keys; ++i) {
      keys_.format(i, key.data());
      f.write(key.data(), static_cast<std::streamsize>(key.size()));
      f.put('\n');
    }
    if (!f) {
      *error = "cannot write " + work_ + "/keys.txt";
      return false;
    }
    return true;
  }

  // warmup: mcring only, with `warmup_window: --warmup-window` in both configs. replicas: the
  // pool's `replicas` (mcring only).
  StampedeRun run(Scenario scenario, const std::string& distribution, bool nutcracker, bool warmup,
                  uint32_t replicas = 1);

 private:
  void say(const char* format, ...) __attribute__((format(printf, 2, 3)));
  bool startBackends(uint32_t count, const std::string& tag, std::vector<Backend>* out,
                     std::string* error);
  bool startProxy(bool nutcracker, const std::string& conf, uint16_t port, uint16_t stats_port,
                  const std::string& log, pid_t* pid, std::string* error);
  // copies: how many backends should hold each key (min(replicas, servers)).
  bool owners(const std::vector<Backend>& servers, size_t copies, std::vector<Holders>* holders,
              std::string* error);
  std::optional<double> routeMoved(const std::string& before, const std::string& after,
                                   const std::string& tag, bool as_sets, std::string* error);
  // Sum of backendWrites() over the servers' `stats`; false if one does not answer.
  bool writesOf(const std::vector<Backend>& servers, uint64_t* writes, std::string* error);
  bool applyReload(pid_t proxy, uint16_t port, const std::string& live, const std::string& text,
                   uint64_t* t0_ns, double* took_ms, std::string* source, std::string* error);

  const StampedeOptions& o_;
  ChildProcesses& processes_;
  const std::string work_;
  const std::string mcring_;
  const KeySpace keys_;
  std::set<uint16_t> taken_;  // ports handed out in the current run
};

void Experiment::say(const char* format, ...) {
  if (o_.quiet) {
    return;
  }
  va_list args;
  va_start(args, format);
  std::fputs("stampede: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

bool Experiment::startBackends(uint32_t count, const std::string& tag, std::vector<Backend>* out,
                               std::string* error) {
  out->clear();
  if (!o_.given_servers.empty()) {
    for (uint32_t i = 0; i < count; ++i) {
      const uint16_t port = o_.given_servers[i];
      if (!waitUntilServing(port, -1, 1000) || !flushAll(port, error)) {
        *error = "--servers: memcached on 127.0.0.1:" + std::to_string(port) + " does not answer" +
                 (error->empty() ? "" : ": " + *error);
        return false;
      }
      out->push_back({port, -1});
    }
    return true;
  }
  // Start them all, then wait for each: memcached takes a few ms, in parallel.
  std::vector<Backend> pending(count);
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    for (uint32_t i = 0; i < count; ++i) {
      if (pending[i].pid > 0) {
        continue;
      }
      pending[i].port = pickFreePort(&taken_);
      const std::vector<std::string> argv = {o_.memcached_path,
                                             "-u",
                                             "root",
                                             "-l",
                                             "127.0.0.1",
                                             "-p",
                                             std::to_string(pending[i].port),
                                             "-U",
                                             "0",
                                             "-t",
                                             "1",
                                             "-m",
                                             "64"};
      pending[i].pid = processes_.start(
          "memcached", argv, work_ + "/logs/" + tag + "_memcached_" + std::to_string(i) + ".log",
          error);
      if (pending[i].pid < 0) {
        return false;
      }
    }
    bool all = true;
    for (uint32_t i = 0; i < count; ++i) {
      if (pending[i].pid > 0 &&
          !waitUntilServing(pending[i].port, pending[i].pid, kStartTimeoutMs)) {
        if (g_stampede_interrupted.load()) {
          *error = "interrupted";
          out->swap(pending);
          return false;
        }
        // Probably lost the port to someone else: stop it (if alive) and try another port.
        processes_.stop(pending[i].pid, 500);
        pending[i].pid = -1;
        all = false;
      }
    }
    if (all) {
      out->swap(pending);
      return true;
    }
  }
  for (Backend& b : pending) {
    if (b.pid > 0) {
      processes_.stop(b.pid, 500);
    }
  }
  *error = "memcached did not start on a free loopback port (see " + work_ + "/logs)";
  return false;
}

bool Experiment::startProxy(bool nutcracker, const std::string& conf, uint16_t port,
                            uint16_t stats_port, const std::string& log, pid_t* pid,
                            std::string* error) {
  std::vector<std::string> argv;
  if (nutcracker) {
    argv = {o_.nutcracker_path, "-c", conf, "-s", std::to_string(stats_port), "-a", "127.0.0.1"};
  } else {
    argv = {mcring_, "-c", conf, "-s", "0", "--threads", std::to_string(o_.proxy_threads)};
  }
  *pid = processes_.start(nutcracker ? "nutcracker" : "mcring", argv, log, error);
  if (*pid < 0) {
    return false;
  }
  if (!waitUntilServing(port, *pid, kStartTimeoutMs, /*connect_only=*/nutcracker)) {
    processes_.stop(*pid, 1000);
    *pid = -1;
    *error = std::string(nutcracker ? "nutcracker" : "mcring") +
             " did not start serving on 127.0.0.1:" + std::to_string(port) + " (see " + log + ")";
    return false;
  }
  return true;
}

bool Experiment::owners(const std::vector<Backend>& servers, size_t copies,
                        std::vector<Holders>* holders, std::string* error) {
  holders->assign(o_.keys, Holders());
  std::vector<std::vector<uint64_t>> held(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    uint64_t foreign = 0;
    if (!dumpKeys(servers[i].port, keys_, &held[i], &foreign, error)) {
      *error = "metadump of 127.0.0.1:" + std::to_string(servers[i].port) + ": " + *error;
      return false;
    }
  }
  // The dump can skip a key the LRU maintainer moved mid-crawl: ask every server for the keys
  // fewer dumps listed than it should have copies, so that "on fewer servers" means the proxy
  // lost a copy, not that the crawler missed it. A key listed twice by one server's dump is one
  // copy.
  std::vector<Holders> listed(o_.keys);
  for (size_t i = 0; i < servers.size(); ++i) {
    for (uint64_t k : held[i]) {
      listed[k].set(i);
    }
  }
  std::vector<uint64_t> unlisted;
  for (uint64_t k = 0; k < o_.keys; ++k) {
    if (listed[k].count() < copies) {
      unlisted.push_back(k);
    }
  }
  for (size_t i = 0; i < servers.size(); ++i) {
    if (!heldKeys(servers[i].port, keys_, unlisted, &held[i], error)) {
      *error = "get from 127.0.0.1:" + std::to_string(servers[i].port) + ": " + *error;
      return false;
    }
    for (uint64_t k : held[i]) {
      (*holders)[k].set(i);
    }
  }
  return true;
}

bool Experiment::writesOf(const std::vector<Backend>& servers, uint64_t* writes,
                          std::string* error) {
  *writes = 0;
  for (const Backend& b : servers) {
    std::map<std::string, uint64_t> stats;
    if (!readStats(b.port, &stats, error)) {
      *error = "stats of 127.0.0.1:" + std::to_string(b.port) + ": " + *error;
      return false;
    }
    *writes += backendWrites(stats);
  }
  return true;
}

std::optional<double> Experiment::routeMoved(const std::string& before, const std::string& after,
                                             const std::string& tag, bool as_sets,
                                             std::string* error) {
  const std::string out_before = work_ + "/logs/" + tag + "_route_before.txt";
  const std::string out_after = work_ + "/logs/" + tag + "_route_after.txt";
  const std::string log = work_ + "/logs/" + tag + "_route.log";
  for (const auto& [conf, out] : {std::pair{before, out_before}, std::pair{after, out_after}}) {
    std::filesystem::remove(out);
    const int status =
        processes_.runToCompletion("mcring route", {mcring_, "route", "-c", conf},
                                   work_ + "/keys.txt", out, log, kRouteTimeoutMs, error);
    if (status != 0) {
      if (status > 0) {
        *error = "mcring route -c " + conf + " exited with " + std::to_string(status);
      }
      return std::nullopt;
    }
  }
  std::ifstream a(out_before);
  std::ifstream b(out_after);
  std::string la;
  std::string lb;
  uint64_t lines = 0;
  uint64_t moved = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    ++lines;
    // KEY<TAB>HOST:PORT[<TAB>NAME]: the same key on both lines, so compare what follows it.
    const size_t ta = la.find('\t');
    const size_t tb = lb.find('\t');
    if (ta == std::string::npos || tb == std::string::npos) {
      *error = "unexpected `mcring route` output: " + la + " / " + lb;
      return std::nullopt;
    }
    if (!as_sets) {
      if (la.compare(ta, std::string::npos, lb, tb, std::string::npos) != 0) {
        ++moved;
      }
      continue;
    }
    // replicas > 1: KEY<TAB>HOST:PORT<TAB>HOST:PORT...: the key moved when its set changed.
    const auto members = [](const std::string& line, size_t from) {
      std::vector<std::string> out;
      while (from != std::string::npos) {
        const size_t next = line.find('\t', from + 1);
        out.push_back(line.substr(from + 1, next == std::string::npos ? next : next - from - 1));
        from = next;
      }
      std::sort(out.begin(), out.end());
      return out;
    };
    if (members(la, ta) != members(lb, tb)) {
      ++moved;
    }
  }
  if (lines != o_.keys) {
    *error = "mcring route printed " + std::to_string(lines) + " lines for " +
             std::to_string(o_.keys) + " keys";
    return std::nullopt;
  }
  std::filesystem::remove(out_before);
  std::filesystem::remove(out_after);
  return static_cast<double>(moved) / static_cast<double>(lines);
}

bool Experiment::applyReload(pid_t proxy, uint16_t port, const std::string& live,
                             const std::string& text, uint64_t* t0_ns, double* took_ms,
                             std::string* source, std::string* error) {
  BlockingClient control;
  ReloadRecordView before;
  if (!control.connect(port, error) || !latestReload(control, &before, error)) {
    *error = "stats reloads: " + *error;
    return false;
  }
  if (!writeFileAtomically(live, text, error)) {
    return false;
  }
  const uint64_t signalled = monotonicNs();
  ::kill(proxy, SIGHUP);
  // The reload is applied when its record says so: mcring adds it right after handing the new
  // snapshot to every worker. The first second after the change starts there.
  while (monotonicNs() - signalled < static_cast<uint64_t>(kReloadTimeoutMs) * 1'000'000ULL) {
    ReloadRecordView latest;
    if (!latestReload(control, &latest, error)) {
      *error = "stats reloads: " + *error;
      return false;
    }
    if (latest.id > before.id) {
      if (latest.result == "applied" && latest.generation > before.generation) {
        *t0_ns = monotonicNs();
        *took_ms = static_cast<double>(*t0_ns - signalled) / 1e6;
        *source = latest.source;
        return true;
      }
      if (latest.result == "failed") {
        *error = "the reload failed: " + latest.line;
        return false;
      }
    }
    if (g_stampede_interrupted.load()) {
      *error = "interrupted";
      return false;
    }
    // Poll every ~0.2 ms: t0 is then at most a few tenths of a millisecond after the switch.
    timespec pause{0, 200'000};
    nanosleep(&pause, nullptr);
  }
  *error = "no applied reload within " + std::to_string(kReloadTimeoutMs) + " ms of SIGHUP";
  return false;
}

StampedeRun Experiment::run(Scenario scenario, const std::string& distribution, bool nutcracker,
                            bool warmup, uint32_t replicas) {
  StampedeRun r;
  r.proxy = nutcracker ? "nutcracker" : "mcring";
  r.distribution = distribution;
  r.warmup = warmup && !nutcracker;
  r.replicas = nutcracker ? 1 : replicas;
  const uint32_t warmup_window_ms = r.warmup ? o_.warmup_window_ms : 0;
  r.scenario = scenario;
  const uint32_t n = o_.backends;
  r.servers_before = serversBefore(scenario, n);
  r.servers_after = serversAfter(scenario, n);
  r.theory_moved_fraction = theoryMovedFraction(scenario, distribution, n, r.replicas);
  const std::string tag = std::string(scenarioName(scenario)) + "_" + r.label();
  const uint64_t run_started = monotonicNs();
  taken_.clear();

  std::vector<Backend> backends;
  pid_t proxy = -1;
  auto cleanup = [&] {
    if (proxy > 0) {
      processes_.stop(proxy);
      proxy = -1;
    }
    std::vector<pid_t> own;
    for (const Backend& b : backends) {
      if (b.pid > 0) {
        own.push_back(b.pid);
      }
    }
    processes_.stop(own);
    backends.clear();
  };
  auto failed = [&](const std::string& why) {
    r.error = g_stampede_interrupted.load() ? "interrupted" : why;
    say("%s %s: FAILED: %s", scenarioName(scenario).data(), r.label().c_str(), r.error.c_str());
    cleanup();
    return r;
  };

  say("%s %s: %u -> %u servers%s", scenarioName(scenario).data(), r.label().c_str(),
      r.servers_before, r.servers_after,
      r.warmup ? (", warmup_window " + std::to_string(warmup_window_ms) + " ms").c_str() : "");
  std::string error;
  if (!startBackends(backendsNeeded(scenario, n), tag, &backends, &error)) {
    return failed(error);
  }
  const std::vector<Backend> before_servers(backends.begin(), backends.begin() + r.servers_before);
  std::vector<Backend> after_servers(backends.begin(), backends.begin() + r.servers_after);
  Backend crashed;
  if (scenario == Scenario::Crash) {
    crashed = backends[n - 1];
  }

  const std::string conf_dir = work_ + "/conf/" + tag;
  std::filesystem::create_directories(conf_dir);
  const std::string live = conf_dir + "/pool.yml";
  const std::string before_conf = conf_dir + "/before.yml";
  const std::string after_conf = conf_dir + "/after.yml";
  const std::string log = work_ + "/logs/" + tag + "_" + r.proxy + ".log";
  uint16_t port = 0;
  uint16_t stats_port = 0;
  std::string after_text;
  for (int attempt = 0; attempt < kStartAttempts && proxy < 0; ++attempt) {
    port = pickFreePort(&taken_);
    stats_port = pickFreePort(&taken_);
    const std::string before_text =
        poolYaml(port, o_, distribution, warmup_window_ms, r.replicas, before_servers);
    after_text = poolYaml(port, o_, distribution, warmup_window_ms, r.replicas, after_servers);
    if (!writeFileAtomically(before_conf, before_text, &error) ||
        !writeFileAtomically(after_conf, after_text, &error) ||
        !writeFileAtomically(live, before_text, &error)) {
      return failed(error);
    }
    if (!startProxy(nutcracker, live, port, stats_port, log, &proxy, &error) &&
        g_stampede_interrupted.load()) {
      return failed("interrupted");
    }
  }
  if (proxy < 0) {
    return failed(error);
  }

  // Warm-up: every key once, through the proxy, so that each lands where the old config says
  // (on each of its replicas). The backends' write counters and the proxy's CPU around it give
  // what one client write costs.
  uint64_t writes_before_warm = 0;
  if (!writesOf(backends, &writes_before_warm, &error)) {
    return failed(error);
  }
  const double cpu_before_warm = processCpuSeconds(proxy);
  SetResult warm;
  if (!setAllKeys(port, keys_, o_.keys, o_.value_size, &warm, &error)) {
    return failed("warm-up: " + error);
  }
  if (warm.failed > 0) {
    return failed("warm-up: " + std::to_string(warm.failed) + " sets failed");
  }
  const double cpu_after_warm = processCpuSeconds(proxy);
  // With replicas > 1 a set is answered at its primary's reply (replica_write_reply: primary)
  // while the other replicas' writes may still be in flight: wait, at most 2 s, until the
  // backends have counted a write per copy of every key stored.
  const uint64_t copies_written =
      warm.stored * std::min<uint64_t>(r.replicas, before_servers.size());
  const auto count_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  uint64_t writes_after_warm = 0;
  while (true) {
    if (!writesOf(backends, &writes_after_warm, &error)) {
      return failed(error);
    }
    if (writes_after_warm - writes_before_warm >= copies_written ||
        std::chrono::steady_clock::now() >= count_deadline) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.warm_client_sets = warm.stored + warm.failed;
  r.warm_backend_writes = writes_after_warm - writes_before_warm;
  if (cpu_before_warm >= 0 && cpu_after_warm >= 0) {
    r.proxy_cpu_warm_s = cpu_after_warm - cpu_before_warm;
  }
  // Each key should be on min(replicas, servers) backends: fewer is a key the proxy lost (or
  // memcached evicted), more a copy it should not have written.
  const size_t copies = std::min<size_t>(r.replicas, before_servers.size());
  std::vector<Holders> holders_before;
  if (!owners(before_servers, copies, &holders_before, &error)) {
    return failed(error);
  }
  uint64_t anomalies = 0;
  for (const Holders& h : holders_before) {
    anomalies += h.count() != copies ? 1 : 0;
  }
  r.warm_anomalies = anomalies;
  say("%s %s: warmed %llu keys in %.2f s (%llu not on exactly %zu backend%s); backends counted "
      "%llu writes",
      scenarioName(scenario).data(), r.label().c_str(), static_cast<unsigned long long>(o_.keys),
      warm.seconds, static_cast<unsigned long long>(anomalies), copies, copies == 1 ? "" : "s",
      static_cast<unsigned long long>(r.warm_backend_writes));

  // The load, and the change at T.
  CacheAsideOptions co;
  co.port = port;
  co.connections = o_.connections;
  co.pipeline = o_.pipeline;
  co.rate = o_.rate;
  co.zipf = o_.zipf;
  co.value_size = o_.value_size;
  co.refill = o_.refill;
  co.seed = o_.seed;
  co.timeout_ms = o_.timeout_ms;
  co.max_seconds = o_.before_s + o_.after_s + (kReloadTimeoutMs + kStartTimeoutMs) / 1000.0 + 2;
  CacheAsideClient client(co, keys_);
  uint64_t writes_load_start = 0;
  if (!writesOf(backends, &writes_load_start, &error)) {
    return failed(error);
  }
  const pid_t cpu_pid = proxy;
  const double cpu_load_start = processCpuSeconds(proxy);
  const uint64_t start_ns = client.start();
  uint64_t crashed_writes = 0;  // the crashed backend's counter just before the kill
  if (!sleepUntil(start_ns + static_cast<uint64_t>(o_.before_s * 1e9))) {
    client.stop();
    return failed("interrupted");
  }
  uint64_t t0 = 0;
  if (scenario == Scenario::Crash) {
    // Its writes so far (gone with it after the kill), read a few ms before it.
    if (!writesOf({crashed}, &crashed_writes, &error)) {
      client.stop();
      return failed(error);
    }
    // The crash happens at the kill: the kernel resets the backend's sockets as the process
    // dies, well before it is reaped (which can take a while on a busy machine).
    t0 = monotonicNs();
    processes_.killNow(crashed.pid);
    for (Backend& b : backends) {
      if (b.pid == crashed.pid) {
        b.pid = -1;  // gone
      }
    }
    r.change_ms = static_cast<double>(monotonicNs() - t0) / 1e6;
    r.change_source = "kill -9 of 127.0.0.1:" + std::to_string(crashed.port);
    after_servers.erase(after_servers.end() - 1);  // its keys are gone: nothing to dump there
  } else if (nutcracker) {
    // nutcracker cannot reload: stop it, start it with the new config on the same port.
    t0 = monotonicNs();
    processes_.stop(proxy);
    proxy = -1;
    if (!writeFileAtomically(live, after_text, &error)) {
      client.stop();
      return failed(error);
    }
    proxy = processes_.start(
        "nutcracker",
        {o_.nutcracker_path, "-c", live, "-s", std::to_string(stats_port), "-a", "127.0.0.1"}, log,
        &error);
    if (proxy < 0 || !waitUntilServing(port, proxy, kStartTimeoutMs, /*connect_only=*/true)) {
      client.stop();
      return failed("nutcracker restart: " +
                    (error.empty() ? "not serving (see " + log + ")" : error));
    }
    r.change_ms = static_cast<double>(monotonicNs() - t0) / 1e6;
    r.change_source = "restart";
  } else {
    if (!applyReload(proxy, port, live, after_text, &t0, &r.change_ms, &r.change_source, &error)) {
      client.stop();
      return failed(error);
    }
  }
  // The proxy's CPU at the change splits the load's cost into before and after (a restarted
  // nutcracker is another process: no split, and no load figure).
  const double cpu_at_t0 = proxy == cpu_pid ? processCpuSeconds(proxy) : -1;
  say("%s %s: change applied (%s) after %.1f ms", scenarioName(scenario).data(), r.label().c_str(),
      r.change_source.c_str(), r.change_ms);
  const int after_seconds = static_cast<int>(std::ceil(o_.after_s));
  const bool completed = sleepUntil(t0 + static_cast<uint64_t>(after_seconds) * 1'000'000'000ULL);
  client.stop();
  if (!completed) {
    return failed("interrupted");
  }
  // The load's cost: the proxy's CPU and the backends' writes (the live ones now, the crashed
  // one as it was just before the kill) over the client's requests.
  const double cpu_load_end = proxy == cpu_pid ? processCpuSeconds(proxy) : -1;
  std::vector<Backend> alive;
  for (const Backend& b : backends) {
    if (scenario != Scenario::Crash || b.port != crashed.port) {
      alive.push_back(b);
    }
  }
  uint64_t writes_load_end = 0;
  if (!writesOf(alive, &writes_load_end, &error)) {
    return failed(error);
  }
  r.load_backend_writes = writes_load_end + crashed_writes - writes_load_start;
  const uint64_t t0_slot = (t0 - start_ns) / CacheAsideClient::kSlotNs;
  for (size_t i = 0; i < client.slots().size(); ++i) {
    const StampedeSlot& slot = client.slots()[i];
    r.load_client_writes += slot.sets;
    r.load_requests += slot.ops + slot.errors;
    if (i < t0_slot) {
      r.load_requests_before += slot.ops + slot.errors;
    }
  }
  if (cpu_load_start >= 0 && cpu_load_end >= 0) {
    r.proxy_cpu_load_s = cpu_load_end - cpu_load_start;
    if (cpu_at_t0 >= 0) {
      r.proxy_cpu_before_s = cpu_at_t0 - cpu_load_start;
    }
  }
  r.seconds = secondsAround(client.slots(), start_ns, t0, after_seconds);
  r.error_kinds = client.errorKinds();
  r.unsent = client.unsent();
  r.refills_dropped = client.refillsDropped();
  summarize(&r);

  // Where the keys are now. Crash: a key is lost when no live backend held a copy at the kill
  // (with replicas 1, exactly the dead server's keys). Otherwise: empty the servers of the new
  // config, set every key again through the proxy, and ask each server which keys it holds; a
  // key moved when the set of backends holding it changed (replicas 1: its server).
  std::vector<Holders> holders_after;
  if (scenario != Scenario::Crash) {
    for (const Backend& b : after_servers) {
      if (!flushAll(b.port, &error)) {
        return failed("flush_all: " + error);
      }
    }
    SetResult rewarm;
    if (!setAllKeys(port, keys_, o_.keys, o_.value_size, &rewarm, &error)) {
      return failed("placing the keys under the new config: " + error);
    }
    if (!owners(after_servers, std::min<size_t>(r.replicas, after_servers.size()), &holders_after,
                &error)) {
      return failed(error);
    }
  }
  // The backends are done with: let them start exiting while the rest is computed.
  std::vector<pid_t> own;
  for (const Backend& b : backends) {
    if (b.pid > 0) {
      own.push_back(b.pid);
    }
  }
  processes_.terminate(own);
  Holders alive_mask;
  for (size_t i = 0; i < before_servers.size(); ++i) {
    alive_mask.set(i, scenario != Scenario::Crash || i != n - 1);
  }
  uint64_t checked = 0;
  uint64_t moved = 0;
  // Also weighted by how often the client asks each key (Zipf: key k has rank k + 1): that is
  // the share of gets that miss right after the change if nothing is refilled.
  double weight_all = 0;
  double weight_moved = 0;
  for (uint64_t k = 0; k < o_.keys; ++k) {
    if (holders_before[k].none()) {
      continue;
    }
    ++checked;
    const double weight = std::pow(static_cast<double>(k + 1), -o_.zipf);
    weight_all += weight;
    // Backend indices are positions in `backends`, the same in both configs.
    const bool gone = scenario == Scenario::Crash ? (holders_before[k] & alive_mask).none()
                                                  : holders_after[k] != holders_before[k];
    if (gone) {
      ++moved;
      weight_moved += weight;
    }
  }
  r.keys_checked = checked;
  r.moved_fraction = checked == 0 ? -1 : static_cast<double>(moved) / static_cast<double>(checked);
  r.moved_weighted = weight_all > 0 ? weight_moved / weight_all : -1;
  if (scenario != Scenario::Crash) {
    r.moved_fraction_route = routeMoved(before_conf, after_conf, tag, r.replicas > 1, &error);
    if (!r.moved_fraction_route) {
      say("%s %s: warning: no `mcring route` cross-check: %s", scenarioName(scenario).data(),
          r.label().c_str(), error.c_str());
    }
  }
  cleanup();

  r.csv_path = o_.out_dir + "/stampede_" + tag + ".csv";
  if (!writeRunCsv(r, r.csv_path, &error)) {
    r.csv_path.clear();
    return failed(error);
  }
  say("%s %s: hit ratio %.3f before, %.3f in the first second, min %.3f, recovery %s; moved "
      "%.4f (theory %.4f); %.1f s",
      scenarioName(scenario).data(), r.label().c_str(), r.hit_ratio_before, r.hit_ratio_after,
      r.hit_ratio_min,
      r.recovery_seconds ? (std::to_string(*r.recovery_seconds) + " s").c_str()
                         : "not within the run",
      r.moved_fraction, r.theory_moved_fraction, secondsSince(run_started));
  return r;
}

std::string commandLine(int argc, char** argv) {
  std::string command = "mcring-bench";
  for (int i = 0; i < argc; ++i) {
    command += " ";
    command += argv[i];
  }
  return command;
}

}  // namespace

int runStampede(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  std::string error;
  const auto parsed = parseStampedeFlags(args, &help, &error);
  if (help) {
    std::fputs(kStampedeUsage, stdout);
    return 0;
  }
  if (!parsed) {
    std::fprintf(stderr, "mcring-bench stampede: %s\n", error.c_str());
    return 2;
  }
  StampedeOptions options = *parsed;
  const std::string mcring =
      options.mcring_path.empty() ? thisBinaryDir() + "/mcring" : options.mcring_path;
  if (::access(mcring.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "mcring-bench stampede: %s is not executable (give --mcring PATH)\n",
                 mcring.c_str());
    return 2;
  }
  if (options.given_servers.empty() && ::access(options.memcached_path.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "mcring-bench stampede: %s is not executable (give --memcached PATH)\n",
                 options.memcached_path.c_str());
    return 2;
  }
  if (options.with_nutcracker && ::access(options.nutcracker_path.c_str(), X_OK) != 0) {
    std::fprintf(stderr,
                 "mcring-bench stampede: %s is not executable (Debian: apt-get install "
                 "nutcracker, or give --nutcracker PATH)\n",
                 options.nutcracker_path.c_str());
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "mcring-bench stampede: cannot create %s: %s\n", options.out_dir.c_str(),
                 ec.message().c_str());
    return 2;
  }
  char work_template[] = "/tmp/mcring-stampede-XXXXXX";
  if (::mkdtemp(work_template) == nullptr) {
    std::fprintf(stderr, "mcring-bench stampede: cannot create a work directory in /tmp\n");
    return 1;
  }
  const std::string work = work_template;

  installStampedeSignals();
  ChildProcesses processes(/*announce=*/!options.quiet);
  Experiment experiment(options, processes, work, mcring);
  if (!experiment.prepare(&error)) {
    std::fprintf(stderr, "mcring-bench stampede: %s\n", error.c_str());
    return 1;
  }

  const uint64_t started = monotonicNs();
  std::vector<StampedeRun> runs;
  for (Scenario scenario : options.scenarios) {
    for (const std::string& d : options.distributions) {
      if (g_stampede_interrupted.load()) {
        break;
      }
      for (uint32_t replicas : options.replicas) {
        // jump has no successor order, so no replica sets (mcring refuses the config).
        if (g_stampede_interrupted.load() || (replicas > 1 && d == "jump")) {
          continue;
        }
        runs.push_back(
            experiment.run(scenario, d, /*nutcracker=*/false, /*warmup=*/false, replicas));
        // The warm-up run right after its cold twin: the same load, seed and keys.
        if (options.warmup && !g_stampede_interrupted.load()) {
          runs.push_back(
              experiment.run(scenario, d, /*nutcracker=*/false, /*warmup=*/true, replicas));
        }
      }
    }
    if (options.with_nutcracker && scenario == Scenario::Add) {
      // nutcracker knows ketama, modula and random; compare with those of the list.
      std::vector<std::string> nut;
      for (const std::string& d : options.distributions) {
        if (d == "ketama" || d == "modula") {
          nut.push_back(d);
        }
      }
      if (nut.empty()) {
        nut.push_back("ketama");
      }
      for (const std::string& d : nut) {
        if (g_stampede_interrupted.load()) {
          break;
        }
        runs.push_back(experiment.run(scenario, d, /*nutcracker=*/true, /*warmup=*/false));
      }
    }
  }
  processes.stopAll();

  std::vector<std::string> plots;
  if (!g_stampede_interrupted.load()) {
    for (Scenario scenario : options.scenarios) {
      for (const auto& p : plotScenario(options, scenario, runs, processes)) {
        plots.push_back(p);
      }
    }
  }
  const std::string command = commandLine(argc, argv);
  const std::string md = markdownReport(options, runs, command);
  const std::string json = jsonReport(options, runs, plots);
  {
    std::ofstream f(options.out_dir + "/stampede_summary.md");
    f << md;
    for (const auto& p : plots) {
      f << "Plot: `" << p << "`\n";
    }
    std::ofstream j(options.out_dir + "/stampede_summary.json");
    j << json << "\n";
  }
  if (options.json) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("%s", md.c_str());
    for (const auto& p : plots) {
      std::printf("Plot: %s\n", p.c_str());
    }
  }
  bool all_ok = !runs.empty();
  for (const auto& r : runs) {
    all_ok = all_ok && r.error.empty();
  }
  if (!options.quiet) {
    std::fprintf(stderr, "stampede: %zu runs in %.1f s; summary in %s/stampede_summary.{md,json}\n",
                 runs.size(), secondsSince(started), options.out_dir.c_str());
  }
  if (all_ok) {
    std::filesystem::remove_all(work, ec);
  } else {
    std::fprintf(stderr, "stampede: logs kept in %s\n", work.c_str());
  }
  if (g_stampede_interrupted.load()) {
    return 130;
  }
  return all_ok ? 0 : 1;
}

}  // namespace mcring::bench
