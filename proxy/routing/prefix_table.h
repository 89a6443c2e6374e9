// Which route a key takes: the longest route prefix it starts with, else the default route.
//
// Pure, shared by the proxy's dispatch, `mcring route` and `mcring plan`. A listener has a few
// routes (a handful, at most config's limit), so a scan of the prefixes longest first beats a
// trie on the hot path: no pointer chasing, and the usual first or second compare decides.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
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
    // A key whose first byte starts no prefix takes the default without a compare (the keys of
    // the default route, usually most, cost one table lookup).
    if (key.empty() || !first_bytes_[static_cast<unsigned char>(key[0])]) {
      return default_;
    }
    for (const Entry& e : entries_) {
      if (key.size() >= e.prefix.size() && key[0] == e.prefix[0] &&
          std::memcmp(key.data(), e.prefix.data(), e.prefix.size()) == 0) {
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
  std::vector<Entry> entries_;           // longest prefix first
  std::array<bool, 256> first_bytes_{};  // the first bytes of the prefixes
  uint32_t default_ = kNoRoute;
};

}  // namespace mcring::routing
