// Parsers for the scalar forms config values take (see parse.h).
#include "config/parse.h"

#include <arpa/inet.h>

#include <cctype>
#include <charconv>
#include <limits>

namespace mcring::config {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && isSpace(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

// Host names and address literals; ':' and '%' for IPv6 (with a scope id). Anything else, e.g.
// '/', '@' or a space, is a typo we can catch before the resolver gives a vaguer error.
bool isHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_' || c == ':' || c == '%';
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

std::optional<std::string> checkHost(std::string_view host) {
  if (host.empty()) {
    return "missing host before ':'";
  }
  for (char c : host) {
    if (!isHostChar(c)) {
      return "invalid host " + quoted(host);
    }
  }
  return std::nullopt;
}

std::optional<uint16_t> parsePort(std::string_view text, std::string* error) {
  std::string why;
  auto port = parseUint(text, 1, 65535, &why);
  if (!port) {
    *error = "port " + why;
    return std::nullopt;
  }
  return static_cast<uint16_t>(*port);
}

// "host:port" or "[v6]:port" (brackets dropped from the host). twemproxy splits at the last ':',
// which also keeps an unbracketed "::1:11211" working.
bool parseHostPort(std::string_view text, std::string* host, uint16_t* port, std::string* error) {
  std::string_view host_part;
  std::string_view port_part;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      *error = "expected '[address]:port', got " + quoted(text);
      return false;
    }
    host_part = text.substr(1, close - 1);
    port_part = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      *error = "expected 'host:port' or an absolute unix socket path, got " + quoted(text);
      return false;
    }
    host_part = text.substr(0, colon);
    port_part = text.substr(colon + 1);
  }
  if (auto bad = checkHost(host_part)) {
    *error = *bad;
    return false;
  }
  auto p = parsePort(port_part, error);
  if (!p) {
    return false;
  }
  *host = std::string(host_part);
  *port = *p;
  return true;
}

bool checkUnixPath(std::string_view path, std::string* error) {
  if (path.size() > kMaxUnixPathLength) {
    *error = "unix socket path is " + std::to_string(path.size()) + " bytes, longer than the " +
             std::to_string(kMaxUnixPathLength) + " a socket address holds";
    return false;
  }
  return true;
}

}  // namespace

std::optional<bool> parseBool(std::string_view text, std::string* error) {
  if (text == "true") {
    return true;
  }
  if (text == "false") {
    return false;
  }
  *error = "expected true or false, got " + quoted(text);
  return std::nullopt;
}

