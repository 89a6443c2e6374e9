// Config names of hash functions, distributions and ketama flavours: one table each.
#include <array>
#include <utility>

#include "proxy/routing/hash.h"
#include "proxy/routing/router.h"

namespace mcring::routing {
namespace {

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::pair<std::string_view, E>, N>& table,
                        std::string_view name) {
  for (const auto& [n, e] : table) {
    if (n == name) {
      return e;
    }
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::string_view nameOf(const std::array<std::pair<std::string_view, E>, N>& table, E e) {
  for (const auto& [n, v] : table) {
    if (v == e) {
      return n;
    }
  }
  return "?";
}

constexpr std::array<std::pair<std::string_view, HashFunction>, 13> kHashNames{{
    {"one_at_a_time", HashFunction::OneAtATime},
    {"md5", HashFunction::Md5},
    {"crc16", HashFunction::Crc16},
    {"crc32", HashFunction::Crc32},
    {"crc32a", HashFunction::Crc32a},
    {"fnv1_64", HashFunction::Fnv1_64},
    {"fnv1a_64", HashFunction::Fnv1a_64},
    {"fnv1_32", HashFunction::Fnv1_32},
    {"fnv1a_32", HashFunction::Fnv1a_32},
    {"hsieh", HashFunction::Hsieh},
    {"murmur", HashFunction::Murmur},
    {"jenkins", HashFunction::Jenkins},
    {"xxh3", HashFunction::Xxh3},
}};

constexpr std::array<std::pair<std::string_view, Distribution>, 6> kDistributionNames{{
    {"ketama", Distribution::Ketama},
    {"modula", Distribution::Modula},
    {"random", Distribution::Random},
    {"jump", Distribution::Jump},
    {"rendezvous", Distribution::Rendezvous},
    {"maglev", Distribution::Maglev},
}};

constexpr std::array<std::pair<std::string_view, KetamaCompat>, 4> kKetamaCompatNames{{
    {"twemproxy", KetamaCompat::Twemproxy},
    {"libmemcached", KetamaCompat::Libmemcached},
    {"spymemcached", KetamaCompat::Spymemcached},
    {"libketama", KetamaCompat::Libketama},
}};

}  // namespace

std::optional<HashFunction> parseHashFunction(std::string_view name) {
  return lookup(kHashNames, name);
}
std::string_view hashFunctionName(HashFunction h) {
  return nameOf(kHashNames, h);
}

std::optional<Distribution> parseDistribution(std::string_view name) {
  return lookup(kDistributionNames, name);
}
std::string_view distributionName(Distribution d) {
  return nameOf(kDistributionNames, d);
}

std::optional<KetamaCompat> parseKetamaCompat(std::string_view name) {
  return lookup(kKetamaCompatNames, name);
}
std::string_view ketamaCompatName(KetamaCompat k) {
  return nameOf(kKetamaCompatNames, k);
}

}  // namespace mcring::routing
