// A route's max_ttl (config RouteConfig): a request line with every TTL it sets capped.
//
// memcached's exptime: 0 never expires, a negative value has already expired, up to 30 days is
// seconds from now, more is an absolute Unix time. Capping makes "never" and anything later
// than max_ttl seconds from now into max_ttl; an earlier or past expiry is left alone. What the
// line sets a TTL with: the exptime of set/add/replace/append/prepend/cas, touch, gat/gats; a
// meta command's T flag (and N, the TTL of an item mg or ma creates); an `ms` without T stores
// an item that never expires, so it gets `T<max_ttl>`. Pure; the dispatcher rewrites the line
// only when this says it changed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/protocol/request.h"

namespace mcring::protocol {

// The relative TTL to send instead of `exptime`, or nullopt if it is within the cap.
std::optional<int64_t> cappedExptime(int64_t exptime, uint32_t max_ttl, int64_t now_unix);

// `line` (req's whole command line, with its terminator) with its TTLs capped, into *out.
// False (and *out untouched) when nothing needs to change.
bool capLineExptime(const Request& req, std::string_view line, uint32_t max_ttl, int64_t now_unix,
                    std::string* out);

// `line` with every run of spaces made one space (what memcached's tokenizer reads the same),
// for a capped line that grew past the line limit.
std::string compactLine(std::string_view line);

}  // namespace mcring::protocol
