// Binary requests to meta commands, and meta replies to binary responses.
#include "proxy/protocol/binary_translation.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>

#include "proxy/protocol/reply_lines.h"

namespace mcring::protocol {

namespace {

using Op = BinaryOpcode;

bool is(uint8_t opcode, Op a) {
  return opcode == static_cast<uint8_t>(a);
}

// getk, getkq, gatk, gatkq return the key with a hit (and a non-quiet miss).
bool returnsKey(uint8_t op) {
  return is(op, Op::GetK) || is(op, Op::GetKQ) || is(op, Op::GatK) || is(op, Op::GatKQ);
}

bool isRetrieval(uint8_t op) {
  return is(op, Op::Get) || is(op, Op::GetQ) || is(op, Op::GetK) || is(op, Op::GetKQ) ||
         is(op, Op::Gat) || is(op, Op::GatQ) || is(op, Op::GatK) || is(op, Op::GatKQ);
}

bool quietRetrieval(uint8_t op) {
  return is(op, Op::GetQ) || is(op, Op::GetKQ) || is(op, Op::GatQ) || is(op, Op::GatKQ);
}

void appendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

// A binary expiration time as a meta T (or N, or flush_all) number. memcached reads the binary
// field as unsigned: 2^31 and up are Unix times after 2038, and the key is kept. Its text and
// meta parsers read a signed 32-bit number, so T2147483648 wraps negative and expires the item
// at once; the latest time they can name is 2^31 - 1 (2038-01-19), sent for every later one.
uint32_t metaExptime(uint32_t binary) {
  return std::min<uint32_t>(binary, 0x7fffffffU);
}

// Bytes a text key cannot hold: memcached splits a command line's tokens on spaces, ends the line
// at "\n" and reads it only up to a NUL. It keeps every other byte of a key (control bytes, 0x7f,
// 0xff, a "\r" inside the line) as it is, and so do mcring's parser and the text clients.
bool textKeyByte(char c) {
  return c != ' ' && c != '\n' && c != '\0';
}

// memcached's longest key token, base64 included: base64 carries keys up to 186 bytes.
constexpr size_t kMaxKeyToken = 250;

// A stand-in's bytes start so: a NUL, which no text key holds.
constexpr std::string_view kStandInPrefix{"\0mcring:", 8};

void appendBase64(std::string& line, std::string_view bytes) {
  const size_t encoded = 4 * ((bytes.size() + 2) / 3);
  const size_t at = line.size();
  line.resize(at + encoded + 1);
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&line[at]),
                  reinterpret_cast<const unsigned char*>(bytes.data()),
                  static_cast<int>(bytes.size()));
  line.resize(at + encoded);
}

// The key as a meta key token:
//  - Text: as it is, when a text key can hold it (up to 250 bytes);
//  - Base64 (`b`), when it holds a space, newline or NUL and its base64 fits the 250-byte token;
//  - StandIn (`b`): longer such keys, 187 to 250 bytes, which memcached takes in binary but no
//    text or meta command can name, go as base64 of "\0mcring:" and the key's SHA-256. Only a
//    binary client reaches such a key, through mcring always by the same stand-in; it is routed
//    by its own bytes (ClientSession::routeByBinaryKey).
BinaryKeyForm appendKey(std::string& line, std::string_view key) {
  bool text = true;
  for (char c : key) {
    if (!textKeyByte(c)) {
      text = false;
      break;
    }
  }
  if (text) {
    line.append(key);
    return BinaryKeyForm::Text;
  }
  if (4 * ((key.size() + 2) / 3) <= kMaxKeyToken) {
    appendBase64(line, key);
    return BinaryKeyForm::Base64;
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(key.data(), key.size(), digest, &length, EVP_sha256(), nullptr);
  std::string stand_in(kStandInPrefix);
  stand_in.append(reinterpret_cast<const char*>(digest), length);
  appendBase64(line, stand_in);
  return BinaryKeyForm::StandIn;
}

void localError(const BinaryRequest& req, BinaryStatus status, BinaryTranslation& out) {
  out.local = true;
  appendBinaryError(out.reply, req.header.opcode, status, req.header.opaque);
}

// A number token of a meta reply ("c123" after its flag letter); false if absent.
bool metaToken(std::string_view line, char flag, uint64_t* v) {
  size_t pos = 0;
  while (pos < line.size()) {
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    std::string_view tok = line.substr(pos, end - pos);
    if (tok.size() > 1 && tok[0] == flag) {
      return std::from_chars(tok.data() + 1, tok.data() + tok.size(), *v).ec == std::errc();
    }
    pos = end + 1;
  }
  return false;
}

std::string_view trimLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  return line;
}

