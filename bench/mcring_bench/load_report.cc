// Formatting of progress, summary (text and JSON) and timeline for `mcring-bench load`.
#include "bench/mcring_bench/load_report.h"

#include <cerrno>
#include <cstring>

namespace mcring::bench {
namespace {

double micros(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string loopName(const LoadOptions& options) {
  if (!options.openLoop()) {
    return "closed loop";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "open loop at %.0f req/s", options.rate);
  return buf;
}

}  // namespace

std::string progressLine(const IntervalStats& second) {
  const LoadCounters& c = second.counters;
  const double ops = second.length_s > 0 ? static_cast<double>(c.replies) / second.length_s : 0;
  const double hit = c.hitRatio();
  char hit_text[16] = "-";
  if (hit >= 0) {
    std::snprintf(hit_text, sizeof(hit_text), "%.3f", hit);
  }
  char buf[256];
  std::snprintf(
      buf, sizeof(buf), "[%5.1fs] %10.0f ops/s  hit %-5s  p50 %7.1fus  p99 %8.1fus  errors %llu",
      second.end_s, ops, hit_text, micros(second.latency.percentile(50)),
      micros(second.latency.percentile(99)), static_cast<unsigned long long>(c.errorTotal()));
  return buf;
}

void printSummaryText(std::FILE* out, const LoadOptions& options, const LoadResult& result) {
  const LoadCounters& c = result.total.counters;
  const LatencyHistogram& h = result.total.latency;
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };

