// RequestFramer: line search, limits, data blocks and discards over a ByteSource.
#include "proxy/protocol/request_framer.h"

#include <algorithm>

namespace mcring::protocol {

RequestFrame RequestFramer::next(ByteSource& in, Request& req) {
  if (discard_ > 0) {
    const uint64_t n = std::min<uint64_t>(discard_, in.size());
    discard_ -= n;
    return n == 0 ? RequestFrame{} : RequestFrame{RequestFrameKind::Discard, n, {}};
  }
  const ParserLimits& limits = parser_->limits();
  const size_t long_limit = std::max(limits.max_line, limits.max_retrieval_line);
  // The line within the source's contiguous front, found in place (the common case); the same
  // first '\n' the search below would find.
  const std::string_view head = in.front();
  if (const size_t nl = StringSource(head).findNewline(scanned_, long_limit + 1);
      nl != ByteSource::npos) {
    return request(in, head, head.substr(0, nl + 1), req);
  }
  const size_t avail = in.size();
  if (avail == 0) {
    return {};
  }
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
  // contiguous() may rearrange the chunks, so `head` is stale: the block is checked by byteAt.
  return request(in, {}, in.contiguous(nl + 1), req);
}

// The request whose line (with its "\n") is `line`, at the front of `in`; `head` is in's current
// contiguous front, or empty.
RequestFrame RequestFramer::request(ByteSource& in, std::string_view head, std::string_view line,
                                    Request& req) {
  scanned_ = 0;
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
  bool terminated;
  if (total <= head.size()) {
    terminated = dataBlockTerminatorOk(head[total - 2], head[total - 1]);
  } else if (in.size() < total) {
    // The line will be parsed again when the block is here (cheap, and nothing to remember).
    return {RequestFrameKind::NeedMore, total, {}};
  } else {
    terminated = dataBlockTerminatorOk(in.byteAt(total - 2), in.byteAt(total - 1));
  }
  // A data request's line is the whole of `line` (line_length is its size).
  if (!terminated) {
    // memcached reads value + 2 bytes, then checks them; the error obeys classic noreply but
    // not meta q.
    req.error = RequestError::BadDataChunk;
    req.has_data = false;
    req.swallow_length = req.value_length + 2;  // already part of this frame's length
    if (commandClass(req.command) == CommandClass::Meta) {
      req.noreply = false;
      req.noreply_token = Span{};
    }
    return {RequestFrameKind::Rejected, total, line};
  }
  return {RequestFrameKind::Request, total, line};
}

}  // namespace mcring::protocol
