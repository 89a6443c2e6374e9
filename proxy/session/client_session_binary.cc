// ClientSession's binary-protocol side: a connection whose first byte is 0x80 has its packets
// framed by protocol::BinaryFramer, each translated to a meta command (binary_translation.h)
// that goes through the same dispatch, FIFO and backend connections as a text client's, and
// each reply translated back to a binary response when it is written, in request order.
//
// A packet's value is moved from the client's input into the meta request's data block (chunks
// of 8 KiB or more without copying), so a binary set costs what a text one does. A reply is one
// meta unit, whole when it arrives: at the FIFO head it streams as a text reply does (translated
// in streamReply, so a client that reads slowly pauses its backend connection instead of having
// its replies refused); behind the head it is held and translated when written.
#include "proxy/common/log.h"
#include "proxy/protocol/binary_packet.h"
#include "proxy/session/client_session.h"

namespace mcring::core {

using protocol::BinaryFrameKind;
using protocol::BinaryOpcode;
using protocol::Command;

bool ClientSession::processBinaryPacket(net::Buffer& in) {
  const protocol::BinaryFrame frame = binary_framer_.next(in, binary_req_);
  switch (frame.kind) {
    case BinaryFrameKind::NeedMore:
      wantInput(frame.length);
      return false;
    case BinaryFrameKind::Discard:
      in.drain(frame.length);
      return true;
    case BinaryFrameKind::Rejected:
      in.drain(frame.length);
      rejectBinary();
      return true;
    case BinaryFrameKind::Request:
      break;
  }
  stats::bump(worker_.counters().bytes_read, frame.length);
  countClientRequest(frame.length);
  dispatchBinary(in, frame.length);
  if (input_reserved_ > 0) {
    releaseInput();
  }
  return true;
}

void ClientSession::dispatchBinary(net::Buffer& in, uint64_t length) {
  const protocol::BinaryRequest& req = binary_req_;
  protocol::translateBinaryRequest(req, binary_translation_);
  const protocol::BinaryTranslation& t = binary_translation_;
  if (t.local) {
    in.drain(length);
    PendingRequest* r = newRequest(Command::MetaNoop);
    if (t.close) {
      r->close_after = true;
      closing_ = true;  // quit: nothing after it is read
    }
    completeWith(r, t.reply);
    return;
  }
  // The meta request: its line, then the value moved from the client's input.
  in.drain(length - req.value_length);
  meta_input_.append(t.line);
  if (t.has_value) {
    in.moveTo(meta_input_, req.value_length);
    meta_input_.append("\r\n");
  }
  binary_pending_.active = true;
  binary_pending_.opcode = req.header.opcode;
  binary_pending_.opaque = req.header.opaque;
  binary_pending_.key = req.key;
  dispatch_input_ = &meta_input_;
  // Framed as a text client's request would be, so every limit and check applies alike.
  protocol::RequestFramer framer(pool_->parser);
  const protocol::RequestFrame frame = framer.next(meta_input_, meta_req_);
  if (frame.kind == protocol::RequestFrameKind::Request) {
    routeByBinaryKey(t, req);
    dispatcher_.dispatch(*this, *pool_, meta_req_, frame.line);
  } else {
    // The translation keeps within the limits the binary framer checked; a refusal here is
    // answered with its text error, translated.
    MCRING_LOG_LIMITED(Warn, "binary translation",
                       "client %llu: binary opcode 0x%02x translated to a refused line",
                       static_cast<unsigned long long>(id_), req.header.opcode);
    rejectRequest(meta_req_);
  }
  dispatch_input_ = nullptr;
  binary_pending_.active = false;
  meta_input_.drain(meta_input_.size());
}

void ClientSession::routeByBinaryKey(const protocol::BinaryTranslation& t,
                                     const protocol::BinaryRequest& req) {
  // A base64 key is routed decoded, i.e. by the key's own bytes; a stand-in's decoded bytes are
  // a digest, so the key itself is put there: it goes where the same key from any client goes.
  if (t.key_form == protocol::BinaryKeyForm::StandIn) {
    meta_req_.decoded_key.assign(req.key);
  }
}

void ClientSession::rejectBinary() {
  const protocol::BinaryRequest& req = binary_req_;
  stats::bump(worker_.counters().client_errors);
  if (req.error == protocol::BinaryStatus::TooLarge &&
      (req.opcode() == BinaryOpcode::Set || req.opcode() == BinaryOpcode::SetQ)) {
    // As memcached does (and as for a text set): the old value goes, so no stale value survives
    // a write the client believes failed.
    protocol::BinaryRequest del;
    del.header.opcode = static_cast<uint8_t>(BinaryOpcode::Delete);
    del.key = req.key;
    protocol::translateBinaryRequest(del, binary_translation_);
    if (!binary_translation_.local &&
        pool_->parser.parse(binary_translation_.line, meta_req_) == protocol::ParseStatus::Ok) {
      routeByBinaryKey(binary_translation_, del);
      dispatcher_.invalidateTooLarge(*this, *pool_, meta_req_, binary_translation_.line);
    }
  }
  PendingRequest* r = newRequest(Command::MetaNoop);
  std::string reply;
  if (!req.silent) {
    protocol::appendBinaryError(reply, req.header.opcode, req.error, req.header.opaque);
  }
  if (req.close) {
    // Framing is lost (or memcached closes here): nothing more is read.
    r->close_after = true;
    closing_ = true;
    MCRING_LOG_LIMITED(Info, "binary malformed",
                       "client %llu: malformed binary packet (opcode 0x%02x, status 0x%02x), "
                       "closing",
                       static_cast<unsigned long long>(id_), req.header.opcode,
                       static_cast<unsigned>(req.error));
  }
  completeWith(r, reply);
}

void ClientSession::writeReply(PendingRequest& r, net::Buffer& out) {
  net::Buffer& reply = r.reply;
  if (!r.binary.active) {
    reply.moveAllTo(out);
    return;
  }
  if (r.streaming && reply.empty()) {
    return;  // its response went out as its reply arrived (streamReply)
  }
  if (r.binary.opcode == static_cast<uint8_t>(BinaryOpcode::Stat)) {
    std::string packets;
    protocol::translateStatsReply(r.binary, reply.contiguous(reply.size()), packets);
    reply.drain(reply.size());
    out.append(packets);
    return;
  }
  writeBinaryUnit(r.binary, reply, reply.size(), out);
}

void ClientSession::writeBinaryUnit(const protocol::BinaryContext& ctx, net::Buffer& from,
                                    uint64_t n, net::Buffer& out) {
  const size_t nl = from.findNewline(0, n);
  const size_t line_end = nl == net::Buffer::npos ? n : nl + 1;
  // The line and, for incr/decr, the short data block after it.
  const std::string_view head = from.contiguous(std::min<size_t>(n, line_end + 64));
  protocol::translateBackendReply(ctx, head.substr(0, line_end), head.substr(line_end),
                                  binary_response_);
  out.append(binary_response_.head);
  from.drain(line_end);
  uint64_t left = n - line_end;
  if (binary_response_.value_follows) {
    const uint64_t value = std::min(binary_response_.value_length, left);
    from.moveTo(out, value);
    left -= value;
  }
  from.drain(left);
}

}  // namespace mcring::core
