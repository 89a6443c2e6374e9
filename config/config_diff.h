// What changed between two configs: the part of a reload record an SRE reads first.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace mcring::config {

struct PoolDiff {
  std::string pool;
  std::vector<std::string> servers_added;  // identities
  std::vector<std::string> servers_removed;
  std::vector<std::string> servers_reweighted;  // "id weight a->b"
  std::vector<std::string> servers_renamed;     // "id name 'a'->'b'"
  bool server_order_changed = false;            // matters for modula
  std::vector<std::string> keys_changed;        // other pool keys, "timeout 1000->250"
  // "route 'user:' pool users->users2", "+route 'sess:' -> sessions", "-route 'x:'" (the default
  // route is "route default"); a route's place in the list does not matter (longest prefix wins).
  std::vector<std::string> routes_changed;
  bool empty() const {
    return servers_added.empty() && servers_removed.empty() && servers_reweighted.empty() &&
           servers_renamed.empty() && !server_order_changed && keys_changed.empty() &&
           routes_changed.empty();
  }
};

struct ConfigDiff {
  std::vector<std::string> pools_added;
  std::vector<std::string> pools_removed;
  std::vector<PoolDiff> pools_changed;
  bool empty() const {
    return pools_added.empty() && pools_removed.empty() && pools_changed.empty();
  }
  bool serversChanged() const;
  // One line: "pool 'a': +1 server (127.0.0.1:11304), ~weight 127.0.0.1:11301 1->2; pool 'b' added"
  // (a pool's route changes follow its key changes: "route 'user:' pool users->users2, ...")
  std::string summary() const;
};

ConfigDiff diffConfigs(const Config& before, const Config& after);

}  // namespace mcring::config
