// Renders the reply to the `stats` command. Sessions answer `stats` through this interface;
// admin's StatsReporter implements it (it sums every worker's counters), so the data plane
// does not depend on admin.
#pragma once

#include <string>
#include <string_view>

namespace mcring::stats {

class StatsRenderer {
 public:
  virtual ~StatsRenderer() = default;
  // Writes the reply to `stats <args>` into *out ("STAT ...\r\n"... "END\r\n"). Returns false
  // (and an ERROR reply) for arguments it does not know, as memcached does. Any thread.
  virtual bool render(std::string_view args, std::string* out) const = 0;
};

}  // namespace mcring::stats
