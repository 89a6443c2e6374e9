// A parsed client request: where its parts are in the command line, and what follows the line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/command.h"

namespace mcring::protocol {

// A token inside the command line, as offsets so the line's buffer may move.
struct Span {
  uint32_t offset = 0;
  uint32_t length = 0;
  std::string_view in(std::string_view line) const { return line.substr(offset, length); }
  bool empty() const { return length == 0; }
};

// Why a request was rejected, with memcached's own reply text. One table for enum and text; the
// counter name is the identifier in snake_case. Rows below HttpRequestLine are memcached 1.6.18's
// command-specific texts (which command gives which is in request_parser.cc). LineTooLong and
// HttpRequestLine have no text: memcached hangs up without a reply (the parser sets noreply and
// close on them).
#define MCRING_REQUEST_ERRORS(X)                                                         \
  X(None, "")                                                                            \
  X(UnknownCommand, "ERROR")                                                             \
  X(BadCommandLine, "CLIENT_ERROR bad command line format")                              \
  X(KeyTooLong, "CLIENT_ERROR bad command line format")                                  \
  X(TooManyKeys, "CLIENT_ERROR too many keys")                                           \
  X(Base64Key, "CLIENT_ERROR error decoding key")                                        \
  X(BadDataChunk, "CLIENT_ERROR bad data chunk")                                         \
  X(TooLarge, "SERVER_ERROR object too large for cache")                                 \
  X(LineTooLong, "")                                                                     \
  X(HttpRequestLine, "")                                                                 \
  X(InvalidExptime, "CLIENT_ERROR invalid exptime argument")                             \
  X(InvalidDelta, "CLIENT_ERROR invalid numeric delta argument")                         \
  X(DeleteUsage, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]") \
  X(MetaFlagsTooLong, "CLIENT_ERROR options flags too long")                             \
  X(MetaGetFlagsTooLong, "CLIENT_ERROR options flags are too long")                      \
  X(MetaInvalidFlag, "CLIENT_ERROR invalid or duplicate flag")                           \
  X(MetaDuplicateFlag, "CLIENT_ERROR duplicate flag")                                    \
  X(MetaUnknownFlag, "CLIENT_ERROR invalid flag")                                        \
  X(MetaBadToken, "CLIENT_ERROR bad token in command line format")                       \
  X(MetaModeLength, "CLIENT_ERROR incorrect length for M token")                         \
  X(MetaBadInitial, "CLIENT_ERROR invalid numeric initial value")                        \
  X(MetaBadDelta, "CLIENT_ERROR invalid numeric delta value")                            \
  X(MetaOpaqueTooLong, "CLIENT_ERROR opaque token too long")                             \
  X(MetaSetInvalidMode, "CLIENT_ERROR invalid mode for ms M token")                      \
  X(GatWithoutKeys, "END")

enum class RequestError : uint8_t {
#define MCRING_X(id, text) id,
  MCRING_REQUEST_ERRORS(MCRING_X)
#undef MCRING_X
};

// The reply line for an error, without "\r\n".
std::string_view requestErrorText(RequestError e);
// A short stable name for counters and logs ("unknown_command", "bad_command_line", ...).
std::string_view requestErrorName(RequestError e);

// Filled by RequestParser::parse(). Reused across requests (the parser clears it), so a session
// keeps one and the key vector stops allocating after warm-up.
struct Request {
  // Also set when parse() returns Invalid, except for UnknownCommand, LineTooLong and
  // HttpRequestLine.
  Command command = Command::Get;
  // Bytes of the command line including its terminator ("\r\n", or a bare "\n" as memcached
  // accepts).
  uint32_t line_length = 0;
  // Storage commands and ms: the value's length. A data block of value_length + 2 bytes (value,
  // then "\r\n") follows the line. has_data is false for every other command.
  bool has_data = false;
  uint64_t value_length = 0;
  // Classic "noreply" token, or the meta 'q' flag (any flag token starting with 'q', as
  // memcached reads it; for meta, q hides only nominal replies, never errors).
  // When parse() returned Invalid: true only if memcached would send no error reply either
  // (a classic command whose noreply it had seen before failing); always false for meta.
  bool noreply = false;
  // Where that token is in the line, including the one space before it, so that the proxy can
  // forward the line without it (the proxy always reads the backend's reply, and drops it itself).
  // Empty if absent.
  Span noreply_token;
  // gat/gats: the exptime argument (the token before the keys).
  Span exptime;
  // Everything after the command name and its separating space(s), without the terminator and
  // trailing spaces (stats arguments, verbosity level, flush_all delay, meta key and flags...).
  // May be empty. Like memcached, the line is read only up to a NUL byte, if it has one.
  Span args;
  // Key tokens as they appear in the line: 1..N for retrieval commands, exactly 1 for storage,
  // keyed and meta commands (base64 text when key_base64), 0 for the others.
  std::vector<Span> keys;
  // Meta 'b' flag: keys[0] is base64. decoded_key holds the decoded bytes, used for routing.
  bool key_base64 = false;
  std::string decoded_key;

  // When parse() returned Invalid:
  RequestError error = RequestError::None;
  // Bytes after the command line to discard as well (the data block of a rejected storage
  // command, when memcached swallows it). May be larger than anything buffered yet.
  uint64_t swallow_length = 0;
  // Framing is lost: reply with the error, then close the connection.
  bool close = false;

  // The bytes to route key i by (decoded for base64 meta keys).
  std::string_view routingKey(std::string_view line, size_t i) const {
    if (key_base64 && i == 0) {
      return decoded_key;
    }
    return keys[i].in(line);
  }
};

}  // namespace mcring::protocol
