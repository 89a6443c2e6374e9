#include "proxy/protocol/exptime_cap.h"

#include <charconv>
#include <vector>

namespace mcring::protocol {

namespace {

constexpr int64_t kRelativeLimit = 60 * 60 * 24 * 30;  // memcached's REALTIME_MAXDELTA

// A number as memcached reads one (strtol): an optional sign ("+0" is 0, never to be left
// uncapped), then digits.
std::optional<int64_t> parseInt(std::string_view s) {
  if (s.size() > 1 && s[0] == '+') {
    s.remove_prefix(1);
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return v;
}

// A replacement of [offset, offset + length) of the line by `text`.
struct Edit {
  size_t offset;
  size_t length;
  std::string text;
};

// The byte range of the i-th space-separated token of `body` (offsets in body).
std::optional<std::pair<size_t, size_t>> tokenAt(std::string_view body, size_t index) {
  size_t pos = 0;
  size_t i = 0;
  while (pos < body.size()) {
    while (pos < body.size() && body[pos] == ' ') {
      ++pos;
    }
    if (pos >= body.size()) {
      break;
    }
    size_t end = body.find(' ', pos);
    if (end == std::string_view::npos) {
      end = body.size();
    }
    if (i == index) {
      return std::make_pair(pos, end - pos);
    }
    ++i;
    pos = end;
  }
  return std::nullopt;
}

// The line without its terminator ("\r\n" or "\n").
std::string_view bodyOf(std::string_view line) {
  if (!line.empty() && line.back() == '\n') {
    line.remove_suffix(1);
  }
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

}  // namespace

std::optional<int64_t> cappedExptime(int64_t exptime, uint32_t max_ttl, int64_t now_unix) {
  const int64_t cap = max_ttl;
  if (exptime < 0) {
    return std::nullopt;  // already expired
  }
  if (exptime == 0) {
    return cap;
  }
  if (exptime <= kRelativeLimit) {
    return exptime > cap ? std::optional<int64_t>(cap) : std::nullopt;
  }
  return exptime - now_unix > cap ? std::optional<int64_t>(cap) : std::nullopt;
}

bool capLineExptime(const Request& req, std::string_view line, uint32_t max_ttl, int64_t now_unix,
                    std::string* out) {
  const std::string_view body = bodyOf(line.substr(0, req.line_length));
  std::vector<Edit> edits;
  auto capToken = [&](size_t offset, size_t length, size_t skip) {
    const std::optional<int64_t> v = parseInt(body.substr(offset + skip, length - skip));
    if (!v) {
      return;  // not a number: the server answers it as it would without the cap
    }
    if (auto capped = cappedExptime(*v, max_ttl, now_unix)) {
      edits.push_back({offset + skip, length - skip, std::to_string(*capped)});
    }
  };
  switch (commandClass(req.command)) {
    case CommandClass::Storage:
    case CommandClass::Keyed:
    case CommandClass::Retrieval: {
      size_t index = 0;
      if (req.command == Command::Touch) {
        index = 2;
      } else if (commandClass(req.command) == CommandClass::Storage) {
        index = 3;
      } else if (req.command == Command::Gat || req.command == Command::Gats) {
        index = 1;
      } else {
        return false;  // get, gets, delete, incr, decr set no TTL
      }
      if (auto t = tokenAt(body, index)) {
        capToken(t->first, t->second, 0);
      }
      break;
    }
    case CommandClass::Meta: {
      if (req.keys.empty()) {
        return false;
      }
      const bool vivifies =
          req.command == Command::MetaGet || req.command == Command::MetaArithmetic;
      if (req.command == Command::MetaDebug) {
        return false;
      }
      const size_t flags_at = req.keys[0].offset + req.keys[0].length;
      const std::string_view flags = body.substr(std::min(flags_at, body.size()));
      bool has_ttl = false;
      // ms: the first token after the key is the value's length, not a flag.
      size_t first = req.command == Command::MetaSet ? 1 : 0;
      for (size_t i = first;; ++i) {
        auto t = tokenAt(flags, i);
        if (!t) {
          break;
        }
        const char flag = flags[t->first];
        if (flag == 'T' || (flag == 'N' && vivifies)) {
          has_ttl = has_ttl || flag == 'T';
          capToken(flags_at + t->first, t->second, 1);
        }
      }
      if (req.command == Command::MetaSet && !has_ttl) {
        edits.push_back({body.size(), 0, " T" + std::to_string(max_ttl)});
      }
      break;
    }
    default:
      return false;
  }
  if (edits.empty()) {
    return false;
  }
  out->clear();
  size_t at = 0;
  for (const Edit& e : edits) {  // in line order
    out->append(line.substr(at, e.offset - at));
    out->append(e.text);
    at = e.offset + e.length;
  }
  out->append(line.substr(at, req.line_length - at));
  return true;
}

std::string compactLine(std::string_view line) {
  const std::string_view body = bodyOf(line);
  std::string out;
  out.reserve(line.size());
  for (char c : body) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) {
      continue;
    }
    out.push_back(c);
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  out.append(line.substr(body.size()));
  return out;
}

}  // namespace mcring::protocol
