#include "proxy/protocol/meta_set_line.h"

#include <charconv>

#include "proxy/protocol/request_writer.h"

namespace mcring::protocol {

void appendMetaSetLine(std::string& out, std::string_view key, size_t length,
                       std::string_view flags, std::string_view ttl, std::string_view extra) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), length).ptr;
  RequestWriter ms(out);
  ms.verb(Command::MetaSet)
      .arg(key)
      .arg(std::string_view(digits, static_cast<size_t>(end - digits)))
      .flag('F', flags)
      .flag('T', ttl);
  if (!extra.empty()) {
    ms.arg(extra);
  }
  ms.end();
}

}  // namespace mcring::protocol
