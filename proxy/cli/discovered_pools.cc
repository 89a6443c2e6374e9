// resolveDiscoveredPools: a discovered pool's name resolved for the command line, or a clear error.
#include "proxy/cli/discovered_pools.h"

#include <cstdio>

namespace mcring::cli {

bool resolveDiscoveredPools(const char* command, const std::string& path, config::Config& config,
                            const std::vector<std::string>& pools,
                            const ResolveDiscovered& resolve) {
  bool any = false;
  for (const config::PoolConfig& p : config.pools) {
    for (const std::string& name : pools) {
      any = any || (p.discovered() && p.name == name);
    }
  }
  if (!any) {
    return true;
  }
  std::vector<std::string> errors;
  if (resolve && resolve(config, pools, &errors)) {
    return true;
  }
  if (!resolve) {
    errors.emplace_back("discovered pools cannot be resolved here");
  }
  for (const std::string& e : errors) {
    std::fprintf(stderr, "mcring %s: %s: %s\n", command, path.c_str(), e.c_str());
  }
  std::fprintf(stderr,
               "mcring %s: a discovered pool's servers are its DNS name's answer, asked once here "
               "as the proxy asks it (through the pool's dns_resolver, else /etc/resolv.conf): "
               "run this where that name resolves, or copy the pool with its servers listed under "
               "`servers:` and run it on that file\n",
               command);
  return false;
}

}  // namespace mcring::cli
