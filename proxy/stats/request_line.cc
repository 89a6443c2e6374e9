#include "proxy/stats/request_line.h"

#include <charconv>

#include "proxy/stats/hyperloglog.h"

namespace mcring::stats {

namespace {

bool printable(unsigned char c) {
  return c > 0x20 && c < 0x7f && c != '\\';
}

// Runs of printable bytes are appended whole (a line is written for every request).
void appendEscaped(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!printable(c)) {
      out.append(s.substr(run, i - run));
      out.append({'\\', 'x', kHex[c >> 4], kHex[c & 15]});
      run = i + 1;
    }
  }
  out.append(s.substr(run));
}

void appendNumber(std::string& out, uint64_t n) {
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof(buf), n).ptr;
  out.append(buf, static_cast<size_t>(end - buf));
}

// memcached's "ts=<sec>.<usec, 6 digits> gid=<n>".
void appendTimestamp(std::string& out, int64_t unix_us, uint64_t gid) {
  out.append("ts=");
  appendNumber(out, static_cast<uint64_t>(unix_us / 1000000));
  char usec[8] = {'.', '0', '0', '0', '0', '0', '0', ' '};
  uint64_t frac = static_cast<uint64_t>(unix_us % 1000000);
  for (int i = 6; i >= 1; --i) {
    usec[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  out.append(usec, sizeof(usec));
  out.append("gid=");
  appendNumber(out, gid);
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
      static const char kHex[] = "0123456789abcdef";
      char buf[5 + 16] = {'x', 'x', 'h', '3', ':'};
      uint64_t h = HyperLogLog::hashKey(key);
      for (int i = 20; i >= 5; --i) {
        buf[i] = kHex[h & 15];
        h >>= 4;
      }
      out.append(buf, sizeof(buf));
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
  out.append(" type=proxy_req elapsed=");
  appendNumber(out, r.elapsed_us);
  appendField(out, "cmd", r.verb);
  out.append(" key=");
  if (r.keys == 0) {
    out.push_back('-');
  } else {
    appendShownKey(out, r.key, mode);
  }
  if (r.keys > 1) {
    out.append(" keys=");
    appendNumber(out, r.keys);
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
  out.append(" type=eventsskipped skipped=");
  appendNumber(out, skipped);
  out.append("\r\n");
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
