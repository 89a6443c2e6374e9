// libFuzzer target: RequestParser on arbitrary bytes. Checks invariants, not just crashes: spans
// inside the line, validated keys, and that any fragmentation frames exactly like the whole.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/protocol/request_parser.h"
#include "tests/unit/protocol/fragment_harness.h"

namespace {

using mcring::protocol::CommandClass;
using mcring::protocol::ParserLimits;
using mcring::protocol::ParseStatus;
using mcring::protocol::Request;
using mcring::protocol::RequestParser;
using mcring::protocol::Span;

void require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool within(const Span& s, uint32_t line_length) {
  return uint64_t{s.offset} + s.length <= line_length;
}

void checkOne(const RequestParser& parser, std::string_view input) {
  Request req;
  const ParseStatus status = parser.parse(input, req);
  if (status == ParseStatus::Incomplete) {
    require(input.size() <= parser.limits().max_retrieval_line + 1);
    return;
  }
  if (req.close) {
    // A line too long: nothing of it consumed. A whole line memcached hangs up on (its last
    // token starts with HTTP/): that line.
    require(status == ParseStatus::Invalid);
    if (req.error == mcring::protocol::RequestError::HttpRequestLine) {
      require(req.line_length >= 1 && req.line_length <= input.size() &&
              input[req.line_length - 1] == '\n');
    } else {
      require(req.line_length == 0);
    }
    return;
  }
  const ParserLimits& limits = parser.limits();
  require(req.line_length >= 1 && req.line_length <= input.size());
  require(input[req.line_length - 1] == '\n');
  const std::string_view line = input.substr(0, req.line_length);
  // Transactional: the line alone parses the same, one byte less is Incomplete.
  Request again;
  require(parser.parse(line, again) == status);
  require(again.error == req.error && again.keys.size() == req.keys.size() &&
          again.line_length == req.line_length && again.value_length == req.value_length);
  require(parser.parse(line.substr(0, line.size() - 1), again) == ParseStatus::Incomplete);
  require(within(req.args, req.line_length) && within(req.exptime, req.line_length));
  if (req.noreply && !req.noreply_token.empty()) {
    require(within(req.noreply_token, req.line_length) && line[req.noreply_token.offset] == ' ');
  }
  if (status == ParseStatus::Invalid) {
    require(!req.has_data);
    return;
  }
  const CommandClass cls = mcring::protocol::commandClass(req.command);
  if (cls == CommandClass::Retrieval) {
    require(!req.keys.empty() && req.keys.size() <= limits.max_keys);
  } else if (cls == CommandClass::Storage || cls == CommandClass::Keyed ||
             cls == CommandClass::Meta) {
    require(req.keys.size() == 1);
  } else {
    require(req.keys.empty());
  }
  for (const Span& key : req.keys) {
    require(within(key, req.line_length) && !key.empty() && key.length <= limits.max_key_length);
    for (const char c : key.in(line)) {
      require(c != ' ' && c != '\n' && c != '\0');  // separators and the line's end
    }
  }
  if (req.key_base64) {
    require(!req.decoded_key.empty() && req.decoded_key.size() <= req.keys[0].length);
  }
  require(req.has_data ==
          (cls == CommandClass::Storage || req.command == mcring::protocol::Command::MetaSet));
  if (req.has_data) {
    require(req.value_length <= limits.item_size_max);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcring::protocol::testing;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  static const RequestParser default_parser;
  // Small limits reach the limit paths (long lines, big values, many keys) with small inputs.
  static const RequestParser small_parser([] {
    ParserLimits l;
    l.max_line = 48;
    l.max_retrieval_line = 160;
    l.item_size_max = 64;
    l.max_keys = 4;
    l.max_key_length = 12;
    return l;
  }());
  for (const RequestParser* parser : {&default_parser, &small_parser}) {
    checkOne(*parser, input);
    const auto whole = feedRequests(*parser, input, {size});
    // A split derived from the input, bytes one at a time, and small chunks.
    const size_t at = size > 1 ? (data[0] * 131u + data[size - 1]) % size : 0;
    require(feedRequests(*parser, input, splitAt(size, at)) == whole);
    if (size <= 512) {
      require(feedRequests(*parser, input, chunksOf(size, 1)) == whole);
    }
    require(feedRequests(*parser, input, chunksOf(size, 7)) == whole);
  }
  return 0;
}
