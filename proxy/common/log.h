// Process-wide logger: leveled lines with a timestamp to stderr or a file (-o). Off the hot path.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace mcring::common {

enum class LogLevel : int { Error = 0, Warn = 1, Notice = 2, Info = 3, Debug = 4 };

// path "" = stderr. False (and *error) if the log file cannot be opened: see openLogFile
// (written_file.h); the log then stays on stderr.
bool logInit(int verbosity, const std::string& path, std::string* error = nullptr);
bool logEnabled(LogLevel level);
void logWrite(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Reopens the log file (after rotation); keeps the open one if the path cannot be opened.
void logReopen();
// The message of the last Error line written ("" if none): what an upgrade's new process tells
// the old one when it cannot start (control/upgrade.h).
std::string logLastError();

// Lines that a fault can repeat without end (accept failures, libevent's own messages) go through
// a rate limit, so that a flood of one kind cannot fill the disk or bury every other line: at
// most kLogLinesPerSecond lines a second per class (`cls`, a short constant name), the rest
// counted and reported as one "suppressed" line of that class when its next second starts or at
// the next logFlushSuppressed().
inline constexpr int kLogLinesPerSecond = 5;
void logWriteLimited(const char* cls, LogLevel level, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
// Writes the "suppressed" line of every class whose second is over (call about once a second).
void logFlushSuppressed();

// `s` as one token of a log line or an event: printable ASCII but space and backslash as it is,
// every other byte as \xNN. A key from a binary or base64 meta client may hold any byte: as it
// is, an LF would start a forged line, a NUL cut the line short (printf), and a space or a
// backslash make the token ambiguous.
std::string escapeForLog(std::string_view s);

}  // namespace mcring::common

#define MCRING_LOG(level, ...)                                                    \
  do {                                                                            \
    if (::mcring::common::logEnabled(::mcring::common::LogLevel::level)) {        \
      ::mcring::common::logWrite(::mcring::common::LogLevel::level, __VA_ARGS__); \
    }                                                                             \
  } while (0)

#define MCRING_LOG_LIMITED(level, cls, ...)                                                   \
  do {                                                                                        \
    if (::mcring::common::logEnabled(::mcring::common::LogLevel::level)) {                    \
      ::mcring::common::logWriteLimited(cls, ::mcring::common::LogLevel::level, __VA_ARGS__); \
    }                                                                                         \
  } while (0)
