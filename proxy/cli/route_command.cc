// `mcring route -c FILE [--pool NAME] [KEY ...]`: prints KEY<TAB>HOST:PORT[<TAB>NAME] per key,
// or for a pool with routes KEY<TAB>ROUTE<TAB>POOL<TAB>SERVER[<TAB>shadow POOL SERVER].
//
// Builds the same Router (and routing::PrefixTable) the proxy builds from the same config (no
// address resolution, so it runs anywhere), so its answers are the proxy's answers. A discovered
// pool's name (servers_dns, servers_srv) is resolved once, as the proxy resolves it at start
// (discovered_pools.h); a name that does not resolve is an error naming the pool.
#include "proxy/cli/route_command.h"

#include <getopt.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/routing/prefix_table.h"
#include "proxy/routing/router.h"

namespace mcring::cli {
namespace {

// One pool's router and what it prints for a key: its server (host:port, then `sep` and the
// server's name when it has one), or with replicas > 1 the replica set.
class PoolPlacer {
 public:
  static std::unique_ptr<PoolPlacer> build(const config::PoolConfig& pool, std::string* error) {
    std::vector<routing::ServerSpec> specs;
    for (const auto& s : pool.servers) {
      specs.push_back(s.spec);
    }
    auto router = routing::Router::build(specs, pool.routing, error);
    if (!router) {
      return nullptr;
    }
    return std::unique_ptr<PoolPlacer>(new PoolPlacer(pool, std::move(router)));
  }

  // With replicas > 1 the set's servers are separated by a tab for an ordinary pool (today's
  // output), by ',' after a route (the columns stay fixed).
  std::string place(const std::string& key, const char* sep) const {
    std::string out;
    if (pool_.routing.replicas > 1) {
      std::array<uint32_t, routing::kMaxReplicas> set{};
      const uint32_t n = router_->replicaSet(key, set);
      const char* between = sep[0] == '\t' ? "\t" : ",";
      for (uint32_t i = 0; i < n; ++i) {
        out += (i ? between : "") + pool_.servers[set[i]].identity();
      }
    } else {
      const config::ServerConfig& s = pool_.servers[router_->route(key)];
      out += s.identity();
      if (!s.spec.name.empty()) {
        out += sep + s.spec.name;
      }
    }
    return out;
  }

 private:
  PoolPlacer(const config::PoolConfig& pool, std::unique_ptr<const routing::Router> router)
      : pool_(pool), router_(std::move(router)) {}
  const config::PoolConfig& pool_;
  std::unique_ptr<const routing::Router> router_;
};

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: mcring route -c FILE [--pool NAME] [KEY ...]\n"
               "Prints KEY<TAB>HOST:PORT (and <TAB>NAME for named servers) for each KEY,\n"
               "or for each line of standard input when no KEY is given. In a pool with\n"
               "replicas: N > 1, KEY<TAB>HOST:PORT<TAB>HOST:PORT... : the key's whole replica\n"
               "set, its own server first.\n"
               "In a pool with routes: KEY<TAB>ROUTE<TAB>POOL<TAB>SERVER, ROUTE the matching\n"
               "prefix or 'default', SERVER as above (servers joined by ','), and when the\n"
               "route has a shadow <TAB>shadow POOL SERVER; a key no route takes:\n"
               "KEY<TAB>no route.\n"
               "A pool with servers_dns or servers_srv has the servers its name resolves to\n"
               "now (once, through its dns_resolver, as mcring resolves it at start).\n"
               "  -c, --conf-file FILE  configuration file (required)\n"
               "      --pool NAME       pool to route in (default: the first pool, or the\n"
               "                        listening pool when only one listens and it has routes)\n"
               "  -h, --help            this help\n");
}

}  // namespace

