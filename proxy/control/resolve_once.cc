// resolveDiscoveredOnce: Discovery's first answers, as Proxy::start waits for them.
#include "proxy/control/resolve_once.h"

#include <algorithm>

#include "proxy/control/discovery.h"
#include "proxy/net/event_loop.h"

namespace mcring::core {

namespace {
// As Proxy::start: each answer takes at most two tries of its timeout (2 s at most).
constexpr uint32_t kGiveUpMs = 10000;
}  // namespace

bool resolveDiscoveredOnce(config::Config& config, const std::vector<std::string>& pools,
                           std::vector<std::string>* errors) {
  auto wanted = [&](const config::PoolConfig& p) {
    return p.discovered() && std::find(pools.begin(), pools.end(), p.name) != pools.end();
  };
  config::Config part = config;
  part.pools.erase(std::remove_if(part.pools.begin(), part.pools.end(),
                                  [&](const config::PoolConfig& p) { return !wanted(p); }),
                   part.pools.end());
  if (part.pools.empty()) {
    return true;
  }
  net::EventLoop loop;
  Discovery* discovery = nullptr;
  Discovery resolver(loop, [&](const std::string&, bool) {
    if (discovery->unanswered() == 0) {
      loop.stop();
    }
  });
  discovery = &resolver;
  resolver.add(part);
  if (resolver.unanswered() > 0) {
    net::Timer give_up(loop, [&loop] { loop.stop(); });
    give_up.start(kGiveUpMs);
    loop.run();
  }
  const bool ok = resolver.fill(part, errors);
  for (const config::PoolConfig& filled : part.pools) {
    for (config::PoolConfig& p : config.pools) {
      if (p.name == filled.name && !filled.servers.empty()) {
        p.servers = filled.servers;
      }
    }
  }
  return ok;
}

}  // namespace mcring::core
