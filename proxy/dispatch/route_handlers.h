// The route handlers (route_handler.h), one capability each. buildRouteTree (route_tree.h)
// composes them from a route's config; none knows another.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "proxy/common/token_bucket.h"
#include "proxy/dispatch/route_handler.h"
#include "proxy/dispatch/shadow.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

// Counts the request on the route (`stats routes` requests; a multi-get once per route).
class CountRoute final : public RouteHandler {
 public:
  CountRoute(stats::RouteStats* stats, std::unique_ptr<const RouteHandler> next)
      : RouteHandler(std::move(next)), stats_(stats) {}
  bool admit(RouteContext& ctx, const RouteCall& call) const override;
  std::string_view kind() const override { return "count"; }

 private:
  stats::RouteStats* stats_;
};

// rate_limit: a token from the process's bucket for the route, or `SERVER_ERROR rate limited`
// at once (never queued; mcrouter's RateLimitRoute, memcached proxy's route_ratelim).
class RateLimitRoute final : public RouteHandler {
 public:
  using Clock = uint64_t (*)();  // monotonic ns; tests inject one
  RateLimitRoute(std::shared_ptr<common::TokenBucket> bucket, stats::RouteStats* stats,
                 std::unique_ptr<const RouteHandler> next, Clock clock = nullptr);
  bool admit(RouteContext& ctx, const RouteCall& call) const override;
  std::string_view kind() const override { return "rate_limit"; }

 private:
  std::shared_ptr<common::TokenBucket> bucket_;
  stats::RouteStats* stats_;
  Clock clock_;
};

// max_ttl: the TTLs the request sets are capped (mcrouter's ModifyExptimeRoute, route_ttl).
class TtlCapRoute final : public RouteHandler {
 public:
  TtlCapRoute(uint32_t max_ttl, std::unique_ptr<const RouteHandler> next)
      : RouteHandler(std::move(next)), max_ttl_(max_ttl) {}
  bool admit(RouteContext& ctx, const RouteCall& call) const override;
  std::string_view kind() const override { return "max_ttl"; }

 private:
  uint32_t max_ttl_;
};

// shadow: copies of the route's requests for the target's share of keys, writes only or all
// (mcrouter's ShadowRoute); a read's answers are compared (shadow agreement).
class ShadowRoute final : public RouteHandler {
 public:
  ShadowRoute(ShadowTarget target, std::unique_ptr<const RouteHandler> next)
      : RouteHandler(std::move(next)), target_(target) {}
  void send(RouteContext& ctx, const RouteCall& call) const override;
  std::string_view kind() const override { return "shadow"; }
  const ShadowTarget& target() const { return target_; }

 private:
  ShadowTarget target_;
};

// failover: a request (or a multi-get's key) its pool fails goes on to these pools in order
// (route_failover.h; mcrouter's FailoverRoute and MissFailoverRoute).
class FailoverRoute final : public RouteHandler {
 public:
  FailoverRoute(std::vector<PoolRuntime*> pools, bool on_miss,
                std::unique_ptr<const RouteHandler> next)
      : RouteHandler(std::move(next)), pools_(std::move(pools)), on_miss_(on_miss) {}
  void send(RouteContext& ctx, const RouteCall& call) const override;
  std::string_view kind() const override { return "failover"; }
  std::span<PoolRuntime* const> pools() const { return pools_; }

 private:
  std::vector<PoolRuntime*> pools_;
  bool on_miss_;
};

// The leaf: the route's keys go to its pool.
class PoolRoute final : public RouteHandler {
 public:
  explicit PoolRoute(PoolRuntime* pool) : RouteHandler(nullptr), pool_(pool) {}
  bool admit(RouteContext&, const RouteCall&) const override { return true; }
  void send(RouteContext& ctx, const RouteCall&) const override;
  std::string_view kind() const override { return "pool"; }
  PoolRuntime* pool() const { return pool_; }

 private:
  PoolRuntime* pool_;
};

}  // namespace mcring::core
