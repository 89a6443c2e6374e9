// `mcring plan`: what a config change would move, before applying it.
#pragma once

#include "proxy/cli/discovered_pools.h"

namespace mcring::cli {

// `resolve`: how a discovered pool's name is resolved (discovered_pools.h).
int runPlanCommand(int argc, char** argv, const ResolveDiscovered& resolve);

}  // namespace mcring::cli
