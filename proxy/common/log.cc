// Logger implementation: one mutex per line; logging is never on the request path.
#include "proxy/common/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <ctime>
#include <mutex>

namespace mcring::common {
namespace {

std::atomic<int> g_verbosity{static_cast<int>(LogLevel::Notice)};
std::mutex g_mutex;
FILE* g_out = nullptr;
std::string g_path;

constexpr const char* kLevelNames[] = {"error", "warn", "notice", "info", "debug"};

}  // namespace

void logInit(int verbosity, const std::string& path) {
  g_verbosity.store(verbosity, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_path = path;
  if (!path.empty()) {
    g_out = std::fopen(path.c_str(), "a");
  }
  if (g_out == nullptr) {
    g_out = stderr;
  }
}

void logReopen() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_path.empty()) {
    if (g_out != nullptr && g_out != stderr) {
      std::fclose(g_out);
    }
    g_out = std::fopen(g_path.c_str(), "a");
    if (g_out == nullptr) {
      g_out = stderr;
    }
  }
}

bool logEnabled(LogLevel level) {
  return static_cast<int>(level) <= g_verbosity.load(std::memory_order_relaxed);
}

void logWrite(LogLevel level, const char* fmt, ...) {
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &t);
  std::lock_guard<std::mutex> lock(g_mutex);
  FILE* out = g_out != nullptr ? g_out : stderr;
  std::fprintf(out, "[%s.%03ld] %-6s ", stamp, static_cast<long>(tv.tv_usec / 1000),
               kLevelNames[static_cast<int>(level)]);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(out, fmt, ap);
  va_end(ap);
  std::fputc('\n', out);
  std::fflush(out);
}

}  // namespace mcring::common
