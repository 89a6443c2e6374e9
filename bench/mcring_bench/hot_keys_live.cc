// `mcring-bench hotkeys`: a hot key's load on real servers, with mcring's spread off and on.
#include "bench/mcring_bench/hot_keys_live.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/key_space.h"
#include "bench/mcring_bench/stampede_client.h"
#include "bench/mcring_bench/stampede_memcache.h"
#include "bench/mcring_bench/stampede_processes.h"

namespace mcring::bench {
namespace {

const char kUsage[] = R"(usage: mcring-bench hotkeys [options]

The ring lab's hot-key scenario, live: N memcached servers behind mcring, a cache-aside load
(open loop) with --hot-share of its gets on one key and the rest uniform, and each server's share
of the gets as the servers count them (their own cmd_get). One run per --spread value: 0 leaves
`hot_key_spread` out; R >= 2 sets `hot_key_spread: R`.

  --backends N        memcached servers (default 10)
  --spread LIST       hot_key_spread values, comma-separated (default 0)
  --distribution D    ketama (default), modula, rendezvous, maglev, jump, random
  --hot-share S       share of the gets on the hot key (default 0.3)
  --keys N            key space (default 100000; every key set first)
  --rate OPS          gets per second (default 20000)
  --connections N     client connections (default 8)
  --settle S          seconds of load before measuring, for detection (default 3)
  --seconds S         measured seconds (default 5)
  --threads T         mcring worker threads (default 1)
  --mcring PATH       (default: next to this binary)
  --memcached PATH    (default /usr/bin/memcached)
)";

struct Options {
  uint32_t backends = 10;
  std::vector<uint32_t> spreads{0};
  std::string distribution = "ketama";
  double hot_share = 0.3;
  uint64_t keys = 100000;
  double rate = 20000;
  uint32_t connections = 8;
  double settle_s = 3;
  double seconds = 5;
  uint32_t threads = 1;
  std::string mcring;
  std::string memcached = "/usr/bin/memcached";
};

bool parse(int argc, char** argv, Options* o, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      *error = flag + ": needs a value";
      return false;
    }
    const std::string v = argv[++i];
    const char* end = v.data() + v.size();
    auto u32 = [&](uint32_t* out, uint32_t lo, uint32_t hi) {
      auto r = std::from_chars(v.data(), end, *out);
      return r.ec == std::errc() && r.ptr == end && *out >= lo && *out <= hi;
    };
    auto dbl = [&](double* out, double lo, double hi) {
      char* e = nullptr;
      *out = std::strtod(v.c_str(), &e);
      return e == v.c_str() + v.size() && *out >= lo && *out <= hi;
    };
    bool ok = true;
    if (flag == "--backends") {
      ok = u32(&o->backends, 2, 64);
    } else if (flag == "--spread") {
      o->spreads.clear();
      size_t start = 0;
      while (ok && start <= v.size()) {
        size_t comma = v.find(',', start);
        std::string part = v.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
        uint32_t r = 0;
        auto res = std::from_chars(part.data(), part.data() + part.size(), r);
        ok = res.ec == std::errc() && res.ptr == part.data() + part.size() && r <= 64 && r != 1;
        o->spreads.push_back(r);
        if (comma == std::string::npos) {
          break;
        }
        start = comma + 1;
      }
    } else if (flag == "--distribution") {
      o->distribution = v;
    } else if (flag == "--hot-share") {
      ok = dbl(&o->hot_share, 0, 1);
    } else if (flag == "--keys") {
      uint32_t k = 0;
      ok = u32(&k, 100, 10000000);
      o->keys = k;
    } else if (flag == "--rate") {
      ok = dbl(&o->rate, 100, 1e6);
    } else if (flag == "--connections") {
      ok = u32(&o->connections, 1, 256);
    } else if (flag == "--settle") {
      ok = dbl(&o->settle_s, 0, 60);
    } else if (flag == "--seconds") {
      ok = dbl(&o->seconds, 0.5, 120);
    } else if (flag == "--threads") {
      ok = u32(&o->threads, 1, 64);
    } else if (flag == "--mcring") {
      o->mcring = v;
    } else if (flag == "--memcached") {
      o->memcached = v;
    } else {
      *error = "unknown flag " + flag;
      return false;
    }
    if (!ok) {
      *error = flag + " " + v + ": out of range or malformed (see --help)";
      return false;
    }
  }
  return true;
}

