// StatsReporter: memcached-style STAT lines from the worker counter table.
#include "proxy/core/stats_reporter.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "mcring_version.h"

namespace mcring::core {

StatsReporter::StatsReporter() : start_time_(static_cast<uint64_t>(time(nullptr))) {}

uint64_t StatsReporter::uptime() const {
  return static_cast<uint64_t>(time(nullptr)) - start_time_;
}

uint64_t StatsReporter::sum(std::atomic<uint64_t> stats::WorkerCounters::*field) const {
  uint64_t total = 0;
  for (const auto* w : workers_) {
    total += (w->*field).load(std::memory_order_relaxed);
  }
  return total;
}

bool StatsReporter::render(std::string_view args, std::string* out) const {
  while (!args.empty() && args.back() == ' ') {
    args.remove_suffix(1);
  }
  if (args == "reloads") {
    renderReloads(out);
    return true;
  }
  if (!args.empty()) {
    out->assign("ERROR\r\n");
    return false;
  }
  char line[160];
  auto stat = [&](const char* name, const std::string& value) {
    out->append("STAT ").append(name).append(" ").append(value).append("\r\n");
  };
  uint64_t now = static_cast<uint64_t>(time(nullptr));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  stat("pid", std::to_string(getpid()));
  stat("uptime", std::to_string(now - start_time_));
  stat("time", std::to_string(now));
  stat("version", MCRING_VERSION);
  stat("pointer_size", std::to_string(sizeof(void*) * 8));
  std::snprintf(line, sizeof(line), "%ld.%06ld", static_cast<long>(ru.ru_utime.tv_sec),
                static_cast<long>(ru.ru_utime.tv_usec));
  stat("rusage_user", line);
  std::snprintf(line, sizeof(line), "%ld.%06ld", static_cast<long>(ru.ru_stime.tv_sec),
                static_cast<long>(ru.ru_stime.tv_usec));
  stat("rusage_system", line);
  stat("threads", std::to_string(workers_.size()));
#define MCRING_X(name, kind, help) stat(#name, std::to_string(sum(&stats::WorkerCounters::name)));
  MCRING_WORKER_COUNTERS(MCRING_X)
#undef MCRING_X
  stat("rejected_connections", std::to_string(rejectedConnections()));
  stat("config_generation", std::to_string(generation_.load(std::memory_order_relaxed)));
  if (reloads_ != nullptr) {
    stat("reloads", std::to_string(reloads_->attempts()));
    stat("reload_failures", std::to_string(reloads_->failures()));
    std::string last = reloads_->lastError();
    if (!last.empty()) {
      stat("reload_last_error", last);
    }
  }
  out->append("END\r\n");
  return true;
}

// `stats reloads`: one STAT line per recent attempt, oldest first:
//   STAT reload:<id> time=<unix> source=<s> result=<r> generation=<g> diff="..." error="..."
void StatsReporter::renderReloads(std::string* out) const {
  if (reloads_ != nullptr) {
    for (const ReloadRecord& r : reloads_->recent()) {
      out->append("STAT reload:" + std::to_string(r.id) + " time=" + std::to_string(r.time) +
                  " source=" + r.source + " result=" + reloadResultName(r.result) +
                  " generation=" + std::to_string(r.generation));
      if (!r.diff.empty()) {
        out->append(" diff=\"" + r.diff + "\"");
      }
      if (!r.error.empty()) {
        out->append(" error=\"" + r.error + "\"");
      }
      out->append("\r\n");
    }
  }
  out->append("END\r\n");
}

}  // namespace mcring::core
