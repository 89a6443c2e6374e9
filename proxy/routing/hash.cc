// Key hash functions, each bit-identical to twemproxy 0.5.0's hashkit (itself libmemcached's).
//
// Where the originals read a key byte through a plain (signed, on x86) `char` and widen it, a byte
// >= 0x80 is sign-extended before it is mixed in; we do the same on purpose, through `signed char`,
// so UTF-8 keys land where twemproxy puts them on any platform. Each function notes whether it has
// that quirk.
#include "proxy/routing/hash.h"

#include <md5.h>
#include <xxhash.h>

#include <array>
#include <cstring>

namespace mcring::routing {
namespace {

// A key byte as twemproxy sees it through `(uint32_t)key[i]` on x86: sign-extended.
inline uint32_t signExtended(char c) {
  return static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(c)));
}
inline uint32_t unsignedByte(char c) {
  return static_cast<unsigned char>(c);
}

// Reflected CRC-32 (poly 0xEDB88320) table, shared by crc32 and crc32a.
constexpr std::array<uint32_t, 256> makeCrc32Table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) {
      c = (c & 1) != 0 ? (c >> 1) ^ 0xEDB88320U : c >> 1;
    }
    table[i] = c;
  }
  return table;
}

// CRC-16/XMODEM (poly 0x1021, MSB first) table, as in twemproxy's nc_crc16.c.
constexpr std::array<uint16_t, 256> makeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i << 8;
    for (int k = 0; k < 8; ++k) {
      c = (c & 0x8000) != 0 ? (c << 1) ^ 0x1021U : c << 1;
    }
    table[i] = static_cast<uint16_t>(c);
  }
  return table;
}

constexpr auto kCrc32Table = makeCrc32Table();
constexpr auto kCrc16Table = makeCrc16Table();

// Sign-extends (the ~0 fill of the low 32 bits survives the cast to uint32_t).
uint32_t oneAtATime(std::string_view key) {
  uint32_t value = 0;
  for (char c : key) {
    value += signExtended(c);
    value += value << 10;
    value ^= value >> 6;
  }
  value += value << 3;
  value ^= value >> 11;
  value += value << 15;
  return value;
}

// The first four digest bytes, little-endian (twemproxy's hash_md5).
uint32_t md5(std::string_view key) {
  MD5_CTX ctx;
  uint8_t digest[MD5_DIGEST_LENGTH];
  MD5Init(&ctx);
  MD5Update(&ctx, reinterpret_cast<const uint8_t*>(key.data()), key.size());
  MD5Final(digest, &ctx);
  return static_cast<uint32_t>(digest[0]) | static_cast<uint32_t>(digest[1]) << 8 |
         static_cast<uint32_t>(digest[2]) << 16 | static_cast<uint32_t>(digest[3]) << 24;
}

// twemproxy 0.5.0's crc16 is XMODEM with a 32-bit accumulator that is never masked, so the
// result grows past 16 bits ("apple" -> 3662830516, as its own test suite expects).
uint32_t crc16(std::string_view key) {
  uint32_t crc = 0;
  for (char c : key) {
    crc = (crc << 8) ^ kCrc16Table[((crc >> 8) ^ unsignedByte(c)) & 0xff];
  }
  return crc;
}

// libmemcached's "crc": a CRC-32 cut down to 15 bits. The sign extension is masked off by & 0xff.
uint32_t crc32(std::string_view key) {
  uint32_t crc = UINT32_MAX;
  for (char c : key) {
    crc = (crc >> 8) ^ kCrc32Table[(crc ^ unsignedByte(c)) & 0xff];
  }
  return ((~crc) >> 16) & 0x7fff;
}

// The standard CRC-32 (zlib's), on unsigned bytes.
uint32_t crc32a(std::string_view key) {
  uint32_t crc = ~0U;
  for (char c : key) {
    crc = kCrc32Table[(crc ^ unsignedByte(c)) & 0xff] ^ (crc >> 8);
  }
  return crc ^ ~0U;
}

constexpr uint64_t kFnv64Init = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnv64Prime = 0x100000001b3ULL;
constexpr uint32_t kFnv32Init = 2166136261U;
constexpr uint32_t kFnv32Prime = 16777619U;

