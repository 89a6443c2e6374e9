// Key hash functions, each bit-identical to twemproxy's / libmemcached's of the same name.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mcring::routing {

enum class HashFunction : uint8_t {
  OneAtATime,
  Md5,
  Crc16,
  Crc32,
  Crc32a,
  Fnv1_64,
  Fnv1a_64,
  Fnv1_32,
  Fnv1a_32,
  Hsieh,
  Murmur,
  Jenkins,
  Xxh3,
};

std::optional<HashFunction> parseHashFunction(std::string_view name);  // "fnv1a_64", ...
std::string_view hashFunctionName(HashFunction h);

// The 32-bit key hash twemproxy computes (its hash functions return uint32_t).
uint32_t hashKey(HashFunction h, std::string_view key);

// The part of `key` to hash under a two-character hash_tag (e.g. "{}"): the bytes between the
// first open character and the next close character after it, when both are present and the
// enclosed part is non-empty (twemproxy); otherwise the whole key.
std::string_view applyHashTag(std::string_view key, std::string_view hash_tag);

}  // namespace mcring::routing
