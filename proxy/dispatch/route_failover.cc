#include "proxy/dispatch/route_failover.h"

#include <string_view>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"

namespace mcring::core {

namespace {

bool startsWith(net::Buffer& b, std::string_view prefix) {
  return b.size() >= prefix.size() && b.contiguous(prefix.size()) == prefix;
}

bool isRead(protocol::Command c) {
  return protocol::commandClass(c) == protocol::CommandClass::Retrieval ||
         c == protocol::Command::MetaGet;
}

// What makes r go on: an error (a backend's SERVER_ERROR, or mcring's for a failure), its
// server unavailable, or a miss when the route asks for it.
bool failsOver(PendingRequest& r) {
  if (r.backend_failed || startsWith(r.reply, "SERVER_ERROR")) {
    return true;
  }
  if (!r.route->failover_on_miss || !isRead(r.command)) {
    return false;
  }
  if (r.command == protocol::Command::MetaGet) {
    // A quiet mg's miss is no reply at all; otherwise EN.
    return r.route->expect == Expect::UntilNoop ? r.reply.size() == 0 : startsWith(r.reply, "EN");
  }
  return startsWith(r.reply, "END");  // no VALUE before it
}

}  // namespace

bool continueRouteFailover(PendingRequest& r) {
  if (r.route == nullptr || !r.route->failsOver() || r.session == nullptr || r.refused ||
      r.shape != Shape::Direct || r.replica_count > 0 || r.spread_role != SpreadRole::None ||
      !failsOver(r)) {
    return false;
  }
  RouteState& route = *r.route;
  while (route.failsOver()) {
    PoolRuntime* pool = route.failover[route.next++];
    BackendServer* server = pool->currentServer(route.key);
    if (server == nullptr) {
      continue;  // a reload removed the pool
    }
    BackendConnection* conn = server->connectionFor(r.session->id());
    if (conn == nullptr) {
      server->countFailure(server->lastFailure());
      continue;
    }
    if (route.stats != nullptr) {
      stats::bump(route.stats->failovers);
    }
    r.session->releaseHeld(r);
    r.reply.drain(r.reply.size());
    r.units_received = 0;
    r.backend_failed = false;
    r.failed = false;
    r.pool = pool;
    r.fragments_left = 1;
    conn->output().append(route.resend);
    conn->expect(&r, 0, Delivery::Direct, route.expect, route.resend.size());
    return true;
  }
  return false;
}

}  // namespace mcring::core