// A real 64-bit FNV-1 loop truncated at the end; the byte is sign-extended to 64 bits.
uint32_t fnv1_64(std::string_view key) {
  uint64_t hash = kFnv64Init;
  for (char c : key) {
    hash *= kFnv64Prime;
    hash ^= static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(c)));
  }
  return static_cast<uint32_t>(hash);
}

// twemproxy's (and libmemcached's) fnv1a_64 runs in 32 bits with the 64-bit constants truncated.
uint32_t fnv1a_64(std::string_view key) {
  uint32_t hash = static_cast<uint32_t>(kFnv64Init);
  for (char c : key) {
    hash ^= signExtended(c);
    hash *= static_cast<uint32_t>(kFnv64Prime);
  }
  return hash;
}

uint32_t fnv1_32(std::string_view key) {
  uint32_t hash = kFnv32Init;
  for (char c : key) {
    hash *= kFnv32Prime;
    hash ^= signExtended(c);
  }
  return hash;
}

uint32_t fnv1a_32(std::string_view key) {
  uint32_t hash = kFnv32Init;
  for (char c : key) {
    hash ^= signExtended(c);
    hash *= kFnv32Prime;
  }
  return hash;
}

inline uint32_t get16(const char* p) {
  return unsignedByte(p[1]) << 8 | unsignedByte(p[0]);
}

