// Which route a key takes: the longest route prefix it starts with, else the default route.
//
// Pure, shared by the proxy's dispatch, `mcring route` and `mcring plan`. A listener has a few
// routes (a handful, at most config's limit), so a scan of the prefixes longest first beats a
// trie on the hot path: no pointer chasing, and the usual first or second compare decides.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcring::routing {

class PrefixTable {
 public:
  static constexpr uint32_t kNoRoute = UINT32_MAX;

  // `target` is the caller's route index. A prefix given twice keeps its first target.
  void add(std::string_view prefix, uint32_t target);
  void setDefault(uint32_t target) { default_ = target; }

  // The route of `key`: the target of its longest matching prefix, else the default, else
  // kNoRoute.
  uint32_t match(std::string_view key) const {
    for (const Entry& e : entries_) {
      if (key.size() >= e.prefix.size() && key.compare(0, e.prefix.size(), e.prefix) == 0) {
        return e.target;
      }
    }
    return default_;
  }
  bool empty() const { return entries_.empty() && default_ == kNoRoute; }

 private:
  struct Entry {
    std::string prefix;
    uint32_t target;
  };
  std::vector<Entry> entries_;  // longest prefix first
  uint32_t default_ = kNoRoute;
};

}  // namespace mcring::routing
