// Warm migration's state (the logic is dispatch's, dispatch/warmup.h): a pool's previous
// placement for the window after a membership change, and a worker's fetches in flight.
//
// Lives with the backends because it is a set of backends (the previous owners, and servers the
// change removed, kept connected for the window) that pool_runtime.h owns, and because backend
// connections end fetches in the registry. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/backend/pending_request.h"

namespace mcring::net {
class Timer;
}

namespace mcring::core {

class BackendServer;

struct WarmupWindow {
  WarmupWindow();
  ~WarmupWindow();
  uint64_t id = 0;
  std::shared_ptr<const config::PoolTopology> previous;  // the placement before the change
  std::vector<BackendServer*> previous_by_index;         // its server index -> server
  // Servers the change removed, kept connected for the window (they hold the moved keys).
  std::vector<std::unique_ptr<BackendServer>> retained;
  std::unique_ptr<net::Timer> timer;

  // The key's previous server if it differs from `current`, else nullptr.
  BackendServer* previousOwner(std::string_view key, const BackendServer* current) const;
};

// A worker's warm-up fetches in flight, by key, so that a write can cancel their copies.
class WarmupRegistry {
 public:
  uint32_t inflight() const { return inflight_; }
  void started(std::string_view key, PendingRequest* r, uint32_t key_index);
  void finished(std::string_view key, PendingRequest* r, uint32_t key_index);
  // A write or delete of `key` was just sent: fetches of it in flight must not copy.
  void cancelCopies(std::string_view key);

 private:
  uint32_t inflight_ = 0;
  // Keys are views into each request's own line copy, valid while the fetch is in flight.
  std::unordered_multimap<std::string_view, std::pair<PendingRequest*, uint32_t>> fetching_;
};

}  // namespace mcring::core
