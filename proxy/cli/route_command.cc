// `mcring route -c FILE [--pool NAME] [KEY ...]`: prints KEY<TAB>HOST:PORT[<TAB>NAME] per key.
//
// Builds the same Router the proxy builds from the same config (no address resolution, so it
// runs anywhere), so its answers are the proxy's answers.
#include "proxy/cli/route_command.h"

#include <getopt.h>

#include <array>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/routing/router.h"

namespace mcring::cli {
namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: mcring route -c FILE [--pool NAME] [KEY ...]\n"
               "Prints KEY<TAB>HOST:PORT (and <TAB>NAME for named servers) for each KEY,\n"
               "or for each line of standard input when no KEY is given. In a pool with\n"
               "replicas: N > 1, KEY<TAB>HOST:PORT<TAB>HOST:PORT... : the key's whole replica\n"
               "set, its own server first.\n"
               "  -c, --conf-file FILE  configuration file (required)\n"
               "      --pool NAME       pool to route in (default: the first pool)\n"
               "  -h, --help            this help\n");
}

}  // namespace

int runRouteCommand(int argc, char** argv) {
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
  const config::PoolConfig* pool = nullptr;
  for (const auto& p : loaded.config->pools) {
    if (pool_name.empty() || p.name == pool_name) {
      pool = &p;
      break;
    }
  }
  if (pool == nullptr) {
    std::fprintf(stderr, "mcring route: no pool '%s' in %s\n", pool_name.c_str(), conf.c_str());
    return 1;
  }
  std::vector<routing::ServerSpec> specs;
  for (const auto& s : pool->servers) {
    specs.push_back(s.spec);
  }
  std::string error;
  auto router = routing::Router::build(specs, pool->routing, &error);
  if (!router) {
    std::fprintf(stderr, "mcring route: pool '%s': %s\n", pool->name.c_str(), error.c_str());
    return 1;
  }
  auto print = [&](const std::string& key) {
    std::string out = key;
    if (pool->routing.replicas > 1) {
      std::array<uint32_t, routing::kMaxReplicas> set{};
      const uint32_t n = router->replicaSet(key, set);
      for (uint32_t i = 0; i < n; ++i) {
        out += "\t" + pool->servers[set[i]].identity();
      }
    } else {
      const config::ServerConfig& s = pool->servers[router->route(key)];
      out += "\t" + s.identity();
      if (!s.spec.name.empty()) {
        out += "\t" + s.spec.name;
      }
    }
    out += "\n";
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
