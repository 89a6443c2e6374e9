// Client request parsing with memcached 1.6.18's text-protocol semantics, error for error.
//
// Reference: memcached's proto_text.c (process_command_ascii and the process_*_command functions)
// and util.c (safe_strto*), checked against a running memcached 1.6.18 byte for byte. Where mcring
// deliberately differs it says so here:
//  - line length limits do not depend on how the bytes arrived (memcached closes only when a read
//    leaves more than 2048 bytes without "\n", and accepts longer lines that arrive at once);
//    gat/gats lines may be as long as get/gets lines (memcached only accepts them when they
//    arrive at once), and go to servers as lines under 2048 bytes (dispatch splits them);
//  - meta base64 keys must be canonical base64 (memcached skips stray characters and stops at the
//    first padded block);
//  - "gat <exptime>" with no key is memcached's "END", reported as GatWithoutKeys.
#include "proxy/protocol/request_parser.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/request_framer.h"

namespace mcring::protocol {
namespace {

// memcached's MAX_TOKENS is 24; no command we check the arity of accepts more than 8 tokens, and
// meta commands with 20 or more are rejected, so remembering 24 is enough. More are counted.
constexpr size_t kStoredTokens = 24;
// memcached: "ntokens > MFLAG_MAX_OPT_LENGTH" where ntokens counts a final empty token.
constexpr size_t kMetaMaxTokens = 19;
// memcached allows up to 100 leading spaces before "get " in an over-long line.
constexpr size_t kMaxLeadingSpaces = 100;
// memcached's MFLAG_MAX_OPAQUE_LENGTH: an O token of more bytes is refused (ms).
constexpr size_t kMaxOpaqueToken = 32;

// The space-separated tokens of a command line, as memcached's tokenize_command() splits them:
// on ' ' only (a tab is part of a token), runs of spaces being one separator.
struct Tokens {
  std::array<Span, kStoredTokens> at;
  size_t count = 0;  // all tokens; only the first kStoredTokens are in `at`
};

// Finds the token starting at or after `pos`; false at the end of the line.
bool nextToken(std::string_view line, size_t& pos, Span& token) {
  while (pos < line.size() && line[pos] == ' ') {
    ++pos;
  }
  if (pos >= line.size()) {
    return false;
  }
  const size_t start = pos;
  const void* space = std::memchr(line.data() + pos, ' ', line.size() - pos);
  pos = space != nullptr ? static_cast<size_t>(static_cast<const char*>(space) - line.data())
                         : line.size();
  token = Span{static_cast<uint32_t>(start), static_cast<uint32_t>(pos - start)};
  return true;
}

void tokenize(std::string_view line, size_t pos, Tokens& tokens) {
  Span token;
  while (nextToken(line, pos, token)) {
    if (tokens.count < kStoredTokens) {
      tokens.at[tokens.count] = token;
    }
    ++tokens.count;
  }
}

// C isspace() in the "C" locale: strtol() skips these before a number, and memcached's safe_strto*
// accept a number followed by one of them.
bool isCSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// What strtol()/strtoul() read from a token, base 10.
struct CNumber {
  bool digits = false;    // at least one digit (else strtol's endptr == str)
  bool overflow = false;  // magnitude beyond 2^64 - 1
  bool negative = false;
  uint64_t magnitude = 0;
  // memcached's safe_strto* accept the number only if the token ends right after it or the next
  // byte is a space character ("5\tjunk" reads as 5).
  bool end_ok = false;
};

CNumber scanCNumber(std::string_view tok) {
  CNumber n;
  size_t i = 0;
  while (i < tok.size() && isCSpace(tok[i])) {
    ++i;
  }
  if (i < tok.size() && (tok[i] == '+' || tok[i] == '-')) {
    n.negative = tok[i] == '-';
    ++i;
  }
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    const auto d = static_cast<uint64_t>(tok[i] - '0');
    n.digits = true;
    if (n.magnitude > (UINT64_MAX - d) / 10) {
      n.overflow = true;
    } else {
      n.magnitude = n.magnitude * 10 + d;
    }
  }
  n.end_ok = i == tok.size() || isCSpace(tok[i]);
  return n;
}

// memcached's safe_strtol(): strtol() into a 64-bit long, rejected on ERANGE, then stored into an
// int32_t without a range check (so 4294967297 is 1 and 2147483648 is negative). Returns the
// truncated value, as memcached uses it.
bool safeStrtol(std::string_view tok, int32_t* out) {
  const CNumber n = scanCNumber(tok);
  if (!n.digits || n.overflow || !n.end_ok) {
    return false;
  }
  const uint64_t limit = n.negative ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  if (n.magnitude > limit) {
    return false;  // ERANGE
  }
  const uint64_t value = n.negative ? 0 - n.magnitude : n.magnitude;
  *out = static_cast<int32_t>(static_cast<uint32_t>(value));
  return true;
}

// memcached's safe_strtoul() / safe_strtoull() on LP64 (both are 64-bit strtoul): a '-' makes the
// value wrap, which is rejected only if the result looks negative as a signed number.
bool safeStrtoull(std::string_view tok, uint64_t* out) {
  const CNumber n = scanCNumber(tok);
  if (!n.digits || n.overflow || !n.end_ok) {
    return false;
  }
  const uint64_t value = n.negative ? 0 - n.magnitude : n.magnitude;
  if (static_cast<int64_t>(value) < 0 && tok.find('-') != std::string_view::npos) {
    return false;
  }
  *out = value;
  return true;
}

// Storage value lengths: memcached's "vlen < 0 || vlen > (INT_MAX - 2)" after safe_strtol.
bool parseValueLength(std::string_view tok, uint64_t* out) {
  int32_t vlen = 0;
  if (!safeStrtol(tok, &vlen) || vlen < 0 || vlen > INT_MAX - 2) {
    return false;
  }
  *out = static_cast<uint64_t>(vlen);
  return true;
}

bool isBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// Decodes a canonical base64 key into `out`, reusing its capacity. EVP_DecodeBlock() alone would
// accept '=' anywhere (as zero bits) and returns the padding as zero bytes, so the text is
// validated here first and the padding taken off its result.
bool decodeBase64Key(std::string_view text, std::string& out) {
  const size_t n = text.size();
  if (n == 0 || n % 4 != 0) {
    return false;
  }
  size_t pad = 0;
  if (text[n - 1] == '=') {
    pad = text[n - 2] == '=' ? 2 : 1;
  }
  for (size_t i = 0; i < n - pad; ++i) {
    if (!isBase64Char(text[i])) {
      return false;
    }
  }
  const size_t decoded = n / 4 * 3;
  out.resize(decoded);
  const int got =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(n));
  if (got < 0 || static_cast<size_t>(got) != decoded) {
    out.clear();
    return false;
  }
  out.resize(decoded - pad);
  return true;
}

