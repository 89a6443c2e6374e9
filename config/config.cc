// Text forms of config values: addresses (server identity) and validation errors.
#include "config/config.h"

namespace mcring::config {

std::optional<HotKeyMetrics> parseHotKeyMetrics(std::string_view name) {
  if (name == "off") {
    return HotKeyMetrics::Off;
  }
  if (name == "hashed") {
    return HotKeyMetrics::Hashed;
  }
  if (name == "plain") {
    return HotKeyMetrics::Plain;
  }
  return std::nullopt;
}

std::string_view hotKeyMetricsName(HotKeyMetrics m) {
  switch (m) {
    case HotKeyMetrics::Off:
      return "off";
    case HotKeyMetrics::Hashed:
      return "hashed";
    case HotKeyMetrics::Plain:
      return "plain";
  }
  return "off";
}

std::optional<LogKeys> parseLogKeys(std::string_view name) {
  if (name == "plain") {
    return LogKeys::Plain;
  }
  if (name == "hash") {
    return LogKeys::Hash;
  }
  if (name == "none") {
    return LogKeys::None;
  }
  return std::nullopt;
}

std::string_view logKeysName(LogKeys k) {
  switch (k) {
    case LogKeys::Plain:
      return "plain";
    case LogKeys::Hash:
      return "hash";
    case LogKeys::None:
      return "none";
  }
  return "hash";
}

std::optional<UnavailableReads> parseUnavailableReads(std::string_view name) {
  if (name == "miss") {
    return UnavailableReads::Miss;
  }
  if (name == "error") {
    return UnavailableReads::Error;
  }
  return std::nullopt;
}

std::string_view unavailableReadsName(UnavailableReads m) {
  return m == UnavailableReads::Error ? "error" : "miss";
}

std::optional<UnavailableWrites> parseUnavailableWrites(std::string_view name) {
  if (name == "error") {
    return UnavailableWrites::Error;
  }
  if (name == "not_stored") {
    return UnavailableWrites::NotStored;
  }
  return std::nullopt;
}

std::string_view unavailableWritesName(UnavailableWrites m) {
  return m == UnavailableWrites::NotStored ? "not_stored" : "error";
}

std::string Address::toString() const {
  if (isUnix()) {
    return unix_path;
  }
  // Bracket IPv6 literals so the port stays unambiguous (and identities stay distinct).
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

std::string ConfigError::toString() const {
  std::string out = file;
  if (mark.line > 0) {
    out += ":" + std::to_string(mark.line) + ":" + std::to_string(mark.column);
  }
  out += ": ";
  if (!context.empty()) {
    out += context + ": ";
  }
  out += message;
  return out;
}

}  // namespace mcring::config
