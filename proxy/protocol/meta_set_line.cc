#include "proxy/protocol/meta_set_line.h"

#include <charconv>

namespace mcring::protocol {

void appendMetaSetLine(std::string& out, std::string_view key, size_t length,
                       std::string_view flags, std::string_view ttl, std::string_view extra) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), length).ptr;
  out.append("ms ");
  out.append(key);
  out += ' ';
  out.append(digits, end);
  out.append(" F");
  out.append(flags);
  out.append(" T");
  out.append(ttl);
  if (!extra.empty()) {
    out += ' ';
    out.append(extra);
  }
  out.append("\r\n");
}

}  // namespace mcring::protocol
