// Topology::build: resolve, build routers, freeze.
#include "config/topology.h"

#include <tuple>

#include "config/topology_hash.h"

namespace mcring::config {

const PoolTopology* Topology::findPool(const std::string& name) const {
  for (const auto& p : pools) {
    if (p->config.name == name) {
      return p.get();
    }
  }
  return nullptr;
}

namespace {

std::optional<common::SocketAddress> resolveAddress(const Address& a, std::string* error) {
  if (a.isUnix()) {
    return common::SocketAddress::unixPath(a.unix_path, error);
  }
  return common::SocketAddress::resolve(a.host, a.port, error);
}

}  // namespace

std::shared_ptr<const Topology> Topology::build(const Config& config, uint64_t generation,
                                                std::vector<std::string>* errors) {
  auto topo = std::make_shared<Topology>();
  topo->generation = generation;
  topo->path = config.path;
  topo->digest = config.digest;
  bool ok = true;
  for (const PoolConfig& pc : config.pools) {
    auto pool = std::make_shared<PoolTopology>();
    pool->config = pc;
    std::string err;
    if (pc.listens) {
      auto listen = resolveAddress(pc.listen, &err);
      if (!listen) {
        errors->push_back("pool '" + pc.name + "': listen: " + err);
        ok = false;
        continue;
      }
      pool->listen_address = *listen;
    }
    if (pc.tls_listen) {
      auto tls_listen = resolveAddress(*pc.tls_listen, &err);
      if (!tls_listen) {
        errors->push_back("pool '" + pc.name + "': tls_listen: " + err);
        ok = false;
        continue;
      }
      pool->tls_listen_address = *tls_listen;
    }
    for (auto [file, slot, key] :
         {std::tuple{&pc.client_auth_file, &pool->client_credentials, "client_auth_file"},
          std::tuple{&pc.server_auth_file, &pool->server_credentials, "server_auth_file"}}) {
      if (file->empty()) {
        continue;
      }
      *slot = Credentials::load(*file, &err);
      if (!*slot) {
        errors->push_back("pool '" + pc.name + "': " + key + ": " + err);
        ok = false;
      }
    }
    if (!ok) {
      continue;
    }
    std::vector<routing::ServerSpec> specs;
    specs.reserve(pc.servers.size());
    for (size_t i = 0; i < pc.servers.size(); ++i) {
      const ServerConfig& sc = pc.servers[i];
      auto addr = resolveAddress(sc.address, &err);
      if (!addr) {
        errors->push_back("pool '" + pc.name + "': servers[" + std::to_string(i) + "]: " + err);
        ok = false;
        continue;
      }
      pool->server_addresses.push_back(*addr);
      specs.push_back(sc.spec);
    }
    if (!ok) {
      continue;
    }
    if (pc.routed()) {
      // No servers of its own: Router::build refuses an empty list, and nothing routes by it.
      topo->pools.push_back(std::move(pool));
      continue;
    }
    auto router = routing::Router::build(specs, pc.routing, &err);
    if (!router) {
      errors->push_back("pool '" + pc.name + "': " + err);
      ok = false;
      continue;
    }
    pool->router = std::move(router);
    pool->topology_hash = topologyHashHex(topologyHash(specs, pc.routing));
    topo->pools.push_back(std::move(pool));
  }
  if (!ok) {
    return nullptr;
  }
  return topo;
}

}  // namespace mcring::config