std::optional<uint64_t> parseUint(std::string_view text, uint64_t min, uint64_t max,
                                  std::string* error) {
  uint64_t value = 0;
  bool digits = !text.empty();
  for (char c : text) {
    digits = digits && c >= '0' && c <= '9';
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (!digits || end != text.data() + text.size()) {
    *error = quoted(text) + " is not a non-negative integer";
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    *error =
        std::string(text) + " is out of range " + std::to_string(min) + ".." + std::to_string(max);
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> parseSize(std::string_view text, uint64_t min, uint64_t max,
                                  std::string* error) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  std::string_view suffix = text.substr(digits);
  uint64_t unit = 1;
  if (!suffix.empty()) {
    switch (suffix.front()) {
      case 'k':
      case 'K':
        unit = uint64_t{1} << 10;
        suffix.remove_prefix(1);
        break;
      case 'm':
      case 'M':
        unit = uint64_t{1} << 20;
        suffix.remove_prefix(1);
        break;
      case 'g':
      case 'G':
        unit = uint64_t{1} << 30;
        suffix.remove_prefix(1);
        break;
      default:
        break;
    }
  }
  if (suffix == "b" || suffix == "B") {
    suffix.remove_prefix(1);
  }
  const std::string bad = quoted(text) + " is not a size (bytes, or a number with k, m or g)";
  if (digits == 0 || !suffix.empty()) {
    *error = bad;
    return std::nullopt;
  }
  uint64_t count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, count);
  if (ec == std::errc::result_out_of_range || count > std::numeric_limits<uint64_t>::max() / unit ||
      count * unit < min || count * unit > max) {
    *error = std::string(text) + " is out of range " + std::to_string(min) + ".." +
             std::to_string(max) + " bytes";
    return std::nullopt;
  }
  return count * unit;
}

std::optional<Address> parseListenAddress(std::string_view text, std::string* error) {
  Address address;
  if (text.empty()) {
    *error = "empty address";
    return std::nullopt;
  }
  if (text.front() == '/') {
    // "/path/sock 0666": the mode follows the last space, as twemproxy parses it.
    std::string_view path = text;
    size_t space = text.find_last_of(" \t");
    if (space != std::string_view::npos) {
      path = trim(text.substr(0, space));
      std::string_view mode = text.substr(space + 1);
      uint32_t value = 0;
      bool octal = !mode.empty() && mode.size() <= 4 &&
                   mode.find_first_not_of("01234567") == std::string_view::npos;
      if (octal) {
        std::from_chars(mode.data(), mode.data() + mode.size(), value, 8);
      }
      if (!octal || value > 0777) {
        *error = "invalid unix socket mode " + quoted(mode) + " (octal, at most 0777)";
        return std::nullopt;
      }
      address.unix_mode = value;
    }
    if (!checkUnixPath(path, error)) {
      return std::nullopt;
    }
    address.unix_path = std::string(path);
    return address;
  }
  if (!parseHostPort(text, &address.host, &address.port, error)) {
    return std::nullopt;
  }
  return address;
}

std::optional<ServerConfig> parseServer(std::string_view text, std::string* error) {
  static constexpr std::string_view kForms =
      "'host:port:weight [name]' or '/path/to/socket:weight [name]'";
  const std::string expected = "expected " + std::string(kForms) + ", got " + quoted(text);
  ServerConfig server;
  // A trailing "tls=on" or "tls=off" (mcring's): this server's TLS differs from the pool's.
  {
    std::string_view rest = trim(text);
    size_t last = rest.find_last_of(" \t");
    std::string_view token =
        last == std::string_view::npos ? std::string_view() : rest.substr(last + 1);
    if (token.substr(0, 4) == "tls=") {
      if (token == "tls=on") {
        server.tls = true;
      } else if (token == "tls=off") {
        server.tls = false;
      } else {
        *error = "expected 'tls=on' or 'tls=off', got " + quoted(token);
        return std::nullopt;
      }
      text = trim(rest.substr(0, last));
    }
  }
  std::string_view where = text;
  size_t space = text.find_first_of(" \t");
  if (space != std::string_view::npos) {
    where = text.substr(0, space);
    std::string_view name = trim(text.substr(space));
    if (name.find_first_of(" \t") != std::string_view::npos) {
      *error = "server name " + quoted(name) + " must not contain spaces";
      return std::nullopt;
    }
    server.spec.name = std::string(name);
  }
  if (where.empty()) {
    *error = expected;
    return std::nullopt;
  }

  // The weight follows the last ':' in both forms; twemproxy requires it.
  size_t colon = where.rfind(':');
  size_t bracket = where.find(']');
  bool inside_brackets = where.front() == '[' && bracket != std::string_view::npos &&
                         colon != std::string_view::npos && colon < bracket;
  if (colon == std::string_view::npos || inside_brackets) {
    *error = where.front() == '/' ? "missing weight: write " + quoted(std::string(where) + ":1") +
                                        " (" + std::string(kForms) + ")"
                                  : expected;
    return std::nullopt;
  }
  std::string_view location = where.substr(0, colon);
  std::string_view weight_text = where.substr(colon + 1);
  if (location.empty()) {
    *error = expected;
    return std::nullopt;
  }

  if (where.front() == '/') {
    if (!checkUnixPath(location, error)) {
      return std::nullopt;
    }
    server.address.unix_path = std::string(location);
    server.spec.host = server.address.unix_path;
    server.spec.port = 0;
  } else {
    // A lone "host:port" parses as host "host", port <weight>: say what is actually missing.
    bool has_port = location.front() == '[' ? location.find("]:") != std::string_view::npos
                                            : location.find(':') != std::string_view::npos;
    if (!has_port) {
      *error = "missing weight: write " + quoted(std::string(where) + ":1") + " (" +
               std::string(kForms) + ")";
      return std::nullopt;
    }
    if (!parseHostPort(location, &server.address.host, &server.address.port, error)) {
      return std::nullopt;
    }
    server.spec.host = server.address.host;
    server.spec.port = server.address.port;
  }

  std::string why;
  auto weight = parseUint(weight_text, 1, kMaxWeight, &why);
  if (!weight) {
    *error = "weight " + why;
    return std::nullopt;
  }
  server.spec.weight = static_cast<uint32_t>(*weight);
  return server;
}

namespace {

bool isIpAddress(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

std::optional<Address> parseDnsTarget(std::string_view text, std::string* error) {
  Address a;
  if (text.find(':') == std::string_view::npos) {
    *error = "expected 'name:port' (the servers' port), got " + quoted(text);
    return std::nullopt;
  }
  if (!parseHostPort(text, &a.host, &a.port, error)) {
    return std::nullopt;
  }
  if (isIpAddress(a.host)) {
    *error = quoted(a.host) + " is an address, not a DNS name: list it under 'servers' as '" +
             a.toString() + ":1'";
    return std::nullopt;
  }
  if (a.host.size() > 253 || a.host.find(':') != std::string::npos ||
      a.host.find("..") != std::string::npos || a.host.front() == '.') {
    *error = "invalid DNS name " + quoted(a.host);
    return std::nullopt;
  }
  return a;
}

std::optional<std::string> parseSrvName(std::string_view text, std::string* error) {
  std::string name(text);
  bool chars = !name.empty() && name.size() <= 253;
  for (char c : name) {
    chars =
        chars && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_');
  }
  if (!chars || name.front() == '.' || name.find("..") != std::string::npos) {
    *error = "expected an SRV name such as '_memcache._tcp.example.com', got " + quoted(text);
    return std::nullopt;
  }
  if (isIpAddress(name)) {
    *error = quoted(name) + " is an address, not an SRV name";
    return std::nullopt;
  }
  return name;
}

std::optional<Address> parseNameserver(std::string_view text, std::string* error) {
  Address a;
  std::string host(text);
  if (isIpAddress(host)) {  // an address alone (an IPv6 one has colons of its own)
    a.host = host;
    a.port = 53;
    return a;
  }
  if (!parseHostPort(text, &a.host, &a.port, error)) {
    return std::nullopt;
  }
  if (!isIpAddress(a.host)) {
    *error =
        "the resolver must be an IP address ('127.0.0.1:53', '[::1]:53'), got " + quoted(a.host);
    return std::nullopt;
  }
  return a;
}

}  // namespace mcring::config
