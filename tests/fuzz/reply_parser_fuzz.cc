// libFuzzer target: ReplyParser on arbitrary bytes. Checks that what it accepts is well formed
// and that any fragmentation frames exactly like the whole.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/protocol/reply_parser.h"
#include "tests/unit/protocol/fragment_harness.h"

namespace {

using mcring::protocol::ParseStatus;
using mcring::protocol::Reply;
using mcring::protocol::ReplyKind;
using mcring::protocol::ReplyParser;

void require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

void checkOne(std::string_view input) {
  const ReplyParser parser;
  Reply reply;
  const ParseStatus status = parser.parse(input, reply);
  if (status == ParseStatus::Incomplete) {
    require(input.size() < ReplyParser::kMaxLine && input.find('\n') == std::string_view::npos);
    return;
  }
  if (status == ParseStatus::Invalid) {
    return;
  }
  require(reply.line_length >= 2 && reply.line_length <= input.size() &&
          reply.line_length <= ReplyParser::kMaxLine);
  require(input[reply.line_length - 2] == '\r' && input[reply.line_length - 1] == '\n');
  const std::string_view line = input.substr(0, reply.line_length);
  require(line.find('\n') == reply.line_length - 1);
  const bool has_data = reply.kind == ReplyKind::Value || reply.kind == ReplyKind::MetaValue;
  require(has_data == (reply.data_length >= 2));
  require(has_data || reply.data_length == 0);
  if (reply.kind == ReplyKind::Value) {
    require(reply.key.offset == 6 && reply.key.length > 0 &&
            reply.key.offset + reply.key.length < reply.line_length);
  }
  // Transactional: one byte less is Incomplete, the line alone is the same reply.
  Reply again;
  require(parser.parse(line.substr(0, line.size() - 1), again) == ParseStatus::Incomplete);
  require(parser.parse(line, again) == ParseStatus::Ok && again.kind == reply.kind &&
          again.data_length == reply.data_length);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mcring::protocol::testing;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  checkOne(input);
  const auto whole = feedReplies(input, {size});
  const size_t at = size > 1 ? (data[0] * 131u + data[size - 1]) % size : 0;
  require(feedReplies(input, splitAt(size, at)) == whole);
  if (size <= 512) {
    require(feedReplies(input, chunksOf(size, 1)) == whole);
  }
  require(feedReplies(input, chunksOf(size, 7)) == whole);
  return 0;
}
