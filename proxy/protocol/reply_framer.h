// Frames backend replies out of a byte stream, one unit at a time (a line, and for VALUE / VA its
// data block): the one framer the proxy's backend connections, the tests, the fuzzers and the
// load generator run.
//
// Like RequestFramer it consumes nothing: a Unit frame tells the caller how many bytes at the
// front are the unit, to forward or drop before asking for the next one.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/reply.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::protocol {

enum class ReplyFrameKind : uint8_t {
  // No whole unit yet. `length` is the whole unit's size once its line has arrived, else 0.
  NeedMore,
  // One whole unit of `length` bytes, its data block's terminator checked.
  Unit,
  // Not memcached's protocol (unknown line, line too long, bad data block terminator): the
  // connection has lost its framing and must be reset.
  Invalid,
};

struct ReplyFrame {
  ReplyFrameKind kind = ReplyFrameKind::NeedMore;
  uint64_t length = 0;
  // Unit: the reply line with its "\r\n"; a view into the source, valid until it changes.
  std::string_view line;
};

class ReplyFramer {
 public:
  ReplyFrame next(ByteSource& in, Reply& reply);

 private:
  ReplyFrame unit(ByteSource& in, std::string_view head, std::string_view line, Reply& reply);

  ReplyParser parser_;
  size_t scanned_ = 0;  // bytes at the front already searched for "\n" without success
};

}  // namespace mcring::protocol
