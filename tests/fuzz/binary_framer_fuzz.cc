// libFuzzer target: BinaryFramer and the translations on arbitrary bytes. Checks invariants, not
// just crashes: frames account for exactly the bytes of their packet, every fragmentation frames
// like the whole, and a translated request is one text line that the text parser accepts (a
// binary packet can never smuggle a second text command to a backend), and responses built from
// arbitrary replies are well-formed packets.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/binary_framer.h"
#include "proxy/protocol/binary_translation.h"
#include "proxy/protocol/request_parser.h"

namespace {

using namespace mcring::protocol;

void require(bool ok) {
  if (!ok) {
    std::abort();
  }
}

const RequestParser& parser() {
  static const RequestParser p{ParserLimits{.item_size_max = 4096}};
  return p;
}

// A response packet: its header's body length matches what follows.
void checkPacket(std::string_view p) {
  while (!p.empty()) {
    require(p.size() >= kBinaryHeaderSize);
    require(static_cast<uint8_t>(p[0]) == kBinaryResponseMagic);
    const BinaryHeader h = decodeBinaryHeader(p);
    require(uint64_t{h.key_length} + h.extras_length <= h.body_length);
    require(p.size() >= kBinaryHeaderSize + h.body_length);
    p.remove_prefix(kBinaryHeaderSize + h.body_length);
  }
}

void checkTranslation(const BinaryRequest& req, std::string_view reply) {
  BinaryTranslation t;
  translateBinaryRequest(req, t);
  if (t.local) {
    checkPacket(t.reply);
    return;
  }
  // One line, ended by its only "\n".
  require(t.line.size() >= 2 && t.line.substr(t.line.size() - 2) == "\r\n");
  require(t.line.find('\n') == t.line.size() - 1);
  require(t.line.find('\0') == std::string::npos);
  std::string whole = t.line;
  if (t.has_value) {
    whole.append(req.value_length, 'v');
    whole.append("\r\n");
  }
  Request text;
  uint64_t consumed = 0;
  const ParseStatus st = frameRequest(parser(), whole, text, &consumed);
  require(st == ParseStatus::Ok || st == ParseStatus::Invalid);
  if (st == ParseStatus::Ok) {
    require(consumed == whole.size());
    require(text.has_data == t.has_value);
  } else {
    // Only a stats group the text side refuses may fail to parse.
    require(req.opcode() == BinaryOpcode::Stat);
  }
  BinaryContext ctx;
  ctx.active = true;
  ctx.opcode = req.header.opcode;
  ctx.opaque = req.header.opaque;
  ctx.key = req.key;
  const size_t nl = reply.find('\n');
  const size_t end = nl == std::string_view::npos ? reply.size() : nl + 1;
  BinaryResponse r;
  translateBackendReply(ctx, reply.substr(0, end), reply.substr(end), r);
  if (!r.value_follows) {
    checkPacket(r.head);
  }
  std::string stats;
  translateStatsReply(ctx, reply, stats);
  checkPacket(stats);
}

// Frames `input` fed in pieces of `chunk` bytes; one line per frame.
std::vector<std::string> feed(std::string_view input, size_t chunk, std::string_view reply) {
  BinaryFramer framer(parser());
  BinaryRequest req;
  std::string buffered;
  std::vector<std::string> out;
  uint64_t discarded = 0;
  for (size_t at = 0; at < input.size() || at == 0;) {
    const size_t n = std::min(chunk, input.size() - at);
    buffered.append(input.substr(at, n));
    at += n;
    for (int guard = 0; guard < 100000; ++guard) {
      StringSource src(buffered);
      const BinaryFrame f = framer.next(src, req);
      if (f.kind == BinaryFrameKind::NeedMore) {
        require(f.length == 0 || f.length > buffered.size());
        break;
      }
      if (f.kind == BinaryFrameKind::Discard) {
        require(f.length > 0 && f.length <= buffered.size());
        discarded += f.length;
        buffered.erase(0, f.length);
        continue;
      }
      if (discarded > 0) {
        out.push_back("discard " + std::to_string(discarded));
        discarded = 0;
      }
      require(f.length <= buffered.size());
      const BinaryHeader& h = req.header;
      if (f.kind == BinaryFrameKind::Rejected) {
        out.push_back("rej " + std::to_string(h.opcode) + " " +
                      std::to_string(static_cast<unsigned>(req.error)) + " " +
                      std::to_string(req.close));
        if (req.close) {
          require(f.length == 0);
          return out;
        }
        buffered.erase(0, f.length);
        continue;
      }
      require(req.key.size() == h.key_length && req.extras.size() == h.extras_length);
      require(req.key.size() <= 250 && req.value_length <= parser().limits().item_size_max);
      require(f.length == kBinaryHeaderSize + h.extras_length + h.key_length + req.value_length);
      checkTranslation(req, reply);
      out.push_back("req " + std::to_string(h.opcode) + " " + std::to_string(f.length) + " " +
                    req.key);
      buffered.erase(0, f.length);
    }
    if (input.empty()) {
      break;
    }
  }
  if (discarded > 0) {
    out.push_back("discard " + std::to_string(discarded));
  }
  out.push_back("rest " + std::to_string(buffered.size()) + " " +
                std::to_string(framer.discardPending()));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) {
    return 0;
  }
  // First byte: fragmentation; then a backend reply to translate, up to a 0xff byte; the rest
  // is the client's stream.
  const size_t chunk = 1 + data[0] % 64;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t cut = rest.find('\xff');
  std::string_view reply = cut == std::string_view::npos ? std::string_view() : rest.substr(0, cut);
  std::string_view input = cut == std::string_view::npos ? rest : rest.substr(cut + 1);
  const auto whole = feed(input, input.size() + 1, reply);
  require(feed(input, chunk, reply) == whole);
  return 0;
}
