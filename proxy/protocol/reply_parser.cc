// Frames backend replies: one reply line, plus the data block of VALUE and VA, at a time.
#include "proxy/protocol/reply_parser.h"

#include <cstring>
#include <limits>

#include "proxy/protocol/reply_framer.h"

namespace mcring::protocol {
namespace {

// An unsigned decimal exactly as memcached prints one (itoa_u32/itoa_u64): digits only, no sign,
// no spaces, at most `max`. Anything else means the backend is not speaking memcached.
bool parseDigits(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) {
    return false;
  }
  // Below 10^9 no digit can overflow, so only longer numbers pay the check (a division per
  // digit; flags and lengths are short).
  const bool may_overflow = s.size() > 9;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') {
      return false;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (may_overflow && v > (max - d) / 10) {
      return false;
    }
    v = v * 10 + d;
  }
  if (v > max) {
    return false;
  }
  *out = v;
  return true;
}

// Splits `s` at single spaces into at most `max` tokens. memcached separates reply tokens with
// exactly one space, so an empty token (doubled or trailing space) or one token too many is a
// framing error: returns 0 then.
size_t splitTokens(std::string_view s, std::string_view* out, size_t max) {
  size_t n = 0;
  for (;;) {
    if (n == max) {
      return 0;
    }
    const size_t sp = s.find(' ');
    out[n] = s.substr(0, sp);
    if (out[n].empty()) {
      return 0;
    }
    ++n;
    if (sp == std::string_view::npos) {
      return n;
    }
    s.remove_prefix(sp + 1);
  }
}

// "VALUE <key> <flags> <bytes> [<cas>]", `rest` being what follows "VALUE ".
bool parseValueLine(std::string_view rest, Reply& reply) {
  std::string_view tok[4];
  const size_t n = splitTokens(rest, tok, 4);
  if (n < 3) {
    return false;
  }
  uint64_t v = 0;
  if (!parseDigits(tok[1], std::numeric_limits<uint32_t>::max(), &v)) {
    return false;
  }
  if (n == 4 && !parseDigits(tok[3], std::numeric_limits<uint64_t>::max(), &v)) {
    return false;
  }
  // memcached prints the length with itoa_u32; a larger one is garbage, not a huge value.
  if (!parseDigits(tok[2], std::numeric_limits<uint32_t>::max(), &v)) {
    return false;
  }
  reply.data_length = v + 2;
  reply.key = Span{6, static_cast<uint32_t>(tok[0].size())};  // 6 == strlen("VALUE ")
  return true;
}

// Lines that are a bare word, or a word and arguments (meta flags, error text).
enum class Args : uint8_t { None, Required, Optional };

struct Word {
  std::string_view token;
  ReplyKind kind;
  Args args;
};

// Roughly in order of frequency, so the common replies are found first.
constexpr Word kWords[] = {
    {"END", ReplyKind::End, Args::None},
    {"STORED", ReplyKind::Stored, Args::None},
    {"HD", ReplyKind::MetaHit, Args::Optional},
    {"EN", ReplyKind::MetaMiss, Args::Optional},
    {"NOT_FOUND", ReplyKind::NotFound, Args::None},
    {"DELETED", ReplyKind::Deleted, Args::None},
    {"NOT_STORED", ReplyKind::NotStored, Args::None},
    {"EXISTS", ReplyKind::Exists, Args::None},
    {"TOUCHED", ReplyKind::Touched, Args::None},
    {"NF", ReplyKind::MetaNotFound, Args::Optional},
    {"NS", ReplyKind::MetaNotStored, Args::Optional},
    {"EX", ReplyKind::MetaExists, Args::Optional},
    {"MN", ReplyKind::MetaNoop, Args::Optional},
    {"OK", ReplyKind::Ok, Args::None},
    {"STAT", ReplyKind::Stat, Args::Required},
    {"ITEM", ReplyKind::Item, Args::Required},
    {"VERSION", ReplyKind::Version, Args::Required},
    {"ME", ReplyKind::MetaDebug, Args::Required},
    {"ERROR", ReplyKind::Error, Args::Optional},
    {"CLIENT_ERROR", ReplyKind::ClientError, Args::Optional},
    {"SERVER_ERROR", ReplyKind::ServerError, Args::Optional},
};

bool classifyLine(std::string_view body, Reply& reply) {
  // The two lines of every get reply first, by their bytes (a bare "VALUE" is no word below).
  if (body.starts_with("VALUE ")) {
    reply.kind = ReplyKind::Value;
    return parseValueLine(body.substr(6), reply);
  }
  if (body == "END") {
    reply.kind = ReplyKind::End;
    return true;
  }
  const size_t sp = body.find(' ');
  const std::string_view head = body.substr(0, sp);
  const bool has_rest = sp != std::string_view::npos;
  const std::string_view rest = has_rest ? body.substr(sp + 1) : std::string_view();

  if (head == "VA") {
    reply.kind = ReplyKind::MetaValue;
    if (!has_rest) {
      return false;
    }
    uint64_t len = 0;
    if (!parseDigits(rest.substr(0, rest.find(' ')), std::numeric_limits<uint32_t>::max(), &len)) {
      return false;
    }
    reply.data_length = len + 2;
    return true;
  }
  for (const Word& w : kWords) {
    if (head != w.token) {
      continue;
    }
    reply.kind = w.kind;
    switch (w.args) {
      case Args::None:
        return !has_rest;
      case Args::Required:
        return has_rest && !rest.empty();
      case Args::Optional:
        return true;
    }
  }
  // incr/decr: the new value, digits only.
  uint64_t number = 0;
  if (!has_rest && parseDigits(head, std::numeric_limits<uint64_t>::max(), &number)) {
    reply.kind = ReplyKind::Number;
    return true;
  }
  return false;
}

}  // namespace

ParseStatus ReplyParser::parse(std::string_view input, Reply& reply) const {
  reply = Reply{};
  // A line longer than kMaxLine (terminator included) is Invalid whether or not its end has
  // arrived, so the answer does not depend on how the bytes were split.
  const size_t scan = input.size() < kMaxLine ? input.size() : kMaxLine;
  const char* nl = static_cast<const char*>(std::memchr(input.data(), '\n', scan));
  if (nl == nullptr) {
    return input.size() >= kMaxLine ? ParseStatus::Invalid : ParseStatus::Incomplete;
  }
  const size_t newline = static_cast<size_t>(nl - input.data());
  // memcached always ends reply lines in "\r\n"; a bare "\n" means we lost the framing.
  if (newline == 0 || input[newline - 1] != '\r') {
    return ParseStatus::Invalid;
  }
  reply.line_length = static_cast<uint32_t>(newline + 1);
  if (!classifyLine(input.substr(0, newline - 1), reply)) {
    reply.data_length = 0;
    return ParseStatus::Invalid;
  }
  return ParseStatus::Ok;
}

ParseStatus frameReply(const ReplyParser& parser, std::string_view input, Reply& reply,
                       uint64_t* consumed) {
  (void)parser;  // the framer has its own (stateless) parser
  StringSource source(input);
  ReplyFramer framer;
  const ReplyFrame frame = framer.next(source, reply);
  *consumed = frame.kind == ReplyFrameKind::Unit ? frame.length : 0;
  switch (frame.kind) {
    case ReplyFrameKind::Unit:
      return ParseStatus::Ok;
    case ReplyFrameKind::Invalid:
      return ParseStatus::Invalid;
    case ReplyFrameKind::NeedMore:
      break;
  }
  return ParseStatus::Incomplete;
}

}  // namespace mcring::protocol
