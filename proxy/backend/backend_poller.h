// Asks every backend for its own `stats` on an interval (items held, bytes, evictions).
//
// Runs on the main thread's loop with one short-lived connection per backend per round, so it
// never touches the workers' pipelined connections. A backend that does not answer within the
// round keeps its last known figures, marked stale by their age.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "config/topology.h"
#include "proxy/backend/pool_security.h"
#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"

namespace mcring::core {

struct BackendItems {
  uint64_t curr_items = 0;
  uint64_t bytes = 0;
  uint64_t evictions = 0;
  uint64_t limit_maxbytes = 0;
  int64_t updated = 0;  // unix seconds of the last answer; 0 never
};

class BackendPoller {
 public:
  BackendPoller(net::EventLoop& loop, uint32_t interval_s);
  ~BackendPoller();
  void setTopology(std::shared_ptr<const config::Topology> topology,
                   std::shared_ptr<const PoolTlsMap> tls);
  // Any thread: last figures by (pool, identity).
  std::map<std::pair<std::string, std::string>, BackendItems> snapshot() const;

 private:
  class Probe;
  void round();
  void store(const std::string& pool, const std::string& identity, const BackendItems& items);

  net::EventLoop& loop_;
  uint32_t interval_s_;
  std::shared_ptr<const config::Topology> topology_;
  std::shared_ptr<const PoolTlsMap> tls_;
  std::unique_ptr<net::Timer> timer_;
  std::vector<std::unique_ptr<Probe>> probes_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, BackendItems> items_;
};

}  // namespace mcring::core
