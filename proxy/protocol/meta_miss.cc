// metaMissReply, metaNotAppliedReply: an mg miss, a write not applied, in the client's format.
#include "proxy/protocol/meta_miss.h"

#include <algorithm>

namespace mcring::protocol {
namespace {

// Calls fn(token) for each space-separated token (each token's first byte is its flag).
template <typename Fn>
void forEachFlag(std::string_view flags, Fn fn) {
  size_t pos = 0;
  while (pos < flags.size()) {
    size_t end = std::min(flags.find_first_of(" \r\n", pos), flags.size());
    if (end > pos) {
      fn(flags.substr(pos, end - pos));
    }
    pos = end + 1;
  }
}

// `code`, then the k and O flags' traces in request order.
std::string replyWithFlags(std::string_view code, std::string_view key, std::string_view flags) {
  bool base64 = false;
  forEachFlag(flags, [&](std::string_view t) { base64 = base64 || t[0] == 'b'; });
  std::string out(code);
  forEachFlag(flags, [&](std::string_view t) {
    if (t[0] == 'k') {
      out += " k";
      out.append(key);
      if (base64) {
        out += " b";
      }
    } else if (t[0] == 'O') {
      out += ' ';
      out.append(t);
    }
  });
  out += "\r\n";
  return out;
}

}  // namespace

std::string metaMissReply(std::string_view key, std::string_view flags) {
  bool quiet = false;
  forEachFlag(flags, [&](std::string_view t) { quiet = quiet || t[0] == 'q'; });
  if (quiet) {
    return {};
  }
  return replyWithFlags("EN", key, flags);
}

std::string metaNotAppliedReply(std::string_view code, std::string_view key,
                                std::string_view flags) {
  return replyWithFlags(code, key, flags);
}

}  // namespace mcring::protocol
