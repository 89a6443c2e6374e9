// Incremental, transactional parser of backend replies (memcached text protocol).
//
// Frames one reply unit at a time: a line, and for VALUE / VA its data block. The proxy asks it
// what the next unit is and forwards the bytes; it never copies a value. Consumes nothing.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/reply.h"
#include "proxy/protocol/request_parser.h"

namespace mcring::protocol {

class ReplyParser {
 public:
  // Longest reply line accepted from a backend; longer means it is not speaking memcached.
  static constexpr uint32_t kMaxLine = 8192;

  // Parses the reply line at the front of `input`. Consumes nothing.
  //  - Ok: `reply` describes the line (line_length bytes); for Value/MetaValue a data block of
  //    reply.data_length bytes follows, which may not have arrived yet: the caller waits for
  //    line_length + data_length bytes and checks the block ends in "\r\n"
  //    (dataBlockTerminatorOk) before forwarding.
  //  - Incomplete: no whole line yet.
  //  - Invalid: not a memcached reply (unknown token, bad VALUE line, line too long): the backend
  //    is desynchronised and must be reset.
  ParseStatus parse(std::string_view input, Reply& reply) const;
};

// Whole-unit framing over one contiguous buffer (tests, fuzzing, the load generator): like
// parse(), but Incomplete until the data block has arrived too, and Invalid if the block's
// terminator is wrong. On Ok, *consumed = reply.totalLength().
ParseStatus frameReply(const ReplyParser& parser, std::string_view input, Reply& reply,
                       uint64_t* consumed);

}  // namespace mcring::protocol
