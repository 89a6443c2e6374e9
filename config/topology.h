// The immutable routing snapshot built from a Config: what workers route by.
//
// Built off the hot path (addresses resolved, routers built), then published as one
// shared_ptr<const Topology>; workers switch to a new one between two requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/credentials.h"
#include "proxy/common/socket_address.h"
#include "proxy/routing/router.h"

namespace mcring::config {

struct PoolTopology {
  PoolConfig config;
  std::vector<common::SocketAddress> server_addresses;  // parallel to config.servers
  // Null for a pool with routes (config.routed()): it has no servers; its routes' pools route.
  std::shared_ptr<const routing::Router> router;
  // The ring's identity (topology_hash.h), 16 hex digits; "" when router is null (routes).
  std::string topology_hash;
  common::SocketAddress listen_address;  // unset when !config.listens (only routed to)
  std::optional<common::SocketAddress> tls_listen_address;
  // client_auth_file / server_auth_file as read when this snapshot was built (null: none).
  std::shared_ptr<const Credentials> client_credentials;
  std::shared_ptr<const Credentials> server_credentials;
};

struct Topology {
  uint64_t generation = 0;
  std::string path;
  std::string digest;
  std::vector<std::shared_ptr<const PoolTopology>> pools;

  const PoolTopology* findPool(const std::string& name) const;

  // Resolves addresses, reads the credentials files and builds every pool's router. Returns nullptr
  // and appends to *errors when something cannot be built (unresolvable host, options the router
  // refuses).
  static std::shared_ptr<const Topology> build(const Config& config, uint64_t generation,
                                               std::vector<std::string>* errors);
};

}  // namespace mcring::config
