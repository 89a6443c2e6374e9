// Logger implementation: one mutex per line; logging is never on the request path. The rate
// limit of logWriteLimited counts under the same mutex.
#include "proxy/common/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "proxy/common/written_file.h"

namespace mcring::common {
namespace {

std::atomic<int> g_verbosity{static_cast<int>(LogLevel::Notice)};
std::mutex g_mutex;
std::string g_last_error;  // guarded by g_mutex
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

namespace {

// One line, with g_mutex held. The message is formatted first so that a control byte an
// argument brought (a client's key, a peer's text) is written escaped: a line never holds an LF
// or CR of its own, so it cannot forge another. Bytes of 0x80 and above are escaped too (an
// 8-bit terminal reads 0x9b as CSI): a log line is printable ASCII and tabs.
void writeLineLocked(LogLevel level, const char* fmt, va_list ap) {
  char small[512];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(small, sizeof(small), fmt, copy);
  va_end(copy);
  std::string message;
  if (n >= 0 && static_cast<size_t>(n) >= sizeof(small)) {
    message.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(message.data(), message.size(), fmt, ap);
    message.resize(static_cast<size_t>(n));
  } else {
    message.assign(small, n > 0 ? static_cast<size_t>(n) : 0);
  }
  if (level == LogLevel::Error) {
    g_last_error = message;
  }
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm t;
  localtime_r(&tv.tv_sec, &t);
  char stamp[64];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &t);
  FILE* out = g_out != nullptr ? g_out : stderr;
  std::fprintf(out, "[%s.%03ld] %-6s ", stamp, static_cast<long>(tv.tv_usec / 1000),
               kLevelNames[static_cast<int>(level)]);
  static const char kHex[] = "0123456789abcdef";
  for (const char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c >= 0x7f) {
      const char escaped[] = {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      std::fwrite(escaped, 1, sizeof(escaped), out);
    } else {
      std::fputc(c, out);
    }
  }
  std::fputc('\n', out);
  std::fflush(out);
}

void writeLocked(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void writeLocked(LogLevel level, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  writeLineLocked(level, fmt, ap);
  va_end(ap);
}

// Per class: the second being counted, lines written in it, lines suppressed since the last
// report. A handful of classes, all constant names, so the map stays small.
struct LimitState {
  int64_t second = 0;
  int written = 0;
  uint64_t suppressed = 0;
  LogLevel level = LogLevel::Warn;
};
std::map<std::string, LimitState>& limits() {
  static std::map<std::string, LimitState> m;
  return m;
}

int64_t monotonicSecond() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

void reportSuppressedLocked(const std::string& cls, LimitState& st) {
  if (st.suppressed > 0) {
    writeLocked(st.level, "%s: %llu similar lines suppressed (at most %d a second)", cls.c_str(),
                static_cast<unsigned long long>(st.suppressed), kLogLinesPerSecond);
    st.suppressed = 0;
  }
}

}  // namespace

std::string logLastError() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_error;
}

void logWrite(LogLevel level, const char* fmt, ...) {
  std::lock_guard<std::mutex> lock(g_mutex);
  va_list ap;
  va_start(ap, fmt);
  writeLineLocked(level, fmt, ap);
  va_end(ap);
}

void logWriteLimited(const char* cls, LogLevel level, const char* fmt, ...) {
  const int64_t now = monotonicSecond();
  std::lock_guard<std::mutex> lock(g_mutex);
  LimitState& st = limits()[cls];
  if (st.second != now) {
    reportSuppressedLocked(cls, st);
    st.second = now;
    st.written = 0;
  }
  if (st.written >= kLogLinesPerSecond) {
    ++st.suppressed;
    st.level = level;
    return;
  }
  ++st.written;
  va_list ap;
  va_start(ap, fmt);
  writeLineLocked(level, fmt, ap);
  va_end(ap);
}

std::string escapeForLog(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '\\') {
      out.push_back(ch);
    } else {
      out.append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
    }
  }
  return out;
}

void logFlushSuppressed() {
  const int64_t now = monotonicSecond();
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& [cls, st] : limits()) {
    if (st.second != now) {
      reportSuppressedLocked(cls, st);
    }
  }
}

}  // namespace mcring::common
