// A discovered pool (servers_dns, servers_srv) has no servers in its file: `mcring route` and
// `mcring plan` resolve its name once, blocking, before placing keys. The resolution itself is
// control's (net's DNS resolver, which cli may not use): main.cc passes it in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace mcring::cli {

// Fills the servers of the discovered pools among `pools` (by name); false with an error per
// pool whose name gave no good answer. control's resolveDiscoveredOnce.
using ResolveDiscovered =
    std::function<bool(config::Config& config, const std::vector<std::string>& pools,
                       std::vector<std::string>* errors)>;

// Resolves the discovered pools among `pools` of the config read from `path`. On failure prints
// each error, prefixed "mcring <command>: ", and how to proceed, and returns false.
bool resolveDiscoveredPools(const char* command, const std::string& path, config::Config& config,
                            const std::vector<std::string>& pools,
                            const ResolveDiscovered& resolve);

}  // namespace mcring::cli
