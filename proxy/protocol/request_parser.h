// Incremental, transactional parser of client requests in the memcached text protocol.
//
// Pure code over bytes: no sockets, no allocation once the Request's key vector has grown, never
// copies a value. Transactional: parse() consumes nothing; given a prefix it answers Incomplete,
// and the caller calls again with more bytes, so a request split at any byte boundary parses the
// same as whole.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/request.h"

namespace mcring::protocol {

enum class ParseStatus : uint8_t { Ok, Incomplete, Invalid };

struct ParserLimits {
  // A command line without "\n" within this many bytes closes the client (memcached: 2048).
  uint32_t max_line = 2048;
  // Except retrieval lines (get/gets/gat/gats with many keys), allowed up to this.
  uint32_t max_retrieval_line = 1024 * 1024;
  // Largest value accepted (memcached -I, twemproxy's item size); larger is swallowed and
  // answered "SERVER_ERROR object too large for cache".
  uint64_t item_size_max = 1024 * 1024;
  // Most keys in one retrieval command; more is "CLIENT_ERROR too many keys".
  uint32_t max_keys = 100000;
  // Longest key (memcached: 250).
  uint32_t max_key_length = 250;
};

class RequestParser {
 public:
  explicit RequestParser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses the request at the front of `input` (the contiguous bytes the caller has; it may hold
  // several requests, or a prefix of one). Consumes nothing.
  //  - Ok: `req` describes one whole command line of req.line_length bytes. If req.has_data, a
  //    data block of req.value_length + 2 bytes follows; it may not have arrived yet, and its
  //    terminator is checked by the caller (dataBlockTerminatorOk) once it has.
  //  - Incomplete: no whole line yet and no limit exceeded; call again with more bytes.
  //  - Invalid: req.error says why; req.line_length bytes of line, then req.swallow_length bytes
  //    are to be discarded; if req.close, the client must be closed after the error reply.
  //    line_length is 0 when req.close is set and no line terminator was seen.
  ParseStatus parse(std::string_view input, Request& req) const;
  // The input holds `buffered` bytes and no "\n" in them (within max_retrieval_line + 1); `head`
  // is its first bytes (128 are enough). Incomplete while a line may still end in time,
  // Invalid (LineTooLong, close) once it cannot: more than max_line bytes, unless the line is a
  // retrieval line (after at most 100 spaces), which may reach max_retrieval_line.
  ParseStatus parseUnterminated(std::string_view head, uint64_t buffered, Request& req) const;

  const ParserLimits& limits() const { return limits_; }

 private:
  ParserLimits limits_;
};

// The two bytes that end a data block must be "\r\n"; otherwise the request is answered
// "CLIENT_ERROR bad data chunk" and the whole line + value + 2 bytes are discarded (memcached).
inline bool dataBlockTerminatorOk(char a, char b) {
  return a == '\r' && b == '\n';
}

// Whole-request framing over one contiguous buffer (tests, fuzzing, the load generator): parse()
// and, for requests with data, also waits for the whole data block and checks its terminator.
//  - Ok: one whole valid request; *consumed = line + data block bytes.
//  - Incomplete: more bytes are needed.
//  - Invalid: req.error says why; *consumed = the bytes to discard (line + swallow_length, or
//    line + value + 2 for BadDataChunk); it may exceed input.size() when a rejected data block
//    has not fully arrived: the caller discards the rest as it comes.
ParseStatus frameRequest(const RequestParser& parser, std::string_view input, Request& req,
                         uint64_t* consumed);

}  // namespace mcring::protocol
