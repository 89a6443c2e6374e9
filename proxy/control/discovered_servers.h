// What a discovered pool's DNS answers make of its server list (servers_dns).
//
// An answer's new addresses join at once (a server added to the name takes keys at the next
// answer). A server leaves only once it has been missing from `remove_after` consecutive answers,
// so a record that flaps does not move keys back and forth. Removals that would take more than
// half of the pool at once are held until the next answer asks for the same again (one bad answer
// from a DNS server in trouble must not empty a pool). Failed answers never reach this class:
// they change nothing, and do not count as answers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mcring::core {

class DiscoveredServers {
 public:
  explicit DiscoveredServers(uint32_t remove_after) : remove_after_(remove_after) {}

  struct Step {
    std::vector<std::string> added;
    std::vector<std::string> removed;
    std::vector<std::string> held;  // would have been removed, more than half of the pool
    bool changed() const { return !added.empty() || !removed.empty(); }
  };

  // One good (non-empty) answer, as server identities ("10.0.0.5:11211", "[fd00::5]:11211").
  Step onAnswer(const std::vector<std::string>& identities);

  // The servers in force, sorted; empty before the first answer.
  const std::vector<std::string>& servers() const { return servers_; }
  bool resolved() const { return !servers_.empty(); }

 private:
  uint32_t remove_after_;
  std::vector<std::string> servers_;
  std::map<std::string, uint32_t> missing_;  // consecutive answers each server was missing from
  std::vector<std::string> held_;            // the removal held at the previous answer
};

}  // namespace mcring::core
