// ReplyFramer: line search, the line limit and data block checks over a ByteSource.
#include "proxy/protocol/reply_framer.h"

namespace mcring::protocol {

ReplyFrame ReplyFramer::next(ByteSource& in, Reply& reply) {
  // The unit's line within the source's contiguous front: found with no call into the source
  // per byte or line (most units of a socket read; bench/results/perf-profile.md). The same
  // first '\n' the search below would find, so both paths frame alike.
  const std::string_view head = in.front();
  if (const size_t nl = StringSource(head).findNewline(scanned_, ReplyParser::kMaxLine);
      nl != ByteSource::npos) {
    return unit(in, head, head.substr(0, nl + 1), reply);
  }
  const size_t avail = in.size();
  if (avail == 0) {
    return {};
  }
  const size_t nl = in.findNewline(scanned_, ReplyParser::kMaxLine);
  if (nl == ByteSource::npos) {
    if (avail >= ReplyParser::kMaxLine) {
      scanned_ = 0;
      return {ReplyFrameKind::Invalid, 0, {}};
    }
    scanned_ = avail;
    return {};
  }
  // contiguous() may rearrange the chunks, so `head` is stale: the block is checked by byteAt.
  return unit(in, {}, in.contiguous(nl + 1), reply);
}

// The unit whose line (with its "\n") is `line`, at the front of `in`; `head` is in's current
// contiguous front, or empty.
ReplyFrame ReplyFramer::unit(ByteSource& in, std::string_view head, std::string_view line,
                             Reply& reply) {
  scanned_ = 0;
  if (parser_.parse(line, reply) != ParseStatus::Ok) {
    return {ReplyFrameKind::Invalid, 0, {}};
  }
  const uint64_t total = reply.totalLength();
  if (reply.data_length > 0) {
    if (total <= head.size()) {
      if (!dataBlockTerminatorOk(head[total - 2], head[total - 1])) {
        return {ReplyFrameKind::Invalid, 0, {}};
      }
    } else if (in.size() < total) {
      return {ReplyFrameKind::NeedMore, total, {}};
    } else if (!dataBlockTerminatorOk(in.byteAt(total - 2), in.byteAt(total - 1))) {
      return {ReplyFrameKind::Invalid, 0, {}};
    }
  }
  return {ReplyFrameKind::Unit, total, line};
}

}  // namespace mcring::protocol
