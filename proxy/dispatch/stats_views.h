// memcached's stats views and `version`, for a pool: asked of every server of the pool over the
// worker's backend connections, merged (protocol/stats_merge.h) and kept for a second. For a
// routed listener: asked of every server of the pools its routes serve from, each memcached once
// (serving_pools.h), merged the same way.
//
// One fetch per pool and view at a time: a client request for a view whose answers are under a
// second old is answered from them at once; otherwise it waits for the fetch in flight, or starts
// one. So a storm of `stats items` from any number of clients costs each server at most about one
// `stats items` per second per worker. A fetch sends its own request (a detached PendingRequest
// whose owner is the fetch) to each server; a server that is down, answers an error or has not
// answered within 1 s (or the pool's `timeout`, if shorter) is left out and counted, so a view
// never waits longer than that. `stats cachedump` is never cached: each request fetches. Per
// worker; worker-thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/request_source.h"
#include "proxy/net/event_loop.h"
#include "proxy/protocol/stats_merge.h"
#include "proxy/stats/stats_renderer.h"

namespace mcring::core {

class StatsViews {
 public:
  // How long servers' answers are reused.
  static constexpr uint64_t kFreshMs = 1000;
  // The longest a view waits for a server (less if the pool's timeout is shorter).
  static constexpr uint32_t kDeadlineMs = 1000;
  // Replies up to this size are not charged to the client's memory budget (stats_views.cc).
  static constexpr size_t kUnbudgetedReply = 64 * 1024;

  StatsViews(WorkerContext& worker, const stats::StatsRenderer& renderer);
  ~StatsViews();
  StatsViews(const StatsViews&) = delete;
  StatsViews& operator=(const StatsViews&) = delete;

  const stats::StatsRenderer& renderer() const { return renderer_; }

  // Answers `r`, a request of `src` already in its FIFO and drained from its input: `stats
  // <args>` for a view memcached has, or `version` (view Version, args empty). `pool` is the
  // client's pool: a routed listener for its routes' pools.
  void answer(RequestSource& src, PoolRuntime& pool, PendingRequest* r, protocol::StatsView view,
              std::string_view args);

 private:
  class Fetch;
  friend class Fetch;
  std::string versionOf(const std::string& pool) const;
  void learnVersion(const std::string& pool, const std::string& version);

  WorkerContext& worker_;
  const stats::StatsRenderer& renderer_;
  // By pool name and the `stats` arguments (or "version").
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Fetch>> fetches_;
  // The memcached version each pool's servers last reported (the lowest of them).
  std::map<std::string, std::string> versions_;
};

}  // namespace mcring::core
