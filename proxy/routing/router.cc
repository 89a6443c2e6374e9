// Router::build: checks what every distribution needs, then hands over to the distribution.
#include "proxy/routing/router.h"

#include <algorithm>
#include <set>

#include "proxy/routing/distributions.h"
#include "proxy/routing/server_names.h"

namespace mcring::routing {

std::unique_ptr<const Router> Router::build(std::span<const ServerSpec> servers,
                                            const RouterOptions& options, std::string* error) {
  std::string scratch;
  if (error == nullptr) {
    error = &scratch;
  }
  if (servers.empty()) {
    *error = "a pool needs at least one server";
    return nullptr;
  }
  if (!options.hash_tag.empty() && options.hash_tag.size() != 2) {
    *error = "hash_tag must be empty or two characters, e.g. \"{}\"";
    return nullptr;
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (servers[i].weight == 0) {
      *error = "server " + std::to_string(i) + " has weight 0; weights start at 1";
      return nullptr;
    }
    // Two entries for one server would share ring points / seeds; twemproxy rejects it too.
    if (!seen.insert(serverIdentity(servers[i])).second) {
      *error = "server '" + serverIdentity(servers[i]) + "' is listed twice";
      return nullptr;
    }
  }
  if (options.replicas < 1 || options.replicas > kMaxReplicas) {
    *error = "replicas must be 1 to " + std::to_string(kMaxReplicas);
    return nullptr;
  }
  if (options.replicas > servers.size()) {
    *error = "replicas is " + std::to_string(options.replicas) + " but the pool has " +
             std::to_string(servers.size()) + " server" + (servers.size() == 1 ? "" : "s");
    return nullptr;
  }
  if (options.replicas > 1 && (options.distribution == Distribution::Jump ||
                               options.distribution == Distribution::Random)) {
    *error =
        "replicas > 1 needs a distribution with an order of successors (ketama, rendezvous, "
        "maglev or modula): " +
        std::string(distributionName(options.distribution)) +
        (options.distribution == Distribution::Jump
             ? " has no successor that stays put when the pool changes size"
             : " gives a key no server of its own");
    return nullptr;
  }
  switch (options.distribution) {
    case Distribution::Ketama:
      return makeKetamaRouter(servers, options, error);
    case Distribution::Modula:
      return makeModulaRouter(servers, options, error);
    case Distribution::Random:
      return makeRandomRouter(servers, options, error);
    case Distribution::Jump:
      return makeJumpRouter(servers, options, error);
    case Distribution::Rendezvous:
      return makeRendezvousRouter(servers, options, error);
    case Distribution::Maglev:
      return makeMaglevRouter(servers, options, error);
  }
  *error = "unknown distribution";
  return nullptr;
}

// Modula and maglev: the owners of the slots after the key's, distinct. Jump and random (no
// table): the primary alone.
uint32_t Router::preferenceList(uint32_t hash, uint32_t n,
                                std::span<uint32_t, kMaxReplicas> out) const {
  out[0] = routeHash(hash);
  const std::span<const uint32_t> table = slotTable();
  if (table.empty()) {
    return 1;
  }
  const uint32_t want = std::min<uint32_t>({n, kMaxReplicas, static_cast<uint32_t>(serverCount())});
  uint32_t count = 1;
  const size_t start = hash % table.size();
  for (size_t step = 1; step < table.size() && count < want; ++step) {
    const uint32_t s = table[(start + step) % table.size()];
    if (std::find(out.begin(), out.begin() + count, s) == out.begin() + count) {
      out[count++] = s;
    }
  }
  return count;
}

}  // namespace mcring::routing
