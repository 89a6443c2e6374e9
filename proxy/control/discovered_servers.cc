// DiscoveredServers: additions at once, removals after consecutive absences, mass removals held.
#include "proxy/control/discovered_servers.h"

#include <algorithm>
#include <set>

namespace mcring::core {

DiscoveredServers::Step DiscoveredServers::onAnswer(const std::vector<std::string>& identities) {
  Step step;
  std::set<std::string> answer(identities.begin(), identities.end());
  if (answer.empty()) {
    return step;  // an empty answer keeps the pool (the resolver reports it as a failure anyway)
  }
  std::vector<std::string> due;
  for (const std::string& s : servers_) {
    if (answer.count(s) > 0) {
      missing_.erase(s);
    } else if (++missing_[s] >= remove_after_) {
      due.push_back(s);
    }
  }
  for (const std::string& s : answer) {
    if (!std::binary_search(servers_.begin(), servers_.end(), s)) {
      step.added.push_back(s);
    }
  }
  if (!due.empty() && due.size() * 2 > servers_.size() && due != held_) {
    held_ = due;
    step.held = std::move(due);
    due.clear();
  } else {
    held_.clear();
  }
  for (const std::string& s : due) {
    missing_.erase(s);
    servers_.erase(std::find(servers_.begin(), servers_.end(), s));
  }
  step.removed = std::move(due);
  servers_.insert(servers_.end(), step.added.begin(), step.added.end());
  std::sort(servers_.begin(), servers_.end());
  return step;
}

}  // namespace mcring::core