bool cmdGet(uint16_t port, uint64_t* out, std::string* error) {
  BlockingClient c;
  if (!c.connect(port, error) || !c.sendAll("stats\r\n", error)) {
    return false;
  }
  std::string line;
  *out = 0;
  while (c.readLine(&line, 2000, error) && line != "END") {
    if (line.rfind("STAT cmd_get ", 0) == 0) {
      *out = std::strtoull(line.c_str() + 13, nullptr, 10);
    }
  }
  return line == "END";
}

struct Row {
  uint32_t spread = 0;
  std::vector<double> shares;  // per server, of the measured gets
  double max_mean = 0;
  double hit_ratio = 0;
  uint64_t gets = 0;
  uint64_t errors = 0;
  std::string error;
};

class Run {
 public:
  Run(const Options& o, ChildProcesses& processes, std::string work)
      : o_(o), processes_(processes), work_(std::move(work)), keys_("key:", o.keys) {}

  Row measure(uint32_t spread) {
    Row row;
    row.spread = spread;
    std::vector<pid_t> pids;
    auto cleanup = [&] { processes_.stop(pids); };
    std::vector<uint16_t> ports;
    std::string error;
    for (uint32_t i = 0; i < o_.backends; ++i) {
      uint16_t port = pickFreePort(&taken_);
      pid_t pid = processes_.start(
          "memcached",
          {o_.memcached, "-u", "root", "-l", "127.0.0.1", "-p", std::to_string(port), "-U", "0",
           "-t", "1", "-m", "64"},
          work_ + "/memcached_" + std::to_string(spread) + "_" + std::to_string(i) + ".log",
          &error);
      if (pid < 0 || !waitUntilServing(port, pid, 5000)) {
        row.error = "memcached did not start: " + error;
        cleanup();
        return row;
      }
      pids.push_back(pid);
      ports.push_back(port);
    }
    const uint16_t port = pickFreePort(&taken_);
    std::string y = "hot:\n  listen: 127.0.0.1:" + std::to_string(port) +
                    "\n  hash: fnv1a_64\n  distribution: " + o_.distribution +
                    "\n  timeout: 1000\n  preconnect: true\n";
    if (spread > 0) {
      y += "  hot_key_spread: " + std::to_string(spread) + "\n";
    }
    y += "  servers:\n";
    for (size_t i = 0; i < ports.size(); ++i) {
      char name[32];
      std::snprintf(name, sizeof(name), "s%03zu", i);
      y += "    - 127.0.0.1:" + std::to_string(ports[i]) + ":1 " + name + "\n";
    }
    const std::string conf = work_ + "/hot_" + std::to_string(spread) + ".yml";
    std::ofstream(conf) << y;
    pid_t proxy = processes_.start(
        "mcring",
        {o_.mcring, "-c", conf, "-s", "0", "--threads", std::to_string(o_.threads)},
        work_ + "/mcring_" + std::to_string(spread) + ".log", &error);
    if (proxy < 0 || !waitUntilServing(port, proxy, 5000)) {
      row.error = "mcring did not start (see " + work_ + "/mcring_" + std::to_string(spread) +
                  ".log): " + error;
      if (proxy > 0) {
        pids.push_back(proxy);
      }
      cleanup();
      return row;
    }
    pids.insert(pids.begin(), proxy);
    SetResult warm;
    if (!setAllKeys(port, keys_, o_.keys, 100, &warm, &error)) {
      row.error = "warm-up: " + error;
      cleanup();
      return row;
    }
    CacheAsideOptions co;
    co.port = port;
    co.connections = o_.connections;
    co.rate = o_.rate;
    co.hot_keys = 1;
    co.hot_share = o_.hot_share;
    co.max_seconds = o_.settle_s + o_.seconds + 5;
    CacheAsideClient client(co, keys_);
    const uint64_t start_ns = client.start();
    sleepInterruptible(static_cast<int>(o_.settle_s * 1000));
    std::vector<uint64_t> before(ports.size()), after(ports.size());
    for (size_t i = 0; i < ports.size(); ++i) {
      if (!cmdGet(ports[i], &before[i], &error)) {
        row.error = "stats: " + error;
      }
    }
    const uint64_t measured_from = monotonicNs();
    sleepInterruptible(static_cast<int>(o_.seconds * 1000));
    for (size_t i = 0; i < ports.size(); ++i) {
      if (!cmdGet(ports[i], &after[i], &error)) {
        row.error = "stats: " + error;
      }
    }
    const uint64_t measured_to = monotonicNs();
    client.stop();
    uint64_t total = 0;
    double max_share = 0;
    for (size_t i = 0; i < ports.size(); ++i) {
      total += after[i] - before[i];
    }
    for (size_t i = 0; i < ports.size(); ++i) {
      double s = total ? static_cast<double>(after[i] - before[i]) / static_cast<double>(total)
                       : 0;
      row.shares.push_back(s);
      max_share = std::max(max_share, s);
    }
    row.max_mean = max_share * static_cast<double>(ports.size());
    // The client's own view over the same interval: its hit ratio and errors.
    const auto& slots = client.slots();
    const size_t from = static_cast<size_t>((measured_from - start_ns) / CacheAsideClient::kSlotNs);
    const size_t to = std::min(slots.size(),
                               static_cast<size_t>((measured_to - start_ns) /
                                                   CacheAsideClient::kSlotNs));
    StampedeSlot sum;
    for (size_t i = from; i < to; ++i) {
      sum.add(slots[i]);
    }
    row.gets = sum.gets;
    row.errors = sum.errors;
    row.hit_ratio = sum.gets ? static_cast<double>(sum.hits) / sum.gets : 0;
    cleanup();
    return row;
  }

