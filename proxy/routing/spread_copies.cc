// spreadCopies: a hot key's copy servers by salting its name.
#include "proxy/routing/spread_copies.h"

#include <algorithm>
#include <string>

namespace mcring::routing {

std::vector<uint32_t> spreadCopies(const Router& router, std::string_view key, uint32_t copies) {
  std::vector<uint32_t> out;
  if (copies == 0) {
    return out;
  }
  out.push_back(router.route(key));
  std::string salted;
  for (uint32_t attempt = 1; attempt <= 8 * copies && out.size() < copies; ++attempt) {
    salted = std::to_string(attempt);
    salted.push_back('#');
    salted.append(key);
    const uint32_t s = router.route(salted);
    if (std::find(out.begin(), out.end(), s) == out.end()) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace mcring::routing
