// Router::build: checks what every distribution needs, then hands over to the distribution.
#include "proxy/routing/router.h"

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

}  // namespace mcring::routing