constexpr std::pair<std::string_view, Command> kCommandNames[] = {
#define MCRING_X(id, name, cls, effect) {name, Command::id},
    MCRING_COMMANDS(MCRING_X)
#undef MCRING_X
};

bool lookupCommand(std::string_view name, Command* out) {
  for (const auto& [text, command] : kCommandNames) {
    if (text == name) {
      *out = command;
      return true;
    }
  }
  return false;
}

// Does the line begin (after at most 100 spaces, like memcached) with a retrieval command, whose
// line may exceed max_line? 1 yes, 0 no, -1 not enough bytes to tell yet.
int startsRetrievalLine(std::string_view input) {
  size_t i = 0;
  while (i < input.size() && i <= kMaxLeadingSpaces && input[i] == ' ') {
    ++i;
  }
  if (i > kMaxLeadingSpaces) {
    return 0;
  }
  if (i == input.size()) {
    return -1;
  }
  const std::string_view rest = input.substr(i);
  bool undecided = false;
  for (const std::string_view prefix : {"get ", "gets ", "gat ", "gats "}) {
    if (rest.size() >= prefix.size()) {
      if (rest.substr(0, prefix.size()) == prefix) {
        return 1;
      }
    } else if (prefix.substr(0, rest.size()) == rest) {
      undecided = true;
    }
  }
  return undecided ? -1 : 0;
}

// Parses one command line (terminator and anything after a NUL removed) into `req`.
class LineParser {
 public:
  LineParser(const ParserLimits& limits, std::string_view line, Request& req)
      : limits_(limits), line_(line), req_(req) {}