 private:
  const Options& o_;
  ChildProcesses& processes_;
  const std::string work_;
  const KeySpace keys_;
  std::set<uint16_t> taken_;
};

}  // namespace

int runHotKeys(int argc, char** argv) {
  Options o;
  std::string error;
  if (!parse(argc, argv, &o, &error)) {
    std::fprintf(stderr, "mcring-bench hotkeys: %s\n", error.c_str());
    return 2;
  }
  if (o.mcring.empty()) {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    o.mcring = (ec ? std::string(".") : self.parent_path().string()) + "/mcring";
  }
  for (const std::string& bin : {o.mcring, o.memcached}) {
    if (::access(bin.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "mcring-bench hotkeys: %s is not executable\n", bin.c_str());
      return 2;
    }
  }
  char work_template[] = "/tmp/mcring-hotkeys-XXXXXX";
  if (::mkdtemp(work_template) == nullptr) {
    std::fprintf(stderr, "mcring-bench hotkeys: cannot create a work directory in /tmp\n");
    return 1;
  }
  installStampedeSignals();
  ChildProcesses processes(/*announce=*/false);
  Run run(o, processes, work_template);
  const double plain = (o.hot_share + (1 - o.hot_share) / o.backends) * o.backends;
  std::printf(
      "### Live hot key: %.0f%% of %.0f gets/s on one key, the rest uniform over %llu keys; "
      "%u memcached servers behind mcring (%s); shares from the servers' own cmd_get over %.0f "
      "s after %.0f s of load\n\n",
      o.hot_share * 100, o.rate, static_cast<unsigned long long>(o.keys), o.backends,
      o.distribution.c_str(), o.seconds, o.settle_s);
  std::printf("| distribution | hot_key_spread | max/mean gets | hot server's share | theory | "
              "hit ratio | errors |\n|---|---:|---:|---:|---:|---:|---:|\n");
  int rc = 0;
  for (uint32_t r : o.spreads) {
    Row row = run.measure(r);
    if (!row.error.empty()) {
      std::printf("| %s | %u | failed: %s | | | | |\n", o.distribution.c_str(), r,
                  row.error.c_str());
      rc = 1;
      continue;
    }
    // The lab's theory: the hot key's share on one server (plain) or split over R servers.
    const double theory =
        r == 0 ? plain : (o.hot_share / r + (1 - o.hot_share) / o.backends) * o.backends;
    std::printf("| %s | %u | %.2f | %.1f%% | %.2f | %.4f | %llu |\n", o.distribution.c_str(), r,
                row.max_mean,
                *std::max_element(row.shares.begin(), row.shares.end()) * 100, theory,
                row.hit_ratio, static_cast<unsigned long long>(row.errors));
    std::fflush(stdout);
  }
  std::error_code ec;
  std::filesystem::remove_all(work_template, ec);
  return rc;
}

}  // namespace mcring::bench
