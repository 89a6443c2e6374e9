// LoadGenerator::run: builds the workers, warms, runs them on threads, merges their seconds.
#include "bench/mcring_bench/load_generator.h"

#include <signal.h>
#include <sys/resource.h>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <fstream>
#include <sstream>
#include <string>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/key_chooser.h"
#include "bench/mcring_bench/key_space.h"
#include "bench/mcring_bench/load_worker.h"

namespace mcring::bench {
namespace {

// User and system CPU seconds of this process so far (all threads).
std::pair<double, double> cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return {seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

// Where workers leave their seconds for the controller: one queue per worker, touched once a
// second per worker, so the lock is never on the request path.
class Mailbox {
 public:
  explicit Mailbox(size_t workers) : queues_(workers), finished_(workers, false) {}

  void post(size_t worker, const IntervalStats& interval, bool last) {
    {
      std::lock_guard lock(mutex_);
      queues_[worker].push_back(interval);
      if (last) {
        finished_[worker] = true;
      }
    }
    ready_.notify_one();
  }

  // Waits until every worker has posted its next second or finished, and merges those seconds.
  // False once every worker has finished and nothing is left.
  bool takeNext(IntervalStats* merged) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] {
      for (size_t w = 0; w < queues_.size(); ++w) {
        if (queues_[w].empty() && !finished_[w]) {
          return false;
        }
      }
      return true;
    });
    bool any = false;
    for (auto& queue : queues_) {
      if (!queue.empty()) {
        merged->add(queue.front());
        merged->end_s = std::max(merged->end_s, queue.front().end_s);
        queue.pop_front();
        any = true;
      }
    }
    return any;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<std::deque<IntervalStats>> queues_;
  std::vector<bool> finished_;
};

}  // namespace

// User + system CPU seconds of process `pid` so far (all threads), from /proc/PID/stat; -1 when
// unreadable. The fields are counted after the last ')', since the command name may hold spaces.
double processCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) {
    return -1;
  }
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) {
    return -1;
  }
  std::istringstream fields(line.substr(paren + 1));
  std::string field;
  unsigned long long utime = 0;
  unsigned long long stime = 0;
  // After ')': state is field 3 of proc(5); utime and stime are fields 14 and 15.
  for (int n = 3; n <= 15 && (fields >> field); ++n) {
    if (n == 14) {
      utime = std::stoull(field);
    } else if (n == 15) {
      stime = std::stoull(field);
      const long ticks = sysconf(_SC_CLK_TCK);
      return ticks > 0 ? static_cast<double>(utime + stime) / static_cast<double>(ticks) : -1;
    }
  }
  return -1;
}

LoadResult LoadGenerator::run() {
  signal(SIGPIPE, SIG_IGN);
  const uint32_t threads = options_.threads;
  const KeySpace keys(options_.key_prefix, options_.keys);
  const KeyChooser chooser(options_.keys, options_.zipf_exponent, options_.hot_keys,
                           options_.hot_share);

  // Connections and the request bound are spread as evenly as they go.
  std::vector<std::unique_ptr<LoadWorker>> workers;
  for (uint32_t i = 0; i < threads; ++i) {
    const uint32_t connections =
        options_.connections / threads + (i < options_.connections % threads ? 1 : 0);
    uint64_t quota = UINT64_MAX;
    if (options_.requests > 0) {
      quota = options_.requests / threads + (i < options_.requests % threads ? 1 : 0);
    }
    workers.push_back(
        std::make_unique<LoadWorker>(options_, keys, chooser, i, connections, quota, &stop_));
  }

  LoadResult result;
  if (options_.warm) {
    const uint64_t start = monotonicNs();
    const uint64_t deadline = start + static_cast<uint64_t>(LoadOptions::kMaxDurationSeconds * 1e9);
    std::vector<std::thread> running;
    for (uint32_t i = 0; i < threads; ++i) {
      const uint64_t first = options_.keys * i / threads;
      const uint64_t last = options_.keys * (i + 1) / threads;
      running.emplace_back([&, i, first, last] { workers[i]->warm(first, last, deadline); });
    }
    for (auto& t : running) {
      t.join();
    }
    result.warmed = true;
    result.warm_seconds = static_cast<double>(monotonicNs() - start) / 1e9;
    for (auto& w : workers) {
      result.warm.add(w->warmCounters());
    }
  }

  Mailbox mailbox(threads);
  const auto cpu_before = cpuSeconds();
  const double server_cpu_before =
      options_.server_pid > 0 ? processCpuSeconds(options_.server_pid) : -1;
  const uint64_t start = monotonicNs();
  std::vector<std::thread> running;
  for (uint32_t i = 0; i < threads; ++i) {
    running.emplace_back([&, i] {
      LoadWorker::Publish publish = [&mailbox, i](const IntervalStats& interval, bool last) {
        mailbox.post(i, interval, last);
      };
      workers[i]->measure(start, publish);
    });
  }

  // The controller: merge each second across workers, in order, and hand it to the callback.
  double previous_end = 0;
  for (uint32_t second = 1;; ++second) {
    auto merged = std::make_unique<IntervalStats>();
    if (!mailbox.takeNext(merged.get())) {
      break;
    }
    merged->second = second;
    merged->length_s = merged->end_s - previous_end;
    previous_end = merged->end_s;
    result.total.add(*merged);
    if (on_second_) {
      on_second_(*merged);
    }
  }
  for (auto& t : running) {
    t.join();
  }
  const auto cpu_after = cpuSeconds();
  if (server_cpu_before >= 0) {
    const double server_cpu_after = processCpuSeconds(options_.server_pid);
    if (server_cpu_after >= server_cpu_before) {
      result.server_cpu_seconds = server_cpu_after - server_cpu_before;
    }
  }
  result.cpu_user_seconds = cpu_after.first - cpu_before.first;
  result.cpu_seconds = result.cpu_user_seconds + cpu_after.second - cpu_before.second;
  result.duration_s = previous_end;
  result.total.end_s = previous_end;
  result.total.length_s = previous_end;
  for (auto& w : workers) {
    result.unsent += w->unsent();
  }
  return result;
}

}  // namespace mcring::bench
