// Frames client requests out of a byte stream: the one framer the proxy, the unit tests, the
// fragmentation harness, the fuzzers and the benchmarks all run.
//
// An incremental state machine over a ByteSource. It never consumes bytes itself: each frame
// tells the caller how many bytes at the front to forward or drop, and the caller must do so
// before asking for the next frame. What it remembers between calls: how far it already searched
// for a line end (so a slowly arriving line is scanned once), and how much of a rejected data
// block is still to be discarded as it arrives.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/request.h"
#include "proxy/protocol/request_parser.h"

namespace mcring::protocol {

enum class RequestFrameKind : uint8_t {
  // Nothing whole yet. `length` is the size of the whole request being received when its line
  // has arrived (line + data block), else 0: what a session must be ready to hold.
  NeedMore,
  // A valid request of `length` bytes (command line, then its data block if it has one).
  Request,
  // A rejected request: reply with requestErrorText(req.error) unless req.noreply; drop `length`
  // bytes now (more bytes of it follow as Discard frames). If req.close, framing is lost:
  // `length` is 0, nothing more is to be read, and the client is closed after the reply.
  Rejected,
  // `length` bytes at the front are the rest of a rejected data block: drop them.
  Discard,
};

struct RequestFrame {
  RequestFrameKind kind = RequestFrameKind::NeedMore;
  uint64_t length = 0;
  // Request and Rejected: the command line with its terminator (empty for a line too long to
  // have one). A view into the source, valid until it changes.
  std::string_view line;
};

class RequestFramer {
 public:
  explicit RequestFramer(const RequestParser& parser) : parser_(&parser) {}

  // The next frame at the front of `in`; fills `req` for Request and Rejected frames.
  RequestFrame next(ByteSource& in, Request& req);
  // Bytes of a rejected data block still to be discarded as they arrive.
  uint64_t discardPending() const { return discard_; }
  // The parser (and so the limits) changes on a reload; the state stays.
  void setParser(const RequestParser& parser) { parser_ = &parser; }

 private:
  RequestFrame request(ByteSource& in, std::string_view head, std::string_view line, Request& req);

  const RequestParser* parser_;
  size_t scanned_ = 0;    // bytes at the front already searched for "\n" without success
  uint64_t discard_ = 0;  // rejected data block bytes not yet arrived
};

}  // namespace mcring::protocol
