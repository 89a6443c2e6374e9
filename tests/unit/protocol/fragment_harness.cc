// Accumulate-and-reparse drivers for the protocol parsers, and text descriptions of their results.
#include "fragment_harness.h"

#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/reply_framer.h"
#include "proxy/protocol/request_framer.h"

#include <algorithm>
#include <cstdio>

namespace mcring::protocol::testing {
namespace {

const char* replyKindName(ReplyKind kind) {
  switch (kind) {
#define MCRING_X(id, token) \
  case ReplyKind::id:       \
    return #id;
    MCRING_REPLY_KINDS(MCRING_X)
#undef MCRING_X
  }
  return "?";
}

bool describesArgs(Command c) {
  const CommandClass cls = commandClass(c);
  return cls == CommandClass::Local || cls == CommandClass::Broadcast ||
         cls == CommandClass::MetaNoop || cls == CommandClass::Meta;
}

// The stream buffer as a socket buffer holds it: its contiguous front ends where the first piece
// still buffered ends (a chunk per arrival), so a framer takes its in-place path for units within
// that piece and its chunked path for units that span pieces.
class PieceSource final : public ByteSource {
 public:
  PieceSource(std::string_view bytes, size_t front_end)
      : bytes_(bytes), front_end_(front_end < bytes.size() ? front_end : bytes.size()) {}
  size_t size() const override { return bytes_.size(); }
  size_t findNewline(size_t from, size_t limit) const override {
    return bytes_.findNewline(from, limit);
  }
  std::string_view contiguous(size_t n) override { return bytes_.contiguous(n); }
  char byteAt(size_t pos) const override { return bytes_.byteAt(pos); }
  std::string_view front() const override { return bytes_.front().substr(0, front_end_); }