  ParseStatus parse() {
    size_t pos = 0;
    Span name;
    // memcached: fewer than one token, or a command shorter than 2 bytes, is "ERROR".
    if (!nextToken(line_, pos, name)) {
      return fail(RequestError::UnknownCommand);
    }
    if (!lookupCommand(name.in(line_), &req_.command)) {
      tokens_.at[0] = name;
      tokens_.count = 1;
      tokenize(line_, pos, tokens_);
      if (hangsUpAsHttp()) {
        req_.noreply = true;
        req_.close = true;
        return fail(RequestError::HttpRequestLine);
      }
      return fail(RequestError::UnknownCommand);
    }
    setArgs(pos);
    switch (req_.command) {
      case Command::Get:
      case Command::Gets:
        return parseRetrieval(pos, false);
      case Command::Gat:
      case Command::Gats:
        return parseRetrieval(pos, true);
      default:
        break;
    }
    tokens_.at[0] = name;
    tokens_.count = 1;
    tokenize(line_, pos, tokens_);
    switch (req_.command) {
      case Command::Set:
      case Command::Add:
      case Command::Replace:
      case Command::Append:
      case Command::Prepend:
        return parseStorage(false);
      case Command::Cas:
        return parseStorage(true);
      case Command::Delete:
        return parseDelete();
      case Command::Incr:
      case Command::Decr:
        return parseKeyedWithArgument(RequestError::InvalidDelta);
      case Command::Touch:
        return parseKeyedWithArgument(RequestError::InvalidExptime);
      case Command::MetaGet:
      case Command::MetaDelete:
      case Command::MetaArithmetic:
        return parseMeta();
      case Command::MetaSet:
        return parseMetaSet();
      case Command::MetaDebug:
        return parseMetaDebug();
      case Command::Verbosity:
        return parseVerbosity();
      case Command::FlushAll:
        return parseFlushAll();
      case Command::LruCrawler:
        return parseLruCrawler();
      default:
        // mn, version, quit, stats: memcached ignores or reads their arguments itself.
        return ParseStatus::Ok;
    }
  }

 private:
  std::string_view tok(size_t i) const { return tokens_.at[i].in(line_); }
  size_t count() const { return tokens_.count; }

  // memcached's last branch of process_command_ascii: a command it does not know whose last
  // token starts with "HTTP/" is an HTTP request (a browser page talking to the cache across
  // protocols, t/malicious-commands.t), and it hangs up at once. Only a command that no earlier
  // branch took gets there: at least 2 bytes, not a two-byte m command, not starting with g, s,
  // a, c, i, d or t (those branches answer ERROR themselves), and none of the names memcached
  // knows and mcring does not serve. tokenize_command stops at 23 tokens, so "last" is the 23rd
  // of a longer line.
  bool hangsUpAsHttp() const {
    const std::string_view name = tok(0);
    if (name.size() < 2 || (name[0] == 'm' && name.size() == 2) ||
        std::string_view("gsacidt").find(name[0]) != std::string_view::npos) {
      return false;
    }
    for (const std::string_view known : {"bget", "watch", "lru", "extstore", "refresh_certs"}) {
      if (name == known) {
        return false;
      }
    }
    constexpr size_t kMemcachedTokens = 23;  // MAX_TOKENS - 1
    const std::string_view last = tok(std::min(count(), kMemcachedTokens) - 1);
    return last.substr(0, 5) == "HTTP/";
  }

  ParseStatus fail(RequestError error, uint64_t swallow = 0) {
    req_.error = error;
    req_.swallow_length = swallow;
    req_.has_data = false;
    return ParseStatus::Invalid;
  }

  // Meta errors go out even with q (memcached's out_errstring), and they never swallow more than
  // `swallow`.
  ParseStatus failMeta(RequestError error, uint64_t swallow = 0) {
    req_.noreply = false;
    req_.noreply_token = Span{};
    return fail(error, swallow);
  }

  void setArgs(size_t pos) {
    while (pos < line_.size() && line_[pos] == ' ') {
      ++pos;
    }
    size_t end = line_.size();
    while (end > pos && line_[end - 1] == ' ') {
      --end;
    }
    req_.args = Span{static_cast<uint32_t>(pos), static_cast<uint32_t>(end - pos)};
  }

  // The token and the one space before it (a token after the command always has one).
  void setNoreply(const Span& token) {
    req_.noreply = true;
    req_.noreply_token = Span{token.offset - 1, token.length + 1};
  }

  // memcached's set_noreply_maybe(): the last token is exactly "noreply".
  void classicNoreply() {
    const size_t n = count();
    if (n >= 2 && n <= kStoredTokens && tok(n - 1) == "noreply") {
      setNoreply(tokens_.at[n - 1]);
    }
  }

