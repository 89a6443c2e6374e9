#include "proxy/routing/prefix_table.h"

#include <algorithm>

namespace mcring::routing {

void PrefixTable::add(std::string_view prefix, uint32_t target) {
  for (const Entry& e : entries_) {
    if (e.prefix == prefix) {
      return;
    }
  }
  if (prefix.empty()) {
    return;  // the default's, not a prefix (config refuses it)
  }
  first_bytes_[static_cast<unsigned char>(prefix[0])] = true;
  Entry entry{std::string(prefix), target};
  // Longest first; among equal lengths, the order given (stable).
  auto at = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.prefix.size() < prefix.size(); });
  entries_.insert(at, std::move(entry));
}

}  // namespace mcring::routing