 private:
  StringSource bytes_;
  size_t front_end_;
};

// Where the first piece still buffered ends, relative to the buffer's start `base` (an offset in
// the whole input).
size_t firstPieceEnd(const std::vector<size_t>& cuts, size_t base) {
  for (const size_t cut : cuts) {
    if (cut > base) {
      return cut - base;
    }
  }
  return 0;
}

}  // namespace

std::string escape(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b >= 0x7f || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string describeRequest(ParseStatus status, const Request& req, std::string_view input,
                            uint64_t consumed) {
  const std::string len = " len=" + std::to_string(consumed);
  if (status == ParseStatus::Invalid) {
    std::string s = "!";
    if (req.error != RequestError::UnknownCommand && req.error != RequestError::LineTooLong &&
        req.error != RequestError::HttpRequestLine) {
      s += std::string(commandName(req.command)) + " ";
    }
    s += std::string(requestErrorName(req.error));
    if (req.noreply) {
      s += " noreply";
    }
    if (req.close) {
      s += " close";
    }
    if (req.swallow_length > 0) {
      s += " swallow=" + std::to_string(req.swallow_length);
    }
    return s + len;
  }
  const std::string_view line = input.substr(0, req.line_length);
  std::string s(commandName(req.command));
  if (!req.exptime.empty()) {
    s += " exptime=" + escape(req.exptime.in(line));
  }
  if (!req.keys.empty()) {
    s += " keys=";
    for (size_t i = 0; i < req.keys.size(); ++i) {
      s += (i > 0 ? "," : "") + escape(req.keys[i].in(line));
    }
  }
  if (req.key_base64) {
    s += " decoded=" + escape(req.routingKey(line, 0));
  }
  if (req.has_data) {
    s += " data=" + std::to_string(req.value_length);
  }
  if (req.noreply) {
    s += " noreply=[" + escape(req.noreply_token.in(line)) + "]";
  }
  if (describesArgs(req.command)) {
    s += " args=[" + escape(req.args.in(line)) + "]";
  }
  return s + len;
}

std::string describeReply(ParseStatus status, const Reply& reply, std::string_view input,
                          uint64_t consumed) {
  if (status == ParseStatus::Invalid) {
    return "!invalid";
  }
  std::string s = replyKindName(reply.kind);
  if (reply.kind == ReplyKind::Value) {
    s += " key=" + escape(reply.key.in(input.substr(0, reply.line_length)));
  }
  if (reply.data_length > 0) {
    s += " data=" + std::to_string(reply.data_length);
  }
  return s + " len=" + std::to_string(consumed);
}

std::vector<size_t> chunksOf(size_t input_size, size_t chunk) {
  std::vector<size_t> cuts;
  for (size_t at = chunk; at < input_size; at += chunk) {
    cuts.push_back(at);
  }
  cuts.push_back(input_size);
  return cuts;
}

std::vector<size_t> splitAt(size_t input_size, size_t at) {
  if (at == 0 || at >= input_size) {
    return {input_size};
  }
  return {at, input_size};
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) {
    out += line;
    out += '\n';
  }
  return out;
}

std::vector<std::vector<size_t>> allFragmentations(size_t input_size) {
  std::vector<std::vector<size_t>> all;
  all.push_back({input_size});
  for (size_t at = 1; at < input_size; ++at) {
    all.push_back(splitAt(input_size, at));
  }
  for (const size_t chunk : {1, 2, 5, 10, 100}) {
    all.push_back(chunksOf(input_size, chunk));
  }
  return all;
}

// The proxy's way: one RequestFramer for the whole stream, over a buffer that grows as pieces
// arrive and shrinks by what each frame says to forward or drop.
std::vector<std::string> feedRequests(const RequestParser& parser, std::string_view input,
                                      const std::vector<size_t>& cuts) {
  Request req;
  RequestFramer framer(parser);
  std::string buffer;
  std::vector<std::string> out;
  size_t from = 0;
  size_t base = 0;  // offset in `input` of buffer's first byte
  bool stopped = false;
  for (const size_t to : cuts) {
    buffer.append(input.substr(from, to - from));
    from = to;
    while (!stopped) {
      PieceSource source(buffer, firstPieceEnd(cuts, base));
      const RequestFrame frame = framer.next(source, req);
      if (frame.kind == RequestFrameKind::NeedMore) {
        break;
      }
      if (frame.kind != RequestFrameKind::Discard) {
        const bool ok = frame.kind == RequestFrameKind::Request;
        const uint64_t consumed = frame.length + (ok ? 0 : framer.discardPending());
        out.push_back(describeRequest(ok ? ParseStatus::Ok : ParseStatus::Invalid, req, buffer,
                                      consumed));
        stopped = !ok && req.close;
      }
      buffer.erase(0, frame.length);
      base += frame.length;
    }
    if (stopped) {
      break;
    }
  }
  out.push_back("rest=" + std::to_string(stopped ? 0 : buffer.size()) +
                " discard=" + std::to_string(framer.discardPending()));
  return out;
}

// The backend connection's way: one ReplyFramer for the stream; a unit is dropped once framed.
std::vector<std::string> feedReplies(std::string_view input, const std::vector<size_t>& cuts) {
  Reply reply;
  ReplyFramer framer;
  std::string buffer;
  std::vector<std::string> out;
  size_t from = 0;
  size_t base = 0;  // offset in `input` of buffer's first byte
  bool stopped = false;
  for (const size_t to : cuts) {
    buffer.append(input.substr(from, to - from));
    from = to;
    while (!stopped) {
      PieceSource source(buffer, firstPieceEnd(cuts, base));
      const ReplyFrame frame = framer.next(source, reply);
      if (frame.kind == ReplyFrameKind::NeedMore) {
        break;
      }
      const bool ok = frame.kind == ReplyFrameKind::Unit;
      out.push_back(describeReply(ok ? ParseStatus::Ok : ParseStatus::Invalid, reply, buffer,
                                  frame.length));
      stopped = !ok;
      buffer.erase(0, frame.length);
      base += frame.length;
    }
    if (stopped) {
      break;
    }
  }
  out.push_back("rest=" + std::to_string(stopped ? 0 : buffer.size()) + " discard=0");
  return out;
}

}  // namespace mcring::protocol::testing