  // Key length first: memcached checks it before anything else on the line.
  bool keyTooLong(const Span& key) const { return key.length > limits_.max_key_length; }

  ParseStatus parseRetrieval(size_t pos, bool touch) {
    Span token;
    if (touch) {
      if (!nextToken(line_, pos, token)) {
        return fail(RequestError::UnknownCommand);
      }
      req_.exptime = token;
      int32_t exptime = 0;
      if (!safeStrtol(token.in(line_), &exptime)) {
        return fail(RequestError::InvalidExptime);
      }
    }
    while (nextToken(line_, pos, token)) {
      if (keyTooLong(token)) {
        return fail(RequestError::KeyTooLong);
      }
      if (req_.keys.size() >= limits_.max_keys) {
        return fail(RequestError::TooManyKeys);
      }
      req_.keys.push_back(token);
    }
    if (req_.keys.empty()) {
      // "get" alone is memcached's WANT_TOKENS "ERROR"; "gat 10" alone is an empty "END".
      return fail(touch ? RequestError::GatWithoutKeys : RequestError::UnknownCommand);
    }
    return ParseStatus::Ok;
  }

  // <cmd> <key> <flags> <exptime> <bytes> [noreply], cas with <cas> before noreply. memcached
  // does not swallow the data block after a bad line: what follows is read as commands.
  ParseStatus parseStorage(bool cas) {
    const size_t n = count();
    const size_t base = cas ? 6 : 5;
    if (n != base && n != base + 1) {
      return fail(RequestError::UnknownCommand);
    }
    // A sixth (seventh) token that is not "noreply" is ignored by memcached.
    classicNoreply();
    req_.keys.push_back(tokens_.at[1]);
    if (keyTooLong(tokens_.at[1])) {
      return fail(RequestError::KeyTooLong);
    }
    // memcached's order is flags, exptime, length, cas, length range; all give the same reply.
    uint64_t flags = 0;
    int32_t exptime = 0;
    uint64_t length = 0;
    uint64_t cas_value = 0;
    if (!safeStrtoull(tok(2), &flags) || !safeStrtol(tok(3), &exptime) ||
        !parseValueLength(tok(4), &length) || (cas && !safeStrtoull(tok(5), &cas_value))) {
      return fail(RequestError::BadCommandLine);
    }
    return acceptData(length, /*meta=*/false, /*base64_failed=*/false);
  }

  // From here the line is well framed: errors swallow the data block, as memcached does.
  ParseStatus acceptData(uint64_t length, bool meta, bool base64_failed) {
    const uint64_t block = length + 2;
    RequestError error = RequestError::None;
    if (base64_failed) {
      error = RequestError::Base64Key;
    } else if (length > limits_.item_size_max) {
      error = RequestError::TooLarge;
    }
    if (error != RequestError::None) {
      return meta ? failMeta(error, block) : fail(error, block);
    }
    req_.has_data = true;
    req_.value_length = length;
    return ParseStatus::Ok;
  }

  // delete <key> [0] [noreply]
  ParseStatus parseDelete() {
    const size_t n = count();
    if (n < 2 || n > 4) {
      return fail(RequestError::UnknownCommand);
    }
    if (n > 2) {
      const bool hold_is_zero = tok(2) == "0";
      classicNoreply();
      const bool valid =
          (n == 3 && (hold_is_zero || req_.noreply)) || (n == 4 && hold_is_zero && req_.noreply);
      if (!valid) {
        return fail(RequestError::DeleteUsage);
      }
    }
    return acceptKey();
  }

  // incr/decr <key> <delta> [noreply], touch <key> <exptime> [noreply].
  ParseStatus parseKeyedWithArgument(RequestError bad_argument) {
    const size_t n = count();
    if (n != 3 && n != 4) {
      return fail(RequestError::UnknownCommand);
    }
    classicNoreply();
    if (keyTooLong(tokens_.at[1])) {
      return fail(RequestError::KeyTooLong);
    }
    bool ok = false;
    if (bad_argument == RequestError::InvalidDelta) {
      uint64_t delta = 0;
      ok = safeStrtoull(tok(2), &delta);
    } else {
      int32_t exptime = 0;
      ok = safeStrtol(tok(2), &exptime);
    }
    if (!ok) {
      return fail(bad_argument);
    }
    return acceptKey();
  }

