// How each distribution names and orders a pool's servers (ring point strings, twemproxy order).
#include "proxy/routing/server_names.h"

#include <algorithm>
#include <numeric>

namespace mcring::routing {

namespace {
constexpr uint16_t kMemcachedDefaultPort = 11211;
}  // namespace

std::string twemproxyName(const ServerSpec& server) {
  if (!server.name.empty()) {
    return server.name;
  }
  if (server.port == kMemcachedDefaultPort) {
    return server.host;
  }
  if (server.port == 0) {
    return server.host + ":";
  }
  return server.host + ":" + std::to_string(server.port);
}

std::vector<uint32_t> twemproxyOrder(std::span<const ServerSpec> servers) {
  std::vector<std::string> names;
  names.reserve(servers.size());
  for (const auto& s : servers) {
    names.push_back(twemproxyName(s));
  }
  std::vector<uint32_t> order(servers.size());
  std::iota(order.begin(), order.end(), 0U);
  // nc_string.c string_compare: length first, then strncmp (unsigned bytes). Equal names are a
  // config error in twemproxy; stable_sort keeps config order for them anyway.
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (names[a].size() != names[b].size()) {
      return names[a].size() < names[b].size();
    }
    return names[a] < names[b];  // std::string compares as unsigned char
  });
  return order;
}

std::string serverIdentity(const ServerSpec& server) {
  if (!server.name.empty()) {
    return server.name;
  }
  return server.host + ":" + std::to_string(server.port);
}

}  // namespace mcring::routing
