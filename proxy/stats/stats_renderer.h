// Renders the reply to the `stats` command. Sessions answer `stats` through this interface;
// admin's StatsReporter implements it (it sums every worker's counters), so the data plane
// does not depend on admin.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcring::stats {

class StatsRenderer {
 public:
  virtual ~StatsRenderer() = default;
  // Writes the reply to `stats <args>` into *out ("STAT ...\r\n"... "END\r\n"). Returns false
  // (and an ERROR reply) for arguments it does not know, as memcached does. Any thread.
  // Used for the proxy's own views (`stats reloads`, `stats backends`, `stats events`); the
  // views memcached has are merged from the pool's servers (dispatch/stats_views.h).
  virtual bool render(std::string_view args, std::string* out) const = 0;
  // The proxy's own general stats, in order, as (name, value): process, counters, reloads.
  // Merged into `stats` with the servers' fields (protocol/stats_merge.h). Any thread.
  virtual void renderOwn(std::vector<std::pair<std::string, std::string>>* out) const = 0;
};

}  // namespace mcring::stats
