// Frames binary-protocol requests out of a byte stream, checking each packet as memcached 1.6.18
// does (dispatch_bin_command): the incremental framer a binary client's session runs, and the unit
// tests and the fuzzer with it.
//
// Like RequestFramer it never consumes bytes: each frame says how many bytes at the front to take
// or drop, and the caller does so before asking again. What it remembers between calls: how much
// of a refused packet's body is still to be discarded as it arrives.
//
// memcached's answers to malformed packets, which the frames carry:
//  - a magic other than 0x80 after the first packet: the connection is closed, unanswered;
//  - key + extras longer than the body: "Unknown command", then closed;
//  - a key over 250 bytes, or lengths an opcode does not allow (a get with extras, a set without
//    its 8 bytes of flags and expiry...): "Invalid arguments", then closed;
//  - an opcode memcached does not serve (SASL without SASL support, verbosity, rget...):
//    "Unknown command", and its body is skipped;
//  - a set/add/replace/append/prepend value larger than item_size_max: "Too large.", and the
//    value is skipped as it arrives (never buffered).
#pragma once

#include <cstdint>
#include <string>

#include "proxy/protocol/binary_packet.h"
#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/request_parser.h"

namespace mcring::protocol {

// One framed binary request. Reused across requests (the framer overwrites it).
struct BinaryRequest {
  BinaryHeader header;
  std::string extras;  // copied (at most 20 bytes for the opcodes served)
  std::string key;     // copied (at most 250 bytes)
  // Storage opcodes: the value's bytes, after header, extras and key in the frame.
  uint64_t value_length = 0;
  // Rejected frames: memcached's status for it; close: reply (unless silent), then close.
  BinaryStatus error = BinaryStatus::Success;
  bool close = false;
  bool silent = false;  // closed without a reply (bad magic)
  BinaryOpcode opcode() const { return static_cast<BinaryOpcode>(header.opcode); }
};

enum class BinaryFrameKind : uint8_t {
  // Nothing whole yet; `length` is the size of the whole packet as far as it is known (0 before
  // the header is in): what the session must be ready to hold.
  NeedMore,
  // A valid request of `length` bytes: header, extras, key, then value_length value bytes.
  Request,
  // A refused request: answer req.error (unless req.silent); drop `length` bytes now, the rest
  // of its body follows as Discard frames. If req.close, `length` is 0 and nothing more is read.
  Rejected,
  // `length` bytes at the front are the rest of a refused body: drop them.
  Discard,
};

struct BinaryFrame {
  BinaryFrameKind kind = BinaryFrameKind::NeedMore;
  uint64_t length = 0;
};

class BinaryFramer {
 public:
  explicit BinaryFramer(const RequestParser& parser) : parser_(&parser) {}

  BinaryFrame next(ByteSource& in, BinaryRequest& req);
  uint64_t discardPending() const { return discard_; }
  // The limits (item_size_max, max_key_length) change on a reload.
  void setParser(const RequestParser& parser) { parser_ = &parser; }

 private:
  BinaryFrame reject(BinaryRequest& req, BinaryStatus status, bool close, uint64_t drop,
                     uint64_t discard);

  const RequestParser* parser_;
  uint64_t discard_ = 0;
};

}  // namespace mcring::protocol
