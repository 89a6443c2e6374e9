// Process-wide logger: leveled lines with a timestamp to stderr or a file (-o). Off the hot path.
#pragma once

#include <cstdio>
#include <string>

namespace mcring::common {

enum class LogLevel : int { Error = 0, Warn = 1, Notice = 2, Info = 3, Debug = 4 };

// path "" = stderr. False (and *error) if the log file cannot be opened: see openLogFile
// (written_file.h); the log then stays on stderr.
bool logInit(int verbosity, const std::string& path, std::string* error = nullptr);
bool logEnabled(LogLevel level);
void logWrite(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Reopens the log file (after rotation); keeps the open one if the path cannot be opened.
void logReopen();

}  // namespace mcring::common

#define MCRING_LOG(level, ...)                                          \
  do {                                                                  \
    if (::mcring::common::logEnabled(::mcring::common::LogLevel::level)) { \
      ::mcring::common::logWrite(::mcring::common::LogLevel::level, __VA_ARGS__); \
    }                                                                   \
  } while (0)
