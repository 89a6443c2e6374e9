// A binary request as the meta (and text) commands mcring sends its backends, and a backend's
// reply as the binary response memcached would have sent: pure code, so that binary and text
// clients share the same pipelined backend connections and the same dispatch.
//
//   get/getq/getk/getkq   mg <key> v f c                    VA -> hit, EN -> miss
//   gat/gatq/gatk/gatkq   mg <key> v f c T<exptime>
//   touch                 mg <key> f c T<exptime>           HD -> flags and cas, no value
//   set/add/replace (+q)  ms <key> <n> F<flags> T<exp> c M<S|E|R>, or MS C<cas> when the
//                         request carries a cas (memcached makes every one of them a cas then)
//   append/prepend (+q)   ms <key> <n> c MA|MP [C<cas>]
//   delete (+q)           md <key> [C<cas>]
//   incr/decr (+q)        ma <key> v c D<delta> M<I|D> [N<exptime> J<initial>] [C<cas>]
//                         (no N when the expiration is 0xffffffff: no auto-creation)
//   flush (+q)            flush_all [<delay>]               (the pool's allow_flush_all applies)
//   version, stat [group] version, stats [group]
//   noop, quit, quitq     answered locally
// A key goes as it is unless it holds a byte a text key cannot (space, newline, NUL): then base64
// (`b`), or, past 186 bytes (base64 beyond memcached's 250-byte token), a stand-in (appendKey).
// Expiration times of 2^31 and more (after 2038, unsigned in binary) go as 2^31 - 1, the latest
// a meta T can name (metaExptime).
// Quiet opcodes are sent without q: which responses a quiet opcode hides is decided here from
// the reply (memcached: a quiet get hides a miss, a quiet write hides success; errors always go).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/protocol/binary_framer.h"

namespace mcring::protocol {

// What a response needs of its request, kept with the request until its reply is written.
struct BinaryContext {
  bool active = false;  // the request came from a binary client: its reply is translated
  uint8_t opcode = 0;
  uint32_t opaque = 0;
  std::string key;  // returned by getk/getkq/gatk/gatkq
};

// How a request's key went into its meta line (binary_translation.cc, appendKey).
enum class BinaryKeyForm : uint8_t {
  Text,    // as it is
  Base64,  // base64, with `b`: the backend stores the key's own bytes
  StandIn  // base64 of a digest of the key, with `b`: route by the key, not the decoded token
};

struct BinaryTranslation {
  // Local: `reply` (possibly empty: a quiet answer) is the whole response. Otherwise `line` is
  // the command line (with "\r\n"), followed by the request's value and "\r\n" if has_value.
  bool local = false;
  bool close = false;  // quit: close once the reply is written
  bool has_value = false;
  BinaryKeyForm key_form = BinaryKeyForm::Text;
  std::string line;
  std::string reply;
};

void translateBinaryRequest(const BinaryRequest& req, BinaryTranslation& out);

// The response to a request, from its backend reply's first line (with "\r\n") and what
// follows it (`rest`, as much of it as is at hand, at least a short data block whole).
struct BinaryResponse {
  // The response's header, extras and key, or the whole response (empty when a quiet opcode
  // hides it).
  std::string head;
  // A hit's value: the `value_length` bytes after the line are the response's value and follow
  // `head` (then the data block's "\r\n" is dropped).
  bool value_follows = false;
  uint64_t value_length = 0;
};

void translateBackendReply(const BinaryContext& ctx, std::string_view line, std::string_view rest,
                           BinaryResponse& out);

// stat: the whole text reply ("STAT <name> <value>" lines, then END) as one packet per statistic
// and an empty one to end them; an error (an unknown group) as memcached's "Not found".
void translateStatsReply(const BinaryContext& ctx, std::string_view reply, std::string& out);

// Is `opcode` one that hides its nominal response (getq, setq, ...)?
bool binaryQuiet(uint8_t opcode);

}  // namespace mcring::protocol