  ParseStatus acceptKey() {
    req_.keys.push_back(tokens_.at[1]);
    if (keyTooLong(tokens_.at[1])) {
      return fail(RequestError::KeyTooLong);
    }
    return ParseStatus::Ok;
  }

  // Looks at the meta flags from token `first` on for the two mcring needs: q (no reply) and b
  // (base64 key). memcached dispatches on a flag's first byte, so "qx" is q. The backend checks
  // the rest. Returns false if the key is marked base64 but does not decode.
  bool scanMetaFlags(size_t first) {
    for (size_t i = first; i < count(); ++i) {
      const char flag = tok(i)[0];
      if (flag == 'q' && !req_.noreply) {
        setNoreply(tokens_.at[i]);
      } else if (flag == 'b' && !req_.key_base64) {
        req_.key_base64 = true;
      }
    }
    return !req_.key_base64 || decodeBase64Key(tok(1), req_.decoded_key);
  }

  // What memcached 1.6.18 answers for the flags of a meta line, from token `first` on, as its
  // flag pre-parse checks them (measured against it): a repeated flag or one at or past 0x7f
  // and an unknown flag stop the scan at once; a bad number, a bad M token or a base64 key
  // that does not decode is remembered (the last one's text wins) and the scan goes on. None
  // if the flags are well formed. Only needed where mcring answers without the server: an ms
  // too large to forward, a base64 key that does not decode.
  RequestError metaFlagsError(size_t first, char* mode) const {
    std::array<bool, 127> seen{};
    RequestError error = RequestError::None;
    bool failed = false;
    std::string decoded;
    for (size_t i = first; i < count() && i < kStoredTokens; ++i) {
      const std::string_view t = tok(i);
      const auto o = static_cast<unsigned char>(t[0]);
      if (o >= seen.size() || seen[o]) {
        return RequestError::MetaDuplicateFlag;
      }
      seen[o] = true;
      const std::string_view arg = t.substr(1);
      int32_t i32 = 0;
      uint64_t u64 = 0;
      RequestError bad = RequestError::None;
      switch (o) {
        case 'b':
          if (!decodeBase64Key(tok(1), decoded)) {
            bad = RequestError::Base64Key;
          }
          break;
        case 'N':
        case 'T':
        case 'R':
          if (!safeStrtol(arg, &i32)) {
            bad = RequestError::MetaBadToken;
          }
          break;
        case 'F':  // memcached sets no text of its own: its default stays
          if (!safeStrtoull(arg, &u64)) {
            failed = true;
          }
          break;
        case 'C':
          if (!safeStrtoull(arg, &u64)) {
            bad = RequestError::MetaBadToken;
          }
          break;
        case 'M':
          if (t.size() != 2) {
            bad = RequestError::MetaModeLength;
          } else if (mode != nullptr) {
            *mode = t[1];
          }
          break;
        case 'J':
          if (!safeStrtoull(arg, &u64)) {
            bad = RequestError::MetaBadInitial;
          }
          break;
        case 'D':
          if (!safeStrtoull(arg, &u64)) {
            bad = RequestError::MetaBadDelta;
          }
          break;
        case 'l':
        case 'O':
        case 'P':
        case 'L':
        case 'k':
        case 's':
        case 't':
        case 'c':
        case 'f':
        case 'v':
        case 'h':
        case 'u':
        case 'q':
        case 'I':
          break;
        default:
          return RequestError::MetaUnknownFlag;
      }
      if (bad != RequestError::None) {
        error = bad;
        failed = true;
      }
    }
    if (failed) {
      return error == RequestError::None ? RequestError::BadCommandLine : error;
    }
    return RequestError::None;
  }

  // memcached's checks of an ms line after the flag pre-parse, in its order: an opaque over 32
  // bytes (remembered), then the mode (at once: E A P R S only).
  RequestError metaSetFlagsError() const {
    char mode = 0;
    RequestError error = metaFlagsError(3, &mode);
    if (error != RequestError::None) {
      return error;
    }
    for (size_t i = 3; i < count() && i < kStoredTokens; ++i) {
      if (tok(i)[0] == 'O' && tok(i).size() > kMaxOpaqueToken) {
        error = RequestError::MetaOpaqueTooLong;
      }
    }
    if (mode != 0 && std::string_view("EAPRS").find(mode) == std::string_view::npos) {
      return RequestError::MetaSetInvalidMode;
    }
    return error;
  }

