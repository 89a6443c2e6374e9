#include "proxy/dispatch/route_handlers.h"

#include "proxy/common/clock.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

namespace {

constexpr std::string_view kRateLimitedLine = "SERVER_ERROR rate limited\r\n";

}  // namespace

bool CountRoute::admit(RouteContext& ctx, const RouteCall& call) const {
  stats::bump(stats_->requests);
  return next()->admit(ctx, call);
}

RateLimitRoute::RateLimitRoute(std::shared_ptr<common::TokenBucket> bucket,
                               stats::RouteStats* stats, std::unique_ptr<const RouteHandler> next,
                               Clock clock)
    : RouteHandler(std::move(next)),
      bucket_(std::move(bucket)),
      stats_(stats),
      clock_(clock != nullptr ? clock : [] { return common::monotonicNs(); }) {}

bool RateLimitRoute::admit(RouteContext& ctx, const RouteCall& call) const {
  if (!bucket_->tryTake(clock_())) {
    stats::bump(stats_->rate_limited);
    ctx.refuse(kRateLimitedLine);
    return false;
  }
  return next()->admit(ctx, call);
}

bool TtlCapRoute::admit(RouteContext& ctx, const RouteCall& call) const {
  ctx.capTtl(max_ttl_);
  return next()->admit(ctx, call);
}

void ShadowRoute::send(RouteContext& ctx, const RouteCall& call) const {
  const Command c = call.req.command;
  const bool read = protocol::commandClass(c) == CommandClass::Retrieval || c == Command::MetaGet;
  // me (meta debug): a read of the item's metadata, nothing to copy or compare.
  if (c != Command::MetaDebug && !(read && target_.writes_only)) {
    for (size_t i = 0; i < call.key_routes.size(); ++i) {
      if (call.key_routes[i] != call.route || !Shadows::shadows(target_, call.key(i))) {
        continue;
      }
      if (read) {
        ctx.shadowRead(target_, i);
      } else {
        ctx.shadowWrite(target_, i);
      }
    }
  }
  next()->send(ctx, call);
}

void FailoverRoute::send(RouteContext& ctx, const RouteCall& call) const {
  ctx.failOverTo(call, pools_, on_miss_);
  next()->send(ctx, call);
}

void PoolRoute::send(RouteContext& ctx, const RouteCall&) const {
  ctx.sendTo(*pool_);
}

}  // namespace mcring::core
