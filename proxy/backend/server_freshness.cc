// serverFreshness: the process-wide registry of ServerFreshness, one per server.
#include "proxy/backend/server_freshness.h"

#include <map>
#include <mutex>

namespace mcring::core {

std::shared_ptr<ServerFreshness> serverFreshness(const std::string& identity) {
  static std::mutex mutex;
  static auto* registry = new std::map<std::string, std::shared_ptr<ServerFreshness>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*registry)[identity];
  if (!slot) {
    slot = std::make_shared<ServerFreshness>();
  }
  return slot;
}

}  // namespace mcring::core