  // mg/md/ma <key> <flags>*
  ParseStatus parseMeta() {
    const size_t n = count();
    if (n < 2) {
      return fail(RequestError::UnknownCommand);
    }
    req_.keys.push_back(tokens_.at[1]);
    if (keyTooLong(tokens_.at[1])) {
      return failMeta(RequestError::KeyTooLong);
    }
    const bool is_get = req_.command == Command::MetaGet;
    if (n > kMetaMaxTokens) {
      return failMeta(is_get ? RequestError::MetaGetFlagsTooLong : RequestError::MetaFlagsTooLong);
    }
    if (!scanMetaFlags(2)) {
      // mg reports what its flag pre-parse found (the decoding error, unless another flag's
      // error comes after it or stops the scan); md and ma a generic error.
      return failMeta(is_get ? metaFlagsError(2, nullptr) : RequestError::MetaInvalidFlag);
    }
    return ParseStatus::Ok;
  }

  // ms <key> <datalen> <flags>*: the errors before the datalen is known do not swallow.
  ParseStatus parseMetaSet() {
    const size_t n = count();
    if (n < 2) {
      return fail(RequestError::UnknownCommand);
    }
    req_.keys.push_back(tokens_.at[1]);
    if (keyTooLong(tokens_.at[1])) {
      return failMeta(RequestError::KeyTooLong);
    }
    if (n == 2) {
      return failMeta(RequestError::BadCommandLine);
    }
    if (n > kMetaMaxTokens) {
      return failMeta(RequestError::MetaFlagsTooLong);
    }
    uint64_t length = 0;
    if (!parseValueLength(tok(2), &length)) {
      return failMeta(RequestError::BadCommandLine);
    }
    // The flags are checked (and a base64 key decoded) before the size, as in memcached, whose
    // flag errors swallow the data block too. Only what mcring answers itself needs them
    // checked here (the server checks the rest), but an error must come before the data
    // block's terminator is: memcached reports a bad flag even when the block is bad.
    const RequestError flags_error = metaSetFlagsError();
    if (flags_error != RequestError::None) {
      return failMeta(flags_error, length + 2);
    }
    const bool base64_failed = !scanMetaFlags(3);
    return acceptData(length, /*meta=*/true, base64_failed);
  }

  // me <key> [b]: no flags but an exact "b" right after the key.
  ParseStatus parseMetaDebug() {
    const size_t n = count();
    if (n < 2) {
      return failMeta(RequestError::BadCommandLine);
    }
    req_.keys.push_back(tokens_.at[1]);
    if (keyTooLong(tokens_.at[1])) {
      return failMeta(RequestError::KeyTooLong);
    }
    if (n >= 3 && tok(2) == "b") {
      req_.key_base64 = true;
      if (!decodeBase64Key(tok(1), req_.decoded_key)) {
        return failMeta(RequestError::BadCommandLine);
      }
    }
    return ParseStatus::Ok;
  }

  // verbosity <level> [noreply]
  ParseStatus parseVerbosity() {
    const size_t n = count();
    if (n != 2 && n != 3) {
      return fail(RequestError::UnknownCommand);
    }
    classicNoreply();
    uint64_t level = 0;
    if (!safeStrtoull(tok(1), &level)) {
      return fail(RequestError::BadCommandLine);
    }
    return ParseStatus::Ok;
  }

  // Of memcached's lru_crawler commands only `lru_crawler metadump <classes|all|hash>` is served
  // (for the pool: dispatch/metadump.h); the others tune one server's crawler, so they are
  // unknown commands here.
  ParseStatus parseLruCrawler() {
    if (count() != 3 || tok(1) != "metadump") {
      return fail(RequestError::UnknownCommand);
    }
    return ParseStatus::Ok;
  }

  // flush_all [delay] [noreply]: memcached reads a delay whenever the token count says there is
  // one, so "flush_all 10 junk" is fine and "flush_all noreply 10" is not.
  ParseStatus parseFlushAll() {
    const size_t n = count();
    if (n > 3) {
      return fail(RequestError::UnknownCommand);
    }
    classicNoreply();
    if (n != (req_.noreply ? 2u : 1u)) {
      int32_t delay = 0;
      if (!safeStrtol(tok(1), &delay)) {
        return fail(RequestError::InvalidExptime);
      }
    }
    return ParseStatus::Ok;
  }