  std::fprintf(out, "mcring-bench load -> %s: %s, %u connections x pipeline %u, %u thread%s\n",
               options.server.text.c_str(), loopName(options).c_str(), options.connections,
               options.pipeline, options.threads, options.threads == 1 ? "" : "s");
  if (!options.workload.empty()) {
    std::fprintf(out, "  workload %s (preset; flags given override it)\n",
                 options.workload.c_str());
  }
  std::fprintf(out, "  keys %llu %s (\"%s...\"), values %s B, set:get %s, multiget %u, seed %llu\n",
               u(options.keys), keyDistText(options).c_str(), options.key_prefix.c_str(),
               valueSizeText(options).c_str(), ratioText(options).c_str(), options.multiget,
               u(options.seed));
  if (result.warmed) {
    std::fprintf(out,
                 "warm-up     %llu sets in %.2f s (%llu stored, %llu errors; not counted below)\n",
                 u(result.warm.requests), result.warm_seconds, u(result.warm.sets),
                 u(result.warm.errorTotal()));
  }
  std::fprintf(out, "duration    %.2f s\n", result.duration_s);
  const bool balanced = c.requests == c.replies + c.errorTotal();
  std::fprintf(out, "requests    %llu = replies %llu + errors %llu  (%s)\n", u(c.requests),
               u(c.replies), u(c.errorTotal()), balanced ? "balanced" : "NOT BALANCED: bug");
  std::fprintf(out, "throughput  %.0f ops/s (replies per second)\n", result.opsPerSecond());
  if (c.hitRatio() >= 0) {
    std::fprintf(out, "hit ratio   %.4f (%llu hits / %llu keys asked in %llu gets)\n", c.hitRatio(),
                 u(c.hits), u(c.get_keys), u(c.gets));
  } else {
    std::fprintf(out, "hit ratio   - (no get replied)\n");
  }
  std::fprintf(out, "sets        %llu stored, %llu not stored\n", u(c.sets), u(c.not_stored));
  std::fprintf(out, "latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  (%s)\n",
               micros(h.percentile(50)), micros(h.percentile(90)), micros(h.percentile(99)),
               micros(h.percentile(99.9)), micros(h.max()),
               options.openLoop() ? "from scheduled send time" : "from send time");
  if (options.openLoop()) {
    std::fprintf(out, "unsent      %llu (due but every connection full: rate not sustained)\n",
                 u(result.unsent));
  }
  std::fprintf(out, "errors      ");
  if (c.errorTotal() == 0) {
    std::fprintf(out, "none\n");
  } else {
    const char* separator = "";
    for (size_t i = 0; i < kLoadErrorCount; ++i) {
      if (c.errors[i] > 0) {
        std::fprintf(out, "%s%s %llu", separator,
                     std::string(loadErrorName(static_cast<LoadError>(i))).c_str(), u(c.errors[i]));
        separator = ", ";
      }
    }
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "generator   cpu %.2f s (user %.2f + sys %.2f) = %.0f%% of one core\n",
               result.cpu_seconds, result.cpu_user_seconds,
               result.cpu_seconds - result.cpu_user_seconds, result.cpuPercentOfOneCore());
  if (options.server_pid > 0) {
    if (result.server_cpu_seconds >= 0) {
      std::fprintf(out, "server      cpu %.2f s (pid %d) = %.0f%% of one core, %.2f us per reply\n",
                   result.server_cpu_seconds, options.server_pid,
                   result.duration_s > 0 ? 100.0 * result.server_cpu_seconds / result.duration_s
                                         : 0.0,
                   result.serverCpuUsPerReply());
    } else {
      std::fprintf(out, "server      cpu unknown (/proc/%d/stat unreadable)\n", options.server_pid);
    }
  }
}

void printSummaryJson(std::FILE* out, const LoadOptions& options, const LoadResult& result) {
  const LoadCounters& c = result.total.counters;
  const LatencyHistogram& h = result.total.latency;
  const auto u = [](uint64_t v) { return static_cast<unsigned long long>(v); };

  std::string errors = "{\"total\":" + std::to_string(c.errorTotal());
  for (size_t i = 0; i < kLoadErrorCount; ++i) {
    errors += ",\"" + std::string(loadErrorName(static_cast<LoadError>(i))) +
              "\":" + std::to_string(c.errors[i]);
  }
  errors += "}";
  char hit[32] = "null";
  if (c.hitRatio() >= 0) {
    std::snprintf(hit, sizeof(hit), "%.6f", c.hitRatio());
  }

  std::fprintf(out,
               "{\"ops_per_sec\":%.1f,\"requests\":%llu,\"replies\":%llu,\"errors\":%s,"
               "\"balanced\":%s,\"hit_ratio\":%s,\"gets\":%llu,\"get_keys\":%llu,\"hits\":%llu,"
               "\"sets\":%llu,\"not_stored\":%llu,"
               "\"latency_us\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,"
               "\"max\":%.1f},",
               result.opsPerSecond(), u(c.requests), u(c.replies), errors.c_str(),
               c.requests == c.replies + c.errorTotal() ? "true" : "false", hit, u(c.gets),
               u(c.get_keys), u(c.hits), u(c.sets), u(c.not_stored), micros(h.percentile(50)),
               micros(h.percentile(90)), micros(h.percentile(99)), micros(h.percentile(99.9)),
               micros(h.max()));
  if (options.server_pid > 0 && result.server_cpu_seconds >= 0) {
    std::fprintf(out, "\"server_cpu_seconds\":%.3f,\"server_cpu_us_per_reply\":%.3f,",
                 result.server_cpu_seconds, result.serverCpuUsPerReply());
  } else {
    std::fprintf(out, "\"server_cpu_seconds\":null,\"server_cpu_us_per_reply\":null,");
  }
  std::fprintf(out,
               "\"cpu_seconds\":%.3f,\"cpu_user_seconds\":%.3f,\"cpu_percent\":%.1f,"
               "\"duration_s\":%.3f,\"unsent\":%llu,",
               result.cpu_seconds, result.cpu_user_seconds, result.cpuPercentOfOneCore(),
               result.duration_s, u(result.unsent));
  if (result.warmed) {
    std::fprintf(out, "\"warm\":{\"sets\":%llu,\"stored\":%llu,\"errors\":%llu,\"seconds\":%.3f},",
                 u(result.warm.requests), u(result.warm.sets), u(result.warm.errorTotal()),
                 result.warm_seconds);
  }
  std::fprintf(out,
               "\"params\":{\"server\":%s,\"mode\":\"%s\",\"connections\":%u,\"pipeline\":%u,"
               "\"threads\":%u,\"keys\":%llu,\"key_prefix\":%s,\"key_dist\":\"%s\","
               "\"value_size\":\"%s\",\"ratio\":\"%s\",\"multiget\":%u,\"rate\":%.1f,"
               "\"duration_s\":%.3f,\"requests\":%llu,\"warm\":%s,\"seed\":%llu,"
               "\"timeout_ms\":%u,\"workload\":%s,\"server_pid\":%d}}\n",
               jsonString(options.server.text).c_str(), options.openLoop() ? "open" : "closed",
               options.connections, options.pipeline, options.threads, u(options.keys),
               jsonString(options.key_prefix).c_str(), keyDistText(options).c_str(),
               valueSizeText(options).c_str(), ratioText(options).c_str(), options.multiget,
               options.rate, options.duration_s, u(options.requests),
               options.warm ? "true" : "false", u(options.seed), options.timeout_ms,
               options.workload.empty() ? "null" : jsonString(options.workload).c_str(),
               options.server_pid);
}

TimelineWriter::~TimelineWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
  }
}

bool TimelineWriter::open(const std::string& path, std::string* error) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    *error = "--timeline " + path + ": " + std::strerror(errno);
    return false;
  }
  std::fprintf(file_, "t,ops,gets,hits,hit_ratio,p50_us,p99_us,errors\n");
  return true;
}

void TimelineWriter::write(const IntervalStats& second) {
  if (file_ == nullptr) {
    return;
  }
  const LoadCounters& c = second.counters;
  char hit[32] = "";  // empty (NaN to most readers) when no get was replied to
  if (c.hitRatio() >= 0) {
    std::snprintf(hit, sizeof(hit), "%.6f", c.hitRatio());
  }
  std::fprintf(file_, "%u,%llu,%llu,%llu,%s,%.1f,%.1f,%llu\n", second.second,
               static_cast<unsigned long long>(c.replies),
               static_cast<unsigned long long>(c.get_keys), static_cast<unsigned long long>(c.hits),
               hit, static_cast<double>(second.latency.percentile(50)) / 1000.0,
               static_cast<double>(second.latency.percentile(99)) / 1000.0,
               static_cast<unsigned long long>(c.errorTotal()));
  std::fflush(file_);
}

}  // namespace mcring::bench
