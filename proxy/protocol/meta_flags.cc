#include "proxy/protocol/meta_flags.h"

namespace mcring::protocol {

std::optional<std::string_view> findMetaFlag(std::string_view flags, char flag) {
  const auto separator = [](char c) { return c == ' ' || c == '\r' || c == '\n'; };
  size_t at = 0;
  while (at < flags.size()) {
    while (at < flags.size() && separator(flags[at])) {
      ++at;
    }
    size_t end = at;
    while (end < flags.size() && !separator(flags[end])) {
      ++end;
    }
    if (end > at && flags[at] == flag) {
      return flags.substr(at + 1, end - at - 1);
    }
    at = end;
  }
  return std::nullopt;
}

}  // namespace mcring::protocol
