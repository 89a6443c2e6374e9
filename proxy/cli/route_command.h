// `mcring route`: which server each key goes to, through the proxy's own routing code.
#pragma once

#include "proxy/cli/discovered_pools.h"

namespace mcring::cli {

// `resolve`: how a discovered pool's name is resolved (discovered_pools.h).
int runRouteCommand(int argc, char** argv, const ResolveDiscovered& resolve);

}  // namespace mcring::cli
