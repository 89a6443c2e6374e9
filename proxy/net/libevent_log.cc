// libevent's log callback -> common's logger. A message's class for the rate limit is its text up
// to the first digit (fd numbers and sizes vary, the words do not), so one repeated fault is
// limited as one class whatever the descriptor.
#include "proxy/net/libevent_log.h"

#include <event2/event.h>

#include <cctype>
#include <string>

#include "proxy/common/log.h"

namespace mcring::net {
namespace {

common::LogLevel levelOf(int severity) {
  switch (severity) {
    case EVENT_LOG_DEBUG:
      return common::LogLevel::Debug;
    case EVENT_LOG_MSG:
      return common::LogLevel::Info;
    case EVENT_LOG_WARN:
      return common::LogLevel::Warn;
    default:
      return common::LogLevel::Error;
  }
}

void onLibeventLog(int severity, const char* msg) {
  const common::LogLevel level = levelOf(severity);
  if (!common::logEnabled(level) || msg == nullptr) {
    return;
  }
  std::string cls = "libevent: ";
  for (const char* p = msg;
       *p != '\0' && !std::isdigit(static_cast<unsigned char>(*p)) && cls.size() < 64; ++p) {
    cls += *p;
  }
  common::logWriteLimited(cls.c_str(), level, "libevent: %s", msg);
}

}  // namespace

void routeLibeventLog() {
  event_set_log_callback(&onLibeventLog);
}

}  // namespace mcring::net
