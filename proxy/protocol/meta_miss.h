// An `mg` miss in the client's format, as memcached 1.6.18 writes it: mcring answers it itself
// when the key's server is unavailable (the pool's unavailable_reads: miss).
#pragma once

#include <string>
#include <string_view>

namespace mcring::protocol {

// The reply memcached gives `mg <key> <flags>` on a miss, with "\r\n": "EN", then, in the order
// the flags were given, " k<key>" (followed by " b" when the key is base64) for each k and the
// O token itself for each O; every other flag leaves no trace. Empty for a quiet mg (q): a miss
// is what q hides. `key` is the key as the client wrote it (base64 when b). Measured against
// memcached 1.6.18: `mg x O9 k v` -> "EN O9 kx", `mg eA== b k O1` -> "EN keA== b O1".
std::string metaMissReply(std::string_view key, std::string_view flags);

}  // namespace mcring::protocol
