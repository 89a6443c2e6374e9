// Text forms of config values: addresses (server identity) and validation errors.
#include "config/config.h"

namespace mcring::config {

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
