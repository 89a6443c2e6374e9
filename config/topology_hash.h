// A pool's ring identity: one 64-bit hash of exactly what decides where a key goes.
//
// Proxies that place keys alike report the same hash (`mcring_topology_info`, `stats`, the
// console), so a fleet whose proxies disagree about a pool's ring shows it. Pure and fixed
// across runs, builds and processes: XXH64 over a canonical, versioned encoding.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "proxy/routing/router.h"

namespace mcring::config {

// What the hash covers (docs/design.md, "Topology identity"):
//   - hash, hash_tag, distribution, replicas; ketama_compat for ketama only, maglev_table_size
//     for maglev only (an option the distribution ignores changes nothing);
//   - each server's host, port, name and weight (the name places keys, host:port is where they
//     go), in the order the router builds from: twemproxy's name order for ketama with
//     ketama_compat twemproxy and for modula (they sort the servers by name first, so reordering
//     the list moves no key and leaves the hash alone), the config order for every other
//     distribution (it decides jump's buckets, maglev's table, and which server wins a tied
//     ketama point or rendezvous score, so reordering can move keys).
// Not covered: listen addresses, timeouts, TLS, per-server `tls=`, and every other key.
uint64_t topologyHash(std::span<const routing::ServerSpec> servers,
                      const routing::RouterOptions& options);

// 16 lowercase hex digits, as /metrics and `stats` show it.
std::string topologyHashHex(uint64_t hash);

}  // namespace mcring::config
