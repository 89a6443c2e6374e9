// The slow-request log (a pool's `slow_request_ms`): requests whose reply took longer than the
// pool allows, counted per pool (`mcring_slow_requests_total`), logged (rate-limited: at most 5
// lines a second, the rest reported as one "suppressed" line), and the last kKept kept for the
// admin view (`/slow`) and the console. Any thread; a mutex taken only for a slow request and by
// readers.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stats/request_line.h"

namespace mcring::stats {

struct SlowRequest {
  uint64_t id = 0;
  int64_t time_ms = 0;  // unix ms
  std::string pool;
  std::string verb;
  std::string key;  // as log_keys shows it
  uint32_t keys = 0;
  std::string status;
  std::string backend;
  std::string client;
  std::string route;
  uint64_t elapsed_us = 0;
  uint32_t threshold_ms = 0;
};

class SlowRequests {
 public:
  static constexpr size_t kKept = 32;

  static SlowRequests& instance();

  void record(std::string_view pool, uint32_t threshold_ms, const RequestRecord& r, KeyShown mode);
  std::vector<SlowRequest> recent() const;  // oldest first
  uint64_t count(const std::string& pool) const;

 private:
  mutable std::mutex mutex_;
  std::deque<SlowRequest> recent_;
  std::map<std::string, uint64_t, std::less<>> counts_;
  uint64_t next_id_ = 1;
};

}  // namespace mcring::stats
