// Warm migration's state: previous-owner lookups and the registry of fetches in flight.
#include "proxy/backend/warmup_state.h"

#include "proxy/backend/backend_server.h"
#include "proxy/net/event_loop.h"

namespace mcring::core {

WarmupWindow::WarmupWindow() = default;
WarmupWindow::~WarmupWindow() = default;

BackendServer* WarmupWindow::previousOwner(std::string_view key,
                                           const BackendServer* current) const {
  BackendServer* prev = previous_by_index[previous->router->route(key)];
  return prev == current ? nullptr : prev;
}

void WarmupRegistry::started(std::string_view key, PendingRequest* r, uint32_t key_index) {
  ++inflight_;
  fetching_.emplace(key, std::make_pair(r, key_index));
}

void WarmupRegistry::finished(std::string_view key, PendingRequest* r, uint32_t key_index) {
  auto [it, end] = fetching_.equal_range(key);
  for (; it != end; ++it) {
    if (it->second.first == r && it->second.second == key_index) {
      fetching_.erase(it);
      --inflight_;
      return;
    }
  }
}

void WarmupRegistry::cancelCopies(std::string_view key) {
  auto [it, end] = fetching_.equal_range(key);
  for (; it != end; ++it) {
    it->second.first->warm->key_warm[it->second.second] = WarmState::CopyCancelled;
  }
}

}  // namespace mcring::core