  const ParserLimits& limits_;
  std::string_view line_;
  Request& req_;
  Tokens tokens_;
};

void resetRequest(Request& req) {
  req.command = Command::Get;
  req.line_length = 0;
  req.has_data = false;
  req.value_length = 0;
  req.noreply = false;
  req.noreply_token = Span{};
  req.exptime = Span{};
  req.args = Span{};
  req.keys.clear();  // keeps the capacity: no allocation once warm
  req.key_base64 = false;
  req.decoded_key.clear();
  req.error = RequestError::None;
  req.swallow_length = 0;
  req.close = false;
}

// memcached hangs up, without a reply, on more than 2048 bytes without a newline that are not a
// get/gets line.
ParseStatus lineTooLong(Request& req) {
  req.error = RequestError::LineTooLong;
  req.noreply = true;
  req.close = true;
  req.line_length = 0;
  return ParseStatus::Invalid;
}

}  // namespace

ParseStatus RequestParser::parseUnterminated(std::string_view head, uint64_t buffered,
                                             Request& req) const {
  resetRequest(req);
  const size_t limit = limits_.max_line;
  if (buffered <= limit) {
    return ParseStatus::Incomplete;
  }
  const size_t long_limit = std::max<size_t>(limits_.max_retrieval_line, limit);
  const int retrieval = startsRetrievalLine(head);
  if (retrieval < 0) {
    return ParseStatus::Incomplete;
  }
  if (retrieval == 0 || buffered > long_limit) {
    return lineTooLong(req);
  }
  return ParseStatus::Incomplete;
}

ParseStatus RequestParser::parse(std::string_view input, Request& req) const {
  resetRequest(req);
  // A line may have up to max_line bytes before its "\n" (memcached gives up when it holds more
  // than 2048 bytes without one). Deciding on the bytes before the "\n" rather than on what has
  // arrived keeps the answer independent of how the input was split.
  const size_t limit = limits_.max_line;
  size_t scan = input.size() < limit + 1 ? input.size() : limit + 1;
  const char* nl = static_cast<const char*>(std::memchr(input.data(), '\n', scan));
  if (nl == nullptr) {
    if (input.size() <= limit) {
      return ParseStatus::Incomplete;
    }
    // Looks at no more than 106 bytes, whatever the limit.
    const int retrieval = startsRetrievalLine(input);
    if (retrieval < 0) {
      return ParseStatus::Incomplete;
    }
    const size_t long_limit =
        limits_.max_retrieval_line > limit ? limits_.max_retrieval_line : limit;
    if (retrieval == 0 || long_limit == limit) {
      return lineTooLong(req);
    }
    scan = input.size() < long_limit + 1 ? input.size() : long_limit + 1;
    nl = static_cast<const char*>(std::memchr(input.data() + limit + 1, '\n', scan - (limit + 1)));
    if (nl == nullptr) {
      return input.size() <= long_limit ? ParseStatus::Incomplete : lineTooLong(req);
    }
  }
  const auto newline = static_cast<size_t>(nl - input.data());
  req.line_length = static_cast<uint32_t>(newline + 1);
  size_t end = newline;
  if (end > 0 && input[end - 1] == '\r') {
    --end;
  }
  // memcached handles the line as a C string: a NUL byte ends it.
  const void* nul = std::memchr(input.data(), '\0', end);
  if (nul != nullptr) {
    end = static_cast<size_t>(static_cast<const char*>(nul) - input.data());
  }
  return LineParser(limits_, input.substr(0, end), req).parse();
}

ParseStatus frameRequest(const RequestParser& parser, std::string_view input, Request& req,
                         uint64_t* consumed) {
  StringSource source(input);
  RequestFramer framer(parser);
  const RequestFrame frame = framer.next(source, req);
  switch (frame.kind) {
    case RequestFrameKind::Request:
      *consumed = frame.length;
      return ParseStatus::Ok;
    case RequestFrameKind::Rejected:
      *consumed = frame.length + framer.discardPending();
      return ParseStatus::Invalid;
    case RequestFrameKind::NeedMore:
    case RequestFrameKind::Discard:  // a new framer has nothing to discard
      break;
  }
  *consumed = 0;
  return ParseStatus::Incomplete;
}

}  // namespace mcring::protocol
