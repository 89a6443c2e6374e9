// Logger implementation: one mutex per line; logging is never on the request path.
#include "proxy/common/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <ctime>
#include <mutex>

#include "proxy/common/written_file.h"

namespace mcring::common {
namespace {

std::atomic<int> g_verbosity{static_cast<int>(LogLevel::Notice)};
std::mutex g_mutex;
FILE* g_out = nullptr;
std::string g_path;

constexpr const char* kLevelNames[] = {"error", "warn", "notice", "info", "debug"};

// Opens the log file the way written_file.h says; nullptr (and *error) if it cannot be.
FILE* openLog(const std::string& path, std::string* error) {
  const int fd = openLogFile(path, error);
  if (fd < 0) {
    return nullptr;
  }
  FILE* f = ::fdopen(fd, "a");
  if (f == nullptr) {
    *error = "cannot open log file '" + path + "': " + std::strerror(errno);
    ::close(fd);
  }
  return f;
}

}  // namespace

bool logInit(int verbosity, const std::string& path, std::string* error) {
  g_verbosity.store(verbosity, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_path = path;
  std::string ignored;
  if (!path.empty()) {
    g_out = openLog(path, error != nullptr ? error : &ignored);
  }
  const bool ok = path.empty() || g_out != nullptr;
  if (g_out == nullptr) {
    g_out = stderr;
  }
  return ok;
}

void logReopen() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_path.empty()) {
    return;
  }
  std::string error;
  FILE* next = openLog(g_path, &error);
  if (next == nullptr) {
    std::fprintf(g_out != nullptr ? g_out : stderr, "log not reopened: %s\n", error.c_str());
    return;
  }
  if (g_out != nullptr && g_out != stderr) {
    std::fclose(g_out);
  }
  g_out = next;
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