// Paul Hsieh's SuperFastHash. Only the third byte of a 3-byte tail is sign-extended (twemproxy
// reads it through `char`), the rest through uint8_t.
uint32_t hsieh(std::string_view key) {
  if (key.empty()) {
    return 0;
  }
  const char* p = key.data();
  size_t blocks = key.size() >> 2;
  const size_t rem = key.size() & 3;
  uint32_t hash = 0;
  for (; blocks > 0; --blocks) {
    hash += get16(p);
    const uint32_t tmp = (get16(p + 2) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    p += 4;
    hash += hash >> 11;
  }
  switch (rem) {
    case 3:
      hash += get16(p);
      hash ^= hash << 16;
      hash ^= signExtended(p[2]) << 18;
      hash += hash >> 11;
      break;
    case 2:
      hash += get16(p);
      hash ^= hash << 11;
      hash += hash >> 17;
      break;
    case 1:
      hash += unsignedByte(*p);
      hash ^= hash << 10;
      hash += hash >> 1;
      break;
    default:
      break;
  }
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 4;
  hash += hash >> 17;
  hash ^= hash << 25;
  hash += hash >> 6;
  return hash;
}

// MurmurHash2 with libmemcached's seed (0xdeadbeef * length); little-endian word reads.
uint32_t murmur(std::string_view key) {
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  size_t length = key.size();
  const uint32_t seed = 0xdeadbeefU * static_cast<uint32_t>(length);
  uint32_t h = seed ^ static_cast<uint32_t>(length);
  const auto* data = reinterpret_cast<const unsigned char*>(key.data());
  while (length >= 4) {
    uint32_t k = static_cast<uint32_t>(data[0]) | static_cast<uint32_t>(data[1]) << 8 |
                 static_cast<uint32_t>(data[2]) << 16 | static_cast<uint32_t>(data[3]) << 24;
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
    data += 4;
    length -= 4;
  }
  switch (length) {
    case 3:
      h ^= static_cast<uint32_t>(data[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(data[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= data[0];
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

inline uint32_t rot(uint32_t x, int k) {
  return (x << k) | (x >> (32 - k));
}

// lookup3's mix() and final(), one statement per line.
inline void jenkinsMix(uint32_t& a, uint32_t& b, uint32_t& c) {
  a -= c;
  a ^= rot(c, 4);
  c += b;
  b -= a;
  b ^= rot(a, 6);
  a += c;
  c -= b;
  c ^= rot(b, 8);
  b += a;
  a -= c;
  a ^= rot(c, 16);
  c += b;
  b -= a;
  b ^= rot(a, 19);
  a += c;
  c -= b;
  c ^= rot(b, 4);
  b += a;
}

inline void jenkinsFinal(uint32_t& a, uint32_t& b, uint32_t& c) {
  c ^= b;
  c -= rot(b, 14);
  a ^= c;
  a -= rot(c, 11);
  b ^= a;
  b -= rot(a, 25);
  c ^= b;
  c -= rot(b, 16);
  a ^= c;
  a -= rot(c, 4);
  b ^= a;
  b -= rot(a, 14);
  c ^= b;
  c -= rot(b, 24);
}

// Bob Jenkins' lookup3 hashlittle() with initval 13. twemproxy picks a word-, half-word- or
// byte-wise path by the key's alignment; on little-endian they all compute this byte-wise value.
uint32_t jenkins(std::string_view key) {
  size_t length = key.size();
  uint32_t a = 0xdeadbeefU + static_cast<uint32_t>(length) + 13;
  uint32_t b = a;
  uint32_t c = a;
  const auto* k = reinterpret_cast<const uint8_t*>(key.data());
  auto word = [](const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  };
  while (length > 12) {
    a += word(k);
    b += word(k + 4);
    c += word(k + 8);
    jenkinsMix(a, b, c);
    length -= 12;
    k += 12;
  }
  switch (length) {
    case 12:
      c += static_cast<uint32_t>(k[11]) << 24;
      [[fallthrough]];
    case 11:
      c += static_cast<uint32_t>(k[10]) << 16;
      [[fallthrough]];
    case 10:
      c += static_cast<uint32_t>(k[9]) << 8;
      [[fallthrough]];
    case 9:
      c += k[8];
      [[fallthrough]];
    case 8:
      b += static_cast<uint32_t>(k[7]) << 24;
      [[fallthrough]];
    case 7:
      b += static_cast<uint32_t>(k[6]) << 16;
      [[fallthrough]];
    case 6:
      b += static_cast<uint32_t>(k[5]) << 8;
      [[fallthrough]];
    case 5:
      b += k[4];
      [[fallthrough]];
    case 4:
      a += static_cast<uint32_t>(k[3]) << 24;
      [[fallthrough]];
    case 3:
      a += static_cast<uint32_t>(k[2]) << 16;
      [[fallthrough]];
    case 2:
      a += static_cast<uint32_t>(k[1]) << 8;
      [[fallthrough]];
    case 1:
      a += k[0];
      break;
    default:
      return c;  // zero length: no mixing
  }
  jenkinsFinal(a, b, c);
  return c;
}

// Not in twemproxy: the low 32 bits of XXH3-64 (seed 0).
uint32_t xxh3(std::string_view key) {
  return static_cast<uint32_t>(XXH3_64bits(key.data(), key.size()));
}

}  // namespace

uint32_t hashKey(HashFunction h, std::string_view key) {
  switch (h) {
    case HashFunction::OneAtATime:
      return oneAtATime(key);
    case HashFunction::Md5:
      return md5(key);
    case HashFunction::Crc16:
      return crc16(key);
    case HashFunction::Crc32:
      return crc32(key);
    case HashFunction::Crc32a:
      return crc32a(key);
    case HashFunction::Fnv1_64:
      return fnv1_64(key);
    case HashFunction::Fnv1a_64:
      return fnv1a_64(key);
    case HashFunction::Fnv1_32:
      return fnv1_32(key);
    case HashFunction::Fnv1a_32:
      return fnv1a_32(key);
    case HashFunction::Hsieh:
      return hsieh(key);
    case HashFunction::Murmur:
      return murmur(key);
    case HashFunction::Jenkins:
      return jenkins(key);
    case HashFunction::Xxh3:
      return xxh3(key);
  }
  return fnv1a_64(key);  // unreachable for valid enum values
}

std::string_view applyHashTag(std::string_view key, std::string_view hash_tag) {
  if (hash_tag.size() != 2) {
    return key;
  }
  const size_t start = key.find(hash_tag[0]);
  if (start == std::string_view::npos) {
    return key;
  }
  const size_t end = key.find(hash_tag[1], start + 1);
  if (end == std::string_view::npos || end - start <= 1) {
    return key;
  }
  return key.substr(start + 1, end - start - 1);
}

}  // namespace mcring::routing