int runRouteCommand(int argc, char** argv, const ResolveDiscovered& resolve) {
  std::string conf;
  std::string pool_name;
  static const option kOptions[] = {{"conf-file", required_argument, nullptr, 'c'},
                                    {"pool", required_argument, nullptr, 'P'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "c:h", kOptions, nullptr)) != -1) {
    switch (c) {
      case 'c':
        conf = optarg;
        break;
      case 'P':
        pool_name = optarg;
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (conf.empty()) {
    std::fprintf(stderr, "mcring route: -c FILE is required\n");
    usage(stderr);
    return 2;
  }
  config::LoadResult loaded = config::loadConfigFile(conf);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) {
      std::fprintf(stderr, "%s\n", e.toString().c_str());
    }
    return 1;
  }
  config::Config& cfg = *loaded.config;
  const config::PoolConfig* pool = nullptr;
  for (const auto& p : cfg.pools) {
    if (pool_name.empty() || p.name == pool_name) {
      pool = &p;
      break;
    }
  }
  if (pool == nullptr) {
    std::fprintf(stderr, "mcring route: no pool '%s' in %s\n", pool_name.c_str(), conf.c_str());
    return 1;
  }
  if (pool_name.empty()) {
    // A file with one listener, a pool with routes, means that listener.
    const config::PoolConfig* listening = nullptr;
    int listeners = 0;
    for (const auto& p : cfg.pools) {
      if (p.listens) {
        listening = &p;
        ++listeners;
      }
    }
    if (listeners == 1 && listening->routed()) {
      pool = listening;
    }
  }
  // The pools whose servers place the keys: the pool, or its routes' pools and shadows.
  std::vector<std::string> placing;
  if (!pool->routed()) {
    placing.push_back(pool->name);
  }
  for (const config::RouteConfig& r : pool->routes) {
    placing.push_back(r.pool);
    if (r.shadow) {
      placing.push_back(r.shadow->pool);
    }
  }
  if (!resolveDiscoveredPools("route", conf, cfg, placing, resolve)) {
    return 1;
  }
  std::string error;
  std::function<std::string(const std::string&)> lookup;
  if (!pool->routed()) {
    auto placer = PoolPlacer::build(*pool, &error);
    if (!placer) {
      std::fprintf(stderr, "mcring route: pool '%s': %s\n", pool->name.c_str(), error.c_str());
      return 1;
    }
    lookup = [placer = std::shared_ptr<PoolPlacer>(std::move(placer))](const std::string& key) {
      return "\t" + placer->place(key, "\t");
    };
  } else {
    // The route pools' routers, by name (a config that loads names only pools that build).
    auto placers = std::make_shared<std::map<std::string, std::unique_ptr<PoolPlacer>>>();
    for (const auto& p : cfg.pools) {
      if (p.routed() || std::find(placing.begin(), placing.end(), p.name) == placing.end()) {
        continue;
      }
      auto placer = PoolPlacer::build(p, &error);
      if (!placer) {
        std::fprintf(stderr, "mcring route: pool '%s': %s\n", p.name.c_str(), error.c_str());
        return 1;
      }
      (*placers)[p.name] = std::move(placer);
    }
    auto table = std::make_shared<routing::PrefixTable>();
    for (size_t i = 0; i < pool->routes.size(); ++i) {
      const config::RouteConfig& r = pool->routes[i];
      if (r.is_default) {
        table->setDefault(static_cast<uint32_t>(i));
      } else {
        table->add(r.prefix, static_cast<uint32_t>(i));
      }
    }
    lookup = [pool, placers, table](const std::string& key) {
      uint32_t i = table->match(key);
      if (i == routing::PrefixTable::kNoRoute) {
        return std::string("\tno route");
      }
      const config::RouteConfig& r = pool->routes[i];
      std::string out =
          "\t" + r.name() + "\t" + r.pool + "\t" + placers->at(r.pool)->place(key, " ");
      if (r.shadow) {
        out += "\tshadow " + r.shadow->pool + " " + placers->at(r.shadow->pool)->place(key, " ");
      }
      return out;
    };
  }
  auto print = [&](const std::string& key) {
    std::string out = key + lookup(key) + "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  };
  if (optind < argc) {
    for (int i = optind; i < argc; ++i) {
      print(argv[i]);
    }
  } else {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      print(line);
    }
  }
  return 0;
}

}  // namespace mcring::cli
