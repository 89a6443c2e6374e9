// route(key) -> server index: a pure, immutable function of a pool's server list and options.
//
// Shared by the proxy, `mcring route`, `mcring plan` and the lab. Built once per topology
// snapshot off the hot path; route() is const, lock-free and safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/routing/hash.h"

namespace mcring::routing {

enum class Distribution : uint8_t { Ketama, Modula, Random, Jump, Rendezvous, Maglev };
std::optional<Distribution> parseDistribution(std::string_view name);
std::string_view distributionName(Distribution d);

// Which existing client's ketama ring to reproduce bit for bit.
enum class KetamaCompat : uint8_t { Twemproxy, Libmemcached, Spymemcached, Libketama };
std::optional<KetamaCompat> parseKetamaCompat(std::string_view name);
std::string_view ketamaCompatName(KetamaCompat k);

// One entry of a pool's `servers:` list, in config order.
struct ServerSpec {
  std::string host;  // host name or address; a unix socket path when port == 0
  uint16_t port = 0;
  uint32_t weight = 1;
  std::string name;  // optional; replaces host:port in ring point strings (twemproxy)
};

struct RouterOptions {
  HashFunction hash = HashFunction::Fnv1a_64;  // twemproxy's default
  Distribution distribution = Distribution::Ketama;
  KetamaCompat ketama_compat = KetamaCompat::Twemproxy;
  std::string hash_tag;                // "" or two characters, e.g. "{}"
  uint32_t maglev_table_size = 65537;  // prime
  // Servers that hold each key (docs/design.md, "Replication"): 1 = the key's own server only.
  // Above 1 only for distributions with an order of successors (see Router::preferenceList).
  uint32_t replicas = 1;
};

// The most replicas a pool may ask for (a key's replica set lives in a fixed array).
inline constexpr uint32_t kMaxReplicas = 8;

class Router {
 public:
  virtual ~Router() = default;

  // Builds the router for `servers` (non-empty). Returns nullptr and sets *error (a short
  // sentence) when the options do not fit, e.g. a weight != 1 for a distribution without
  // weights, or a maglev table size that is not a prime > number of servers.
  static std::unique_ptr<const Router> build(std::span<const ServerSpec> servers,
                                             const RouterOptions& options, std::string* error);

  // Index into the `servers` given to build(). Applies hash_tag, then the key hash, then the
  // distribution.
  virtual uint32_t route(std::string_view key) const = 0;

  // The key's replica set, a Dynamo-style preference list: min(options().replicas, servers)
  // distinct servers, route(key) first, written to out[0..]; returns how many. Pure, like
  // route(): every worker, `mcring route` and `mcring plan` agree on it.
  uint32_t replicaSet(std::string_view key, std::span<uint32_t, kMaxReplicas> out) const {
    return preferenceList(hashOf(key), options_.replicas, out);
  }

  // The first n (<= kMaxReplicas) distinct servers of the hash's preference list, primary
  // (routeHash(hash)) first; returns how many were written, min(n, serverCount()).
  //   ketama: the owners of the next points clockwise from the hash, skipping servers already
  //     listed (so adding or removing a server changes ~1/N of the replica sets, like primaries);
  //   rendezvous: the n highest scores;
  //   modula, maglev: the owners of the next slots of the table (slot + 1, + 2, ...), skipping
  //     servers already listed;
  //   jump, random: the primary alone (Router::build refuses replicas > 1 for them: jump has no
  //     successor that survives a resize, random no owner at all).
  virtual uint32_t preferenceList(uint32_t hash, uint32_t n,
                                  std::span<uint32_t, kMaxReplicas> out) const;

  // The key hash (after hash_tag), as the distribution sees it.
  virtual uint32_t hashOf(std::string_view key) const = 0;

  // The distribution step alone: route(key) == routeHash(hashOf(key)). Lets `mcring plan`
  // evaluate a distribution over the 32-bit hash space rather than over keys. Random ignores
  // the hash, as its route() ignores the key.
  virtual uint32_t routeHash(uint32_t hash) const = 0;

  // A ketama continuum point: `server` owns the hashes in (previous point, value]; the first
  // point also owns the wrap-around above the last one.
  struct RingPoint {
    uint32_t value;
    uint32_t server;
  };
  // The continuum's distinct points, ascending (ketama); empty for the other distributions.
  // Lets `mcring plan` intersect two rings' arcs exactly.
  virtual std::vector<RingPoint> ringPoints() const { return {}; }

  // For distributions that route a hash to slotTable()[hash % slotTable().size()] (modula,
  // maglev), that table; empty otherwise. Lets `mcring plan` count exactly over residues.
  virtual std::span<const uint32_t> slotTable() const { return {}; }

  virtual size_t serverCount() const = 0;

  // Fraction of the 32-bit key-hash space each server owns: exact for ketama and modula (from
  // the ring / weights), exact or table-derived for the others. Sums to 1.
  virtual std::vector<double> ownership() const = 0;

  // Approximate heap bytes used by the structure (for micro-benchmarks and stats).
  virtual size_t memoryBytes() const = 0;

  const RouterOptions& options() const { return options_; }

 protected:
  explicit Router(RouterOptions options) : options_(std::move(options)) {}
  RouterOptions options_;
};

}  // namespace mcring::routing
