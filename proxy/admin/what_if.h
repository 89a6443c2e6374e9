// The console's what-if (POST /whatif/<pool>): an edited server list for a pool in force, and
// what `mcring plan` would say about changing to it (config/change_plan.h: moved fraction,
// each server's share before and after, who loses keys to whom, modula beside it). It computes
// and changes nothing, so it needs no admin token (admin_endpoint.cc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/topology.h"

namespace mcring::core {

struct WhatIfAnswer {
  int status = 200;  // 200; 400 for a list that does not parse; 404 for an unknown pool
  std::string body;  // JSON: the pool's plan, or {"error": "..."}
};

// Servers in a list at most (the body is at most 64 KiB anyway; this bounds the routers built).
inline constexpr size_t kWhatIfMaxServers = 1000;

// `servers`: one server a line in the config's syntax ("host:port:weight [name]"); blank lines,
// '#' comments, a YAML list's "- " and quotes are allowed, so a config's servers: block pastes
// as is. The other pool settings (distribution, hash, ...) stay those in force.
WhatIfAnswer planWhatIf(const config::Topology& topology, const std::string& pool,
                        std::string_view servers);

}  // namespace mcring::core
