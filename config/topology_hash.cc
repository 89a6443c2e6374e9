// topologyHash: a canonical encoding of a pool's placement inputs, hashed with XXH64.
#include "config/topology_hash.h"

#include <cstdio>
#include <numeric>
#include <string_view>
#include <vector>

#include "proxy/routing/server_names.h"

#define XXH_INLINE_ALL  // header-only, as in config_loader.cc
#include <xxhash.h>

namespace mcring::config {
namespace {

// Bumped whenever the encoding changes, so an old and a new build never agree by accident on
// different encodings (and always disagree during an upgrade that changes it: a documented cost).
constexpr std::string_view kEncodingVersion = "mcring-topology-1";

// Every field is tagged and length-prefixed, so no two different inputs encode alike.
class Encoder {
 public:
  void text(char tag, std::string_view s) {
    bytes_.push_back(tag);
    number(s.size());
    bytes_.append(s);
  }
  void integer(char tag, uint64_t v) {
    bytes_.push_back(tag);
    number(v);
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void number(uint64_t v) {  // little-endian, fixed width: independent of the host
    for (int i = 0; i < 8; ++i) {
      bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    }
  }
  std::string bytes_;
};

// The order the router reads the servers in (see the header).
std::vector<uint32_t> buildOrder(std::span<const routing::ServerSpec> servers,
                                 const routing::RouterOptions& options) {
  const bool by_name = options.distribution == routing::Distribution::Modula ||
                       (options.distribution == routing::Distribution::Ketama &&
                        options.ketama_compat == routing::KetamaCompat::Twemproxy);
  if (by_name) {
    return routing::twemproxyOrder(servers);
  }
  std::vector<uint32_t> order(servers.size());
  std::iota(order.begin(), order.end(), 0U);
  return order;
}

}  // namespace

uint64_t topologyHash(std::span<const routing::ServerSpec> servers,
                      const routing::RouterOptions& options) {
  Encoder e;
  e.text('v', kEncodingVersion);
  e.text('h', routing::hashFunctionName(options.hash));
  e.text('t', options.hash_tag);
  e.text('d', routing::distributionName(options.distribution));
  if (options.distribution == routing::Distribution::Ketama) {
    e.text('k', routing::ketamaCompatName(options.ketama_compat));
  }
  if (options.distribution == routing::Distribution::Maglev) {
    e.integer('m', options.maglev_table_size);
  }
  e.integer('r', options.replicas);
  e.integer('n', servers.size());
  for (uint32_t idx : buildOrder(servers, options)) {
    const routing::ServerSpec& s = servers[idx];
    e.text('H', s.host);
    e.integer('P', s.port);
    e.text('N', s.name);
    e.integer('W', s.weight);
  }
  return XXH64(e.bytes().data(), e.bytes().size(), 0);
}

std::string topologyHashHex(uint64_t hash) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

}  // namespace mcring::config
