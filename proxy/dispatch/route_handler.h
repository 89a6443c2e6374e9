// A route of a routed listener as a value (docs/design.md §9, "The route tree"): a chain of
// small route handlers built from its config (route_tree.h), each one capability (counting, a
// rate limit, a TTL cap, a shadow, failover) over a leaf that names the route's pool. Dispatch
// evaluates the chain for a request in two passes:
//   admit - before anything is sent: a handler may answer the request itself (refuse it) or
//           constrain it (cap its TTL); every route a multi-get's keys take is admitted first,
//           so a refusal by any of them sends nothing anywhere;
//   send  - the request as admitted goes out: side copies, what failover keeps, and at the
//           leaf the pool that serves the route's keys.
// A handler decides; the RouteContext (dispatch's Dispatcher) does the sending, so handlers
// never see buffers or connections and can be tested against a recording context
// (tests/unit/dataplane/route_tree_test.cc). A new capability is a new handler and one line
// in buildRouteTree. Worker-thread only; immutable once built.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "proxy/protocol/request.h"

namespace mcring::core {

struct PoolRuntime;
struct ShadowTarget;  // dispatch/shadow.h

// A request as one route sees it: the keys of it this route takes.
struct RouteCall {
  const protocol::Request& req;
  std::string_view line;
  // The route of each of the request's keys (an index in the listener's routes); this call is
  // for the keys whose entry is `route`. One entry for a one-key request.
  std::span<const uint32_t> key_routes;
  uint32_t route = 0;

  bool oneKey() const { return key_routes.size() == 1; }
  // Key i as it is routed (a binary client's long key: decoded).
  std::string_view key(size_t i) const {
    return oneKey() ? req.routingKey(line, 0) : req.keys[i].in(line);
  }
};

// What a handler can do to the request it routes; the Dispatcher implements it.
class RouteContext {
 public:
  // Answers the request here with `reply` (an error memcached-style; sent even for noreply).
  virtual void refuse(std::string_view reply) = 0;
  // The request's TTLs are to be at most `max_ttl` (0, "never", included); the smallest cap of
  // the routes it takes applies, to the commands that set a TTL.
  virtual void capTtl(uint32_t max_ttl) = 0;
  // Copies of key `i` of the request to the shadow pool: a write as sent; a read as `mg <key> v`,
  // whose answer is compared with the primary's for that key (ShadowProbe: hit or miss and the
  // value's digest for a one-key read; hit or miss for a multi-get's key).
  virtual void shadowWrite(const ShadowTarget& target, size_t i) = 0;
  virtual void shadowRead(const ShadowTarget& target, size_t i) = 0;
  // The call's keys go on to these pools, in order, if their pool fails them (and on a miss,
  // with on_miss): a one-key request keeps what it needs to be sent again, a multi-get which of
  // its keys may move.
  virtual void failOverTo(const RouteCall& call, std::span<PoolRuntime* const> pools,
                          bool on_miss) = 0;
  // The route's keys go to `pool`, through the pool's own dispatch (replication, spread,
  // warm-up, unavailable_* answers).
  virtual void sendTo(PoolRuntime& pool) = 0;

 protected:
  ~RouteContext() = default;
};

class RouteHandler {
 public:
  explicit RouteHandler(std::unique_ptr<const RouteHandler> next) : next_(std::move(next)) {}
  virtual ~RouteHandler() = default;
  RouteHandler(const RouteHandler&) = delete;
  RouteHandler& operator=(const RouteHandler&) = delete;

  // False: the request was answered here (ctx.refuse) and is sent nowhere.
  virtual bool admit(RouteContext& ctx, const RouteCall& call) const {
    return next_->admit(ctx, call);
  }
  virtual void send(RouteContext& ctx, const RouteCall& call) const { next_->send(ctx, call); }

  // The next handler of the chain (null at the leaf).
  const RouteHandler* next() const { return next_.get(); }
  // What the handler is, for `stats routes`-style descriptions and tests ("rate_limit", ...).
  virtual std::string_view kind() const = 0;

 private:
  std::unique_ptr<const RouteHandler> next_;
};

}  // namespace mcring::core
