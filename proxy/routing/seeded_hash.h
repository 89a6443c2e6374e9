// Per-server seeds and the 64-bit mixer shared by the hash-seeded distributions (HRW, maglev).
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string_view>

namespace mcring::routing {

// A stable 64-bit hash of a server's identity string; `salt` gives independent hashes.
inline uint64_t identityHash(std::string_view identity, uint64_t salt) {
  return XXH3_64bits_withSeed(identity.data(), identity.size(), salt);
}

// splitmix64's finalizer: a bijective, well-avalanched mix of 64 bits.
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return x;
}

}  // namespace mcring::routing
