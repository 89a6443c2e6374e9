#include "proxy/stats/slow_requests.h"

#include "proxy/common/clock.h"
#include "proxy/common/log.h"

namespace mcring::stats {

SlowRequests& SlowRequests::instance() {
  static SlowRequests log;
  return log;
}

void SlowRequests::record(std::string_view pool, uint32_t threshold_ms, const RequestRecord& r,
                          KeyShown mode) {
  SlowRequest s;
  s.time_ms = common::wallClockMs();
  s.pool.assign(pool);
  s.verb.assign(r.verb);
  if (r.keys > 0) {
    appendShownKey(s.key, r.key, mode);
  }
  s.keys = r.keys;
  // Escaped like the key: a status is printable already; a client or route name may not be.
  s.status = shownKey(r.status, KeyShown::Plain);
  s.backend = shownKey(r.backend, KeyShown::Plain);
  s.client = shownKey(r.client, KeyShown::Plain);
  s.route = shownKey(r.route, KeyShown::Plain);
  s.elapsed_us = r.elapsed_us;
  s.threshold_ms = threshold_ms;
  MCRING_LOG_LIMITED(
      Notice, "slow request",
      "slow request: pool '%s'%s%s %s key %s took %llu us (slow_request_ms %u), "
      "server %s, client %s, status %s",
      s.pool.c_str(), s.route.empty() ? "" : " route ", s.route.c_str(), s.verb.c_str(),
      s.key.empty() ? "-" : s.key.c_str(), static_cast<unsigned long long>(s.elapsed_us),
      threshold_ms, s.backend.empty() ? "-" : s.backend.c_str(),
      s.client.empty() ? "-" : s.client.c_str(), s.status.empty() ? "-" : s.status.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  s.id = next_id_++;
  auto it = counts_.find(pool);
  if (it == counts_.end()) {
    it = counts_.emplace(std::string(pool), 0).first;
  }
  ++it->second;
  recent_.push_back(std::move(s));
  if (recent_.size() > kKept) {
    recent_.pop_front();
  }
}

std::vector<SlowRequest> SlowRequests::recent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {recent_.begin(), recent_.end()};
}

uint64_t SlowRequests::count(const std::string& pool) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = counts_.find(pool);
  return it == counts_.end() ? 0 : it->second;
}

}  // namespace mcring::stats
