// The process's token buckets of routes' rate_limit, shared by every worker: a route's limit
// is for the whole proxy, as configured, not per worker thread. A worker takes its route's
// bucket when it applies a snapshot; a reload that changes the rate reconfigures the same
// bucket (what was used stays used), one that removes the limit stops using it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "config/config.h"
#include "proxy/common/token_bucket.h"

namespace mcring::core {

class RouteLimits {
 public:
  static RouteLimits& process() {
    static RouteLimits limits;
    return limits;
  }

  std::shared_ptr<common::TokenBucket> bucket(const std::string& listener, const std::string& route,
                                              const config::RateLimitConfig& limit) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& b = buckets_[{listener, route}];
    if (!b) {
      b = std::make_shared<common::TokenBucket>(limit.requests_per_second, limit.burst);
    } else {
      b->configure(limit.requests_per_second, limit.burst);
    }
    return b;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<common::TokenBucket>> buckets_;
};

}  // namespace mcring::core
