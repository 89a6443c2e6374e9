// RequestFramer: line search, limits, data blocks and discards over a ByteSource.
#include "proxy/protocol/request_framer.h"

#include <algorithm>

namespace mcring::protocol {

RequestFrame RequestFramer::next(ByteSource& in, Request& req) {
  const size_t avail = in.size();
  if (discard_ > 0) {
    const uint64_t n = std::min<uint64_t>(discard_, avail);
    discard_ -= n;
    return n == 0 ? RequestFrame{} : RequestFrame{RequestFrameKind::Discard, n, {}};
  }
  if (avail == 0) {
    return {};
  }
  const ParserLimits& limits = parser_->limits();
  const size_t long_limit = std::max(limits.max_line, limits.max_retrieval_line);
  const size_t nl = in.findNewline(scanned_, long_limit + 1);
  if (nl == ByteSource::npos) {
    scanned_ = avail;
    if (parser_->parseUnterminated(in.contiguous(std::min<size_t>(avail, 128)), avail, req) ==
        ParseStatus::Incomplete) {
      return {};
    }
    // Framing is lost: the client is closed after the reply, nothing more of it is read.
    scanned_ = 0;
    return {RequestFrameKind::Rejected, 0, {}};
  }
  scanned_ = 0;
  const std::string_view line = in.contiguous(nl + 1);
  ParseStatus status = parser_->parse(line, req);
  if (status == ParseStatus::Incomplete) {
    // A whole line is here, so this is the parser refusing to decide: treat as malformed.
    req.error = RequestError::BadCommandLine;
    req.line_length = static_cast<uint32_t>(line.size());
    req.swallow_length = 0;
    req.close = false;
    status = ParseStatus::Invalid;
  }
  if (status == ParseStatus::Invalid) {
    // line_length is 0 for a line too long (req.close): nothing more of the client is read.
    discard_ = req.swallow_length;
    return {RequestFrameKind::Rejected, req.line_length, line};
  }
  if (!req.has_data) {
    return {RequestFrameKind::Request, req.line_length, line};
  }
  const uint64_t total = req.line_length + req.value_length + 2;
  if (avail < total) {
    // The line will be parsed again when the block is here (cheap, and nothing to remember).
    return {RequestFrameKind::NeedMore, total, {}};
  }
  if (!dataBlockTerminatorOk(in.byteAt(total - 2), in.byteAt(total - 1))) {
    // memcached reads value + 2 bytes, then checks them; the error obeys classic noreply but
    // not meta q.
    req.error = RequestError::BadDataChunk;
    req.has_data = false;
    req.swallow_length = req.value_length + 2;  // already part of this frame's length
    if (commandClass(req.command) == CommandClass::Meta) {
      req.noreply = false;
      req.noreply_token = Span{};
    }
    return {RequestFrameKind::Rejected, total, in.contiguous(req.line_length)};
  }
  return {RequestFrameKind::Request, total, in.contiguous(req.line_length)};
}

}  // namespace mcring::protocol
