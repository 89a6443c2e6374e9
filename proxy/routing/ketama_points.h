// The points each ketama flavour puts on the continuum: point strings, counts from weights, hashes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "proxy/routing/hash.h"
#include "proxy/routing/ketama_ring.h"
#include "proxy/routing/router.h"

namespace mcring::routing {

// Points of `compat`'s continuum for `servers`, in that flavour's insertion order (see
// KetamaRing::build for the tie rule). Point::server is the index into `servers`.
//   Twemproxy:    160 points per server at equal weight, 4 per md5("<name>-<i>"), servers in
//                 twemproxy's name order; <name> is twemproxyName(). Equals libmemcached's
//                 KETAMA_WEIGHTED continuum. (A point string of 273+ bytes makes twemproxy read
//                 past its buffer; we hash the whole string.)
//   Libmemcached: all weights 1: libmemcached's CONSISTENT_KETAMA, 100 points per server, one per
//                 string "<name>-<i>" hashed with `key_hash`; any weight > 1 switches it to its
//                 weighted continuum (as memcached_server_add_with_weight does), i.e. the
//                 twemproxy points, in config order.
//   Spymemcached: 160 points per server, 4 per md5("/host:port-<i>"), config order.
//   Libketama:    last.fm libketama: 4 per md5("host:port-<i>") (port always), with its own
//                 floorf(pct * 40.0 * n) digest count, config order.
// A configured name replaces host:port ("/host:port" for spymemcached) in every flavour.
std::vector<KetamaRing::Point> ketamaPoints(std::span<const ServerSpec> servers,
                                            KetamaCompat compat, HashFunction key_hash);

// Points per server of twemproxy's (and libmemcached's weighted) continuum, with its float
// arithmetic: floorf((float)(pct * 160 / 4 * n + 1e-10)) * 4, pct = (float)weight / total.
uint32_t twemproxyPointCount(uint32_t weight, uint64_t total_weight, size_t server_count);

// Digests per server (4 points each) of libketama: floorf(pct * 40.0 * n) in double precision.
uint32_t libketamaDigestCount(uint32_t weight, uint64_t total_weight, size_t server_count);

// For the ring lab: a plain, unweighted ring of `per_server` points per server, one point per
// string "<identity>-<i>" hashed with `point_hash` (libmemcached's scheme with a chosen count).
std::vector<KetamaRing::Point> plainRingPoints(std::span<const ServerSpec> servers,
                                               uint32_t per_server, HashFunction point_hash);

}  // namespace mcring::routing
