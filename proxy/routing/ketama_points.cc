// The points each ketama flavour puts on the continuum: point strings, counts from weights, hashes.
#include "proxy/routing/ketama_points.h"

#include <md5.h>

#include <cmath>
#include <string>

#include "proxy/routing/server_names.h"

namespace mcring::routing {
namespace {

constexpr uint16_t kMemcachedDefaultPort = 11211;

// Appends the four points of md5(text): bytes [4a, 4a + 4) little-endian, a = 0..3.
void addMd5Points(const std::string& text, uint32_t server, std::vector<KetamaRing::Point>& out) {
  MD5_CTX ctx;
  uint8_t d[MD5_DIGEST_LENGTH];
  MD5Init(&ctx);
  MD5Update(&ctx, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  MD5Final(d, &ctx);
  for (int a = 0; a < 4; ++a) {
    const uint32_t value = static_cast<uint32_t>(d[4 * a + 3]) << 24 |
                           static_cast<uint32_t>(d[4 * a + 2]) << 16 |
                           static_cast<uint32_t>(d[4 * a + 1]) << 8 | d[4 * a];
    out.push_back({value, server});
  }
}

uint64_t totalWeight(std::span<const ServerSpec> servers) {
  uint64_t total = 0;
  for (const auto& s : servers) {
    total += s.weight;
  }
  return total;
}

// libmemcached's point-string prefix: "host" for port 11211, else "host:port".
std::string libmemcachedName(const ServerSpec& s) {
  if (!s.name.empty()) {
    return s.name;
  }
  if (s.port == kMemcachedDefaultPort) {
    return s.host;
  }
  return s.host + ":" + std::to_string(s.port);
}

// Four points per digest of "<prefix>-<i>", i = 0 .. digests-1, for each server in `order`.
template <typename PrefixFn, typename CountFn>
std::vector<KetamaRing::Point> md5Continuum(std::span<const ServerSpec> servers,
                                            std::span<const uint32_t> order, PrefixFn prefix,
                                            CountFn digests) {
  std::vector<KetamaRing::Point> points;
  for (uint32_t idx : order) {
    const std::string base = prefix(servers[idx]) + "-";
    const uint32_t n = digests(servers[idx]);
    for (uint32_t i = 0; i < n; ++i) {
      addMd5Points(base + std::to_string(i), idx, points);
    }
  }
  return points;
}

std::vector<uint32_t> configOrder(size_t n) {
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) {
    order[i] = static_cast<uint32_t>(i);
  }
  return order;
}

}  // namespace

uint32_t twemproxyPointCount(uint32_t weight, uint64_t total_weight, size_t server_count) {
  // Step by step in float, as C evaluates nc_ketama.c's expression; only the + 1e-10 is double.
  // (ISO C++ mode: no FMA contraction, no excess precision on x86-64.)
  const float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  const float scaled = pct * 160.0F / 4.0F * static_cast<float>(server_count);
  const float nudged = static_cast<float>(static_cast<double>(scaled) + 0.0000000001);
  return static_cast<uint32_t>(std::floor(nudged) * 4.0F);
}

uint32_t libketamaDigestCount(uint32_t weight, uint64_t total_weight, size_t server_count) {
  // ketama.c: floorf(pct * 40.0 * (float)numservers): the product is double (40.0 is a double
  // literal), then narrowed to float for floorf.
  const float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  const double product =
      static_cast<double>(pct) * 40.0 * static_cast<double>(static_cast<float>(server_count));
  return static_cast<uint32_t>(std::floor(static_cast<float>(product)));
}

std::vector<KetamaRing::Point> ketamaPoints(std::span<const ServerSpec> servers,
                                            KetamaCompat compat, HashFunction key_hash) {
  const uint64_t total = totalWeight(servers);
  const size_t n = servers.size();
  auto weightedDigests = [&](const ServerSpec& s) {
    return twemproxyPointCount(s.weight, total, n) / 4;
  };
  switch (compat) {
    case KetamaCompat::Twemproxy: {
      const std::vector<uint32_t> order = twemproxyOrder(servers);
      return md5Continuum(servers, order, twemproxyName, weightedDigests);
    }
    case KetamaCompat::Libmemcached: {
      const std::vector<uint32_t> order = configOrder(n);
      if (total != n) {  // some weight > 1: libmemcached turns on its weighted continuum
        return md5Continuum(servers, order, libmemcachedName, weightedDigests);
      }
      std::vector<KetamaRing::Point> points;
      points.reserve(n * 100);
      for (uint32_t idx : order) {
        const std::string base = libmemcachedName(servers[idx]) + "-";
        for (uint32_t i = 0; i < 100; ++i) {
          points.push_back({hashKey(key_hash, base + std::to_string(i)), idx});
        }
      }
      return points;
    }
    case KetamaCompat::Spymemcached: {
      auto prefix = [](const ServerSpec& s) {
        return s.name.empty() ? "/" + s.host + ":" + std::to_string(s.port) : s.name;
      };
      return md5Continuum(servers, configOrder(n), prefix, weightedDigests);
    }
    case KetamaCompat::Libketama: {
      auto prefix = [](const ServerSpec& s) {
        return s.name.empty() ? s.host + ":" + std::to_string(s.port) : s.name;
      };
      auto digests = [&](const ServerSpec& s) { return libketamaDigestCount(s.weight, total, n); };
      return md5Continuum(servers, configOrder(n), prefix, digests);
    }
  }
  return {};
}

std::vector<KetamaRing::Point> plainRingPoints(std::span<const ServerSpec> servers,
                                               uint32_t per_server, HashFunction point_hash) {
  std::vector<KetamaRing::Point> points;
  points.reserve(servers.size() * per_server);
  for (uint32_t idx = 0; idx < servers.size(); ++idx) {
    const std::string base = serverIdentity(servers[idx]) + "-";
    for (uint32_t i = 0; i < per_server; ++i) {
      points.push_back({hashKey(point_hash, base + std::to_string(i)), idx});
    }
  }
  return points;
}

}  // namespace mcring::routing