bool startsWith(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

// A reply every opcode may get: a backend or proxy error.
bool commonError(std::string_view line, BinaryStatus* status, std::string_view* text) {
  *text = {};
  if (startsWith(line, "SERVER_ERROR object too large")) {
    *status = BinaryStatus::TooLarge;
  } else if (startsWith(line, "SERVER_ERROR out of memory")) {
    *status = BinaryStatus::OutOfMemory;
  } else if (startsWith(line, "SERVER_ERROR")) {
    // A backend that failed or cannot be reached (backendFailureReply): busy, with mcring's
    // reason as the message.
    *status = BinaryStatus::Busy;
    *text = line.size() > 13 ? line.substr(13) : std::string_view("Busy");
  } else if (startsWith(line, "CLIENT_ERROR cannot increment or decrement non-numeric")) {
    *status = BinaryStatus::NonNumeric;
  } else if (startsWith(line, "CLIENT_ERROR")) {
    *status = BinaryStatus::InvalidArguments;
  } else if (line == "ERROR" || startsWith(line, "ERROR ")) {
    *status = BinaryStatus::UnknownCommand;
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool binaryQuiet(uint8_t op) {
  switch (static_cast<Op>(op)) {
    case Op::GetQ:
    case Op::GetKQ:
    case Op::GatQ:
    case Op::GatKQ:
    case Op::SetQ:
    case Op::AddQ:
    case Op::ReplaceQ:
    case Op::DeleteQ:
    case Op::IncrementQ:
    case Op::DecrementQ:
    case Op::QuitQ:
    case Op::FlushQ:
    case Op::AppendQ:
    case Op::PrependQ:
      return true;
    default:
      return false;
  }
}

void translateBinaryRequest(const BinaryRequest& req, BinaryTranslation& out) {
  out.local = false;
  out.close = false;
  out.has_value = false;
  out.key_form = BinaryKeyForm::Text;
  out.line.clear();
  out.reply.clear();
  const uint8_t op = req.header.opcode;
  const uint64_t cas = req.header.cas;
  std::string& line = out.line;
  auto key = [&](std::string_view command) {
    line.append(command);
    line.push_back(' ');
    out.key_form = appendKey(line, req.key);
  };
  auto finish = [&] {
    if (out.key_form != BinaryKeyForm::Text) {
      line.append(" b");
    }
    line.append("\r\n");
  };
  auto casFlag = [&] {
    if (cas != 0) {
      line.append(" C");
      appendNumber(line, cas);
    }
  };
  const char* ex = req.extras.data();
  switch (static_cast<Op>(op)) {
    case Op::Noop:
      out.local = true;
      appendBinaryResponse(out.reply, op, BinaryStatus::Success, req.header.opaque, 0, {}, {}, {});
      return;
    case Op::Quit:
      appendBinaryResponse(out.reply, op, BinaryStatus::Success, req.header.opaque, 0, {}, {}, {});
      [[fallthrough]];
    case Op::QuitQ:
      out.local = true;
      out.close = true;
      return;
    case Op::Version:
      line.append("version\r\n");
      return;
    case Op::Stat:
      for (char c : req.key) {
        if (c == '\r' || c == '\n' || c == '\0') {
          localError(req, BinaryStatus::KeyNotFound, out);
          return;
        }
      }
      line.append(req.key.empty() ? "stats" : "stats ");
      line.append(req.key);
      line.append("\r\n");
      return;
    case Op::Flush:
    case Op::FlushQ:
      line.append("flush_all");
      if (req.extras.size() == 4) {
        line.push_back(' ');
        appendNumber(line, metaExptime(loadBigEndian32(ex)));
      }
      line.append("\r\n");
      return;
    default:
      break;
  }
  if (isRetrieval(op) || is(op, Op::Touch)) {
    key("mg");
    line.append(is(op, Op::Touch) ? " f c" : " v f c");
    if (req.extras.size() == 4) {
      line.append(" T");
      appendNumber(line, metaExptime(loadBigEndian32(ex)));
    }
  } else if (is(op, Op::Set) || is(op, Op::SetQ) || is(op, Op::Add) || is(op, Op::AddQ) ||
             is(op, Op::Replace) || is(op, Op::ReplaceQ)) {
    key("ms");
    line.push_back(' ');
    appendNumber(line, req.value_length);
    line.append(" F");
    appendNumber(line, loadBigEndian32(ex));
    line.append(" T");
    appendNumber(line, metaExptime(loadBigEndian32(ex + 4)));
    line.append(" c");
    if (cas != 0) {
      line.append(" MS");
      casFlag();
    } else if (is(op, Op::Add) || is(op, Op::AddQ)) {
      line.append(" ME");
    } else if (is(op, Op::Replace) || is(op, Op::ReplaceQ)) {
      line.append(" MR");
    } else {
      line.append(" MS");
    }
    out.has_value = true;
  } else if (is(op, Op::Append) || is(op, Op::AppendQ) || is(op, Op::Prepend) ||
             is(op, Op::PrependQ)) {
    key("ms");
    line.push_back(' ');
    appendNumber(line, req.value_length);
    line.append(is(op, Op::Append) || is(op, Op::AppendQ) ? " c MA" : " c MP");
    casFlag();
    out.has_value = true;
  } else if (is(op, Op::Delete) || is(op, Op::DeleteQ)) {
    key("md");
    casFlag();
  } else if (is(op, Op::Increment) || is(op, Op::IncrementQ) || is(op, Op::Decrement) ||
             is(op, Op::DecrementQ)) {
    key("ma");
    line.append(" v c D");
    appendNumber(line, loadBigEndian64(ex));
    line.append(is(op, Op::Increment) || is(op, Op::IncrementQ) ? " MI" : " MD");
    const uint32_t exptime = loadBigEndian32(ex + 16);
    if (exptime != 0xffffffffU) {
      line.append(" N");
      appendNumber(line, metaExptime(exptime));
      line.append(" J");
      appendNumber(line, loadBigEndian64(ex + 8));
    }
    casFlag();
  } else {
    // The framer refuses every other opcode.
    localError(req, BinaryStatus::UnknownCommand, out);
    return;
  }
  finish();
}

void translateBackendReply(const BinaryContext& ctx, std::string_view line, std::string_view rest,
                           BinaryResponse& out) {
  out.head.clear();
  out.value_follows = false;
  out.value_length = 0;
  const uint8_t op = ctx.opcode;
  const uint32_t opaque = ctx.opaque;
  const bool quiet = binaryQuiet(op);
  line = trimLine(line);
  std::string& head = out.head;
  auto error = [&](BinaryStatus s, std::string_view text = {}) {
    appendBinaryResponse(head, op, s, opaque, 0, {}, {}, text.empty() ? binaryStatusText(s) : text);
  };
  auto success = [&](uint64_t cas) {
    if (!quiet) {
      appendBinaryResponse(head, op, BinaryStatus::Success, opaque, cas, {}, {}, {});
    }
  };
  BinaryStatus status;
  std::string_view text;
  if (commonError(line, &status, &text)) {
    // flush_all refused by the pool (allow_flush_all): memcached -F's binary answer.
    if (line == trimLine(kFlushAllRefusedLine)) {
      status = BinaryStatus::AuthError;
      text = {};
    }
    error(status, text);
    return;
  }
  uint64_t cas = 0;
  metaToken(line, 'c', &cas);
  const std::string_view code = line.substr(0, 2);
  if (isRetrieval(op) || is(op, Op::Touch)) {
    if (code == "EN") {
      if (quietRetrieval(op)) {
        return;
      }
      if (returnsKey(op)) {
        appendBinaryResponse(head, op, BinaryStatus::KeyNotFound, opaque, 0, {}, ctx.key, {});
      } else {
        error(BinaryStatus::KeyNotFound);
      }
      return;
    }
    if (code != "VA" && code != "HD") {
      error(BinaryStatus::Busy, line);
      return;
    }
    uint64_t flags = 0;
    metaToken(line, 'f', &flags);
    std::string extras;
    appendBigEndian32(extras, static_cast<uint32_t>(flags));
    const std::string_view key = returnsKey(op) ? std::string_view(ctx.key) : std::string_view();
    uint64_t length = 0;
    if (code == "VA") {
      std::from_chars(line.data() + 3, line.data() + line.size(), length);
    }
    appendBinaryResponseHeader(head, op, BinaryStatus::Success, opaque, cas, 4,
                               static_cast<uint16_t>(key.size()), length);
    head.append(extras);
    head.append(key);
    out.value_follows = code == "VA";
    out.value_length = length;
    return;
  }
  if (is(op, Op::Increment) || is(op, Op::IncrementQ) || is(op, Op::Decrement) ||
      is(op, Op::DecrementQ)) {
    if (code == "VA") {
      uint64_t length = 0;
      std::from_chars(line.data() + 3, line.data() + line.size(), length);
      uint64_t value = 0;
      std::from_chars(rest.data(), rest.data() + std::min<uint64_t>(length, rest.size()), value);
      if (!quiet) {
        std::string v;
        appendBigEndian64(v, value);
        appendBinaryResponse(head, op, BinaryStatus::Success, opaque, cas, {}, {}, v);
      }
      // The data block was read here: nothing of it follows the head.
      return;
    }
  }
  if (code == "HD" || line == "OK") {
    // delete, flush: memcached's response carries no cas.
    const bool keeps_cas =
        !(is(op, Op::Delete) || is(op, Op::DeleteQ) || is(op, Op::Flush) || is(op, Op::FlushQ));
    success(keeps_cas ? cas : 0);
    return;
  }
  if (code == "NF") {
    error(BinaryStatus::KeyNotFound);
    return;
  }
  if (code == "EX") {
    error(BinaryStatus::KeyExists);
    return;
  }
  if (code == "NS") {
    if (is(op, Op::Add) || is(op, Op::AddQ)) {
      error(BinaryStatus::KeyExists);
    } else if (is(op, Op::Replace) || is(op, Op::ReplaceQ)) {
      error(BinaryStatus::KeyNotFound);
    } else {
      error(BinaryStatus::NotStored);
    }
    return;
  }
  if (is(op, Op::Version) && startsWith(line, "VERSION ")) {
    appendBinaryResponse(head, op, BinaryStatus::Success, opaque, 0, {}, {}, line.substr(8));
    return;
  }
  error(BinaryStatus::Busy, line);
}

void translateStatsReply(const BinaryContext& ctx, std::string_view reply, std::string& out) {
  const uint8_t op = ctx.opcode;
  size_t pos = 0;
  while (pos < reply.size()) {
    size_t nl = reply.find('\n', pos);
    if (nl == std::string_view::npos) {
      nl = reply.size();
    }
    const std::string_view line = trimLine(reply.substr(pos, nl - pos));
    pos = nl + 1;
    if (startsWith(line, "STAT ")) {
      const std::string_view kv = line.substr(5);
      const size_t sp = kv.find(' ');
      const std::string_view name = kv.substr(0, sp);
      const std::string_view value =
          sp == std::string_view::npos ? std::string_view() : kv.substr(sp + 1);
      appendBinaryResponse(out, op, BinaryStatus::Success, ctx.opaque, 0, {}, name, value);
      continue;
    }
    if (line == "END" || line == "RESET" || line == "OK") {
      break;
    }
    // An unknown group (ERROR, CLIENT_ERROR...): memcached's binary answer.
    out.clear();
    appendBinaryError(out, op, BinaryStatus::KeyNotFound, ctx.opaque);
    return;
  }
  appendBinaryResponse(out, op, BinaryStatus::Success, ctx.opaque, 0, {}, {}, {});
}

}  // namespace mcring::protocol
