// ReplyFramer: line search, the line limit and data block checks over a ByteSource.
#include "proxy/protocol/reply_framer.h"

namespace mcring::protocol {

ReplyFrame ReplyFramer::next(ByteSource& in, Reply& reply) {
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
  scanned_ = 0;
  const std::string_view line = in.contiguous(nl + 1);
  if (parser_.parse(line, reply) != ParseStatus::Ok) {
    return {ReplyFrameKind::Invalid, 0, {}};
  }
  const uint64_t total = reply.totalLength();
  if (reply.data_length > 0) {
    if (avail < total) {
      return {ReplyFrameKind::NeedMore, total, {}};
    }
    if (!dataBlockTerminatorOk(in.byteAt(total - 2), in.byteAt(total - 1))) {
      return {ReplyFrameKind::Invalid, 0, {}};
    }
  }
  return {ReplyFrameKind::Unit, total, line};
}

}  // namespace mcring::protocol
