// The `ms` line mcring writes when it copies a value it has read to another server (warm-up
// copies, hot-key spread fills): the value's length, client flags and remaining TTL carried over.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mcring::protocol {

// Appends `ms <key> <length> F<flags> T<ttl>[ <extra>]\r\n` to `out`. `flags` and `ttl` are the
// numbers as text (from the mg reply that read the value); `extra` is more meta flags ("ME" for
// a copy that must not overwrite a newer value), or empty.
void appendMetaSetLine(std::string& out, std::string_view key, size_t length,
                       std::string_view flags, std::string_view ttl,
                       std::string_view extra = std::string_view());

}  // namespace mcring::protocol
