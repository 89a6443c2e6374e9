// An `mg` miss, and an `ms` not stored or `md`/`ma` not found, in the client's format, as
// memcached 1.6.18 writes them: mcring answers them itself when the key's server is unavailable
// (the pool's unavailable_reads: miss, unavailable_writes: not_stored).
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

// The same with `code` (NS for ms, NF for md, ma and an ms with C) in place of EN, and never
// empty: memcached 1.6.18's q hides a write's HD, not its NS or NF. `flags` are what follows the
// key (ms's length token included: it is no flag and leaves no trace).
std::string metaNotAppliedReply(std::string_view code, std::string_view key,
                                std::string_view flags);

}  // namespace mcring::protocol
