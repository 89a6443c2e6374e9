// How each distribution names and orders a pool's servers (ring point strings, twemproxy order).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {

// twemproxy's server name (nc_conf.c conf_add_server): the configured name; else "host" when the
// port is 11211 (libmemcached compatibility); else "host:port". A unix socket (port 0) becomes
// "path:" because twemproxy takes the ':' before the weight as part of the name.
std::string twemproxyName(const ServerSpec& server);

// Positions into `servers` in twemproxy's order: it sorts its server array by name (shorter names
// first, then bytewise) before building any distribution, so modula slots and ketama ties follow
// this order rather than the config order.
std::vector<uint32_t> twemproxyOrder(std::span<const ServerSpec> servers);

// A server's identity for hash-seeded distributions (rendezvous, maglev) and duplicate checks:
// the configured name, else "host:port" (always with the port).
std::string serverIdentity(const ServerSpec& server);

}  // namespace mcring::routing
