#include "proxy/stats/request_line.h"

#include <cinttypes>
#include <cstdio>

#include "proxy/stats/hyperloglog.h"

namespace mcring::stats {

namespace {

void appendEscaped(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c > 0x20 && c < 0x7f && c != '\\') {
      out.push_back(ch);
    } else {
      out.append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
    }
  }
}

void appendTimestamp(std::string& out, int64_t unix_us, uint64_t gid) {
  char buf[64];
  const int n = std::snprintf(buf, sizeof(buf), "ts=%" PRId64 ".%06" PRId64 " gid=%" PRIu64,
                              unix_us / 1000000, unix_us % 1000000, gid);
  out.append(buf, static_cast<size_t>(n));
}

void appendField(std::string& out, std::string_view name, std::string_view value) {
  out.push_back(' ');
  out.append(name);
  out.push_back('=');
  if (value.empty()) {
    out.push_back('-');
  } else {
    appendEscaped(out, value);
  }
}

}  // namespace

void appendShownKey(std::string& out, std::string_view key, KeyShown mode) {
  switch (mode) {
    case KeyShown::Plain:
      appendEscaped(out, key);
      return;
    case KeyShown::Hash: {
      char buf[32];
      const int n = std::snprintf(buf, sizeof(buf), "xxh3:%016" PRIx64, HyperLogLog::hashKey(key));
      out.append(buf, static_cast<size_t>(n));
      return;
    }
    case KeyShown::None:
      out.push_back('-');
      return;
  }
}

std::string shownKey(std::string_view key, KeyShown mode) {
  std::string out;
  appendShownKey(out, key, mode);
  return out;
}

void appendProxyReqLine(std::string& out, int64_t unix_us, uint64_t gid, const RequestRecord& r,
                        KeyShown mode) {
  appendTimestamp(out, unix_us, gid);
  char buf[48];
  int n = std::snprintf(buf, sizeof(buf), " type=proxy_req elapsed=%" PRIu64, r.elapsed_us);
  out.append(buf, static_cast<size_t>(n));
  appendField(out, "cmd", r.verb);
  out.append(" key=");
  if (r.keys == 0) {
    out.push_back('-');
  } else {
    appendShownKey(out, r.key, mode);
  }
  if (r.keys > 1) {
    n = std::snprintf(buf, sizeof(buf), " keys=%u", r.keys);
    out.append(buf, static_cast<size_t>(n));
  }
  appendField(out, "status", r.status);
  appendField(out, "be", r.backend);
  appendField(out, "client", r.client);
  if (!r.route.empty()) {
    appendField(out, "route", r.route);
  }
  out.append("\r\n");
}

void appendEventsSkippedLine(std::string& out, int64_t unix_us, uint64_t gid, uint64_t skipped) {
  appendTimestamp(out, unix_us, gid);
  char buf[48];
  const int n =
      std::snprintf(buf, sizeof(buf), " type=eventsskipped skipped=%" PRIu64 "\r\n", skipped);
  out.append(buf, static_cast<size_t>(n));
}

std::string_view replyStatus(std::string_view reply_start) {
  size_t n = 0;
  while (n < reply_start.size() && n < kStatusMax) {
    const auto c = static_cast<unsigned char>(reply_start[n]);
    if (c <= 0x20 || c >= 0x7f) {
      break;
    }
    ++n;
  }
  return reply_start.substr(0, n);
}

}  // namespace mcring::stats
