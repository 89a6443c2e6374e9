// The slow-request log as the admin endpoint shows it (stats/slow_requests.h): the
// `mcring_slow_requests_total{pool}` family and the `/slow` JSON view the console reads.
// Main thread (the admin endpoint).
#pragma once

#include <string>

#include "config/topology.h"

namespace mcring::core {

// One `mcring_slow_requests_total` line per pool of `topology` (0 for a pool with none).
void appendSlowMetrics(std::string* out, const config::Topology* topology);
// {"pools": [{"pool", "slow_request_ms", "count"}], "requests": [the last ones, newest first]}
std::string slowRequestsJson(const config::Topology* topology);

}  // namespace mcring::core
