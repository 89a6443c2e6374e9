// planWhatIf: parses the edited list with the config's own server parser and plans the change
// with the code `mcring plan` runs.
#include "proxy/admin/what_if.h"

#include <set>
#include <vector>

#include "config/change_plan.h"
#include "config/parse.h"
#include "proxy/common/json.h"

namespace mcring::core {
namespace {

WhatIfAnswer failure(int status, const std::string& message) {
  WhatIfAnswer a;
  a.status = status;
  a.body = "{\"error\":";
  common::appendJsonString(&a.body, message);
  a.body += "}\n";
  return a;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

WhatIfAnswer planWhatIf(const config::Topology& topology, const std::string& pool,
                        std::string_view servers) {
  const config::PoolTopology* current = topology.findPool(pool);
  if (current == nullptr) {
    return failure(404, "no pool '" + pool + "' in the configuration in force");
  }
  if (current->config.routed()) {
    // Its keys' servers are its routes' pools': a what-if is asked of one of those.
    return failure(400, "pool '" + pool +
                            "' has routes and no servers: ask the what-if of a pool it routes to");
  }
  config::PoolConfig after = current->config;
  after.servers.clear();
  std::set<std::string> seen;
  size_t line_no = 0;
  while (!servers.empty()) {
    const size_t nl = servers.find('\n');
    std::string_view line = trim(servers.substr(0, nl));
    servers = nl == std::string_view::npos ? std::string_view() : servers.substr(nl + 1);
    ++line_no;
    if (line.starts_with("- ")) {
      line = trim(line.substr(2));
    }
    if (line.size() >= 2 && (line.front() == '"' || line.front() == '\'') &&
        line.back() == line.front()) {
      line = trim(line.substr(1, line.size() - 2));
    }
    if (line.empty() || line.front() == '#' || line == "servers:") {
      continue;
    }
    std::string error;
    std::optional<config::ServerConfig> s = config::parseServer(line, &error);
    if (!s) {
      return failure(400, "line " + std::to_string(line_no) + ": " + error);
    }
    if (!seen.insert(s->identity()).second) {
      return failure(400,
                     "line " + std::to_string(line_no) + ": " + s->identity() + " is listed twice");
    }
    if (after.servers.size() == kWhatIfMaxServers) {
      return failure(400, "more than " + std::to_string(kWhatIfMaxServers) + " servers");
    }
    after.servers.push_back(std::move(*s));
  }
  if (after.servers.empty()) {
    return failure(400, "no servers: a pool needs at least one");
  }
  std::string error;
  std::optional<config::PoolChangePlan> plan =
      config::planPoolChange(current->config, after, &error);
  if (!plan) {
    return failure(400, error);
  }
  WhatIfAnswer a;
  config::appendPoolChangeJson(&a.body, *plan);
  a.body += "\n";
  return a;
}

}  // namespace mcring::core
