// A config's discovered pools (servers_dns, servers_srv) resolved once, blocking, by the proxy's
// own Discovery on a loop of its own: what `mcring route` and `mcring plan` place keys with, so
// their server lists are the ones the proxy would start with (the same answers give the same
// sorted list and SRV weights). For the command line only: it runs a loop until the answers come.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace mcring::core {

// Fills the servers of the discovered pools among `pools` (by name; others are left as they
// are) from one answer each, waiting at most as long as the proxy's start does. False, with
// each failing pool's error ("pool 'x': servers_dns name:port: no good answer yet (last: ...)"),
// when a name gave no good answer.
bool resolveDiscoveredOnce(config::Config& config, const std::vector<std::string>& pools,
                           std::vector<std::string>* errors);

}  // namespace mcring::core
