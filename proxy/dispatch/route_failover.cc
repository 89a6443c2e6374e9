#include "proxy/dispatch/route_failover.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/unavailable.h"

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

// The keys not hit of r's failed fragments (and its misses, where the key's route fails over on
// a miss) to their routes' next pools, in new fragments by server; a fragment that cannot even
// be sent fails at once and its keys move again, until something was sent or none can move.
bool moveMultigetKeys(PendingRequest& r, RouteState& st) {
  for (;;) {
    FragmentRound round(r);
    uint32_t moved = 0;
    for (uint32_t i = 0; i < r.key_count; ++i) {
      RouteState::KeyFailover& kf = st.key_failover[i];
      const uint32_t f = r.key_fragment[i];
      if (r.key_hit_length[i] != 0 || f >= round.first() || kf.next >= kf.count) {
        continue;
      }
      if (!r.fragments[f].failed && !kf.on_miss) {
        continue;  // a miss, and misses do not fail over on its route
      }
      const std::string_view key = multigetKey(r, i);
      BackendServer* to = nullptr;
      PoolRuntime* to_pool = nullptr;
      while (to == nullptr && kf.next < kf.count) {
        to_pool = st.key_pools[kf.offset + kf.next++];
        to = to_pool->currentServer(key);
      }
      if (to == nullptr) {
        continue;  // a reload removed the pools left
      }
      if (kf.stats != nullptr) {
        stats::bump(kf.stats->failovers);
      }
      auto at = std::find(st.servers.begin(), st.servers.end(), to);
      const auto server = static_cast<uint32_t>(at - st.servers.begin());
      if (at == st.servers.end()) {
        st.servers.push_back(to);
        st.server_pools.push_back(to_pool);
      }
      const uint32_t nf = round.join(server, key.size() + 1);
      r.fragments[nf].key_indices.push_back(i);
      r.key_fragment[i] = nf;
      stats::bump(to->stats().get_keys);
      ++moved;
    }
    if (moved == 0) {
      return false;
    }
    // This round's servers were all taken from their pools just now: none is gone.
    if (round.send(r.session->id(), [&](const Fragment& fr) -> BackendServer& {
          return *st.servers[fr.server];
        }) > 0) {
      return true;
    }
  }
}

// No pool is left for the keys of failed fragments that were not hit: the pool of the server
// that failed them answers them by its unavailable_reads (misses), or the multi-get fails, as
// without failover.
void settleMultiget(PendingRequest& r, const RouteState& st, WorkerContext& worker) {
  settleFailedFragments(
      r, worker, [&](const Fragment& fr, const PoolRuntime** policy, BackendServer** server) {
        // Its server, if a reload did not remove it meanwhile (then it may be gone: not counted).
        const PoolRuntime& pool = *st.server_pools[fr.server];
        *policy = &pool;
        *server = st.servers[fr.server];
        if (std::find(pool.by_index.begin(), pool.by_index.end(), *server) == pool.by_index.end()) {
          *server = nullptr;
        }
      });
}

}  // namespace

bool continueRouteMultiget(PendingRequest& r, WorkerContext& worker) {
  if (r.route == nullptr || !r.route->defersFragmentFailures()) {
    return false;
  }
  RouteState& st = *r.route;
  if (r.session != nullptr && !r.refused && moveMultigetKeys(r, st)) {
    return true;
  }
  settleMultiget(r, st, worker);
  return false;
}

bool continueRouteFailover(PendingRequest& r) {
  if (r.route == nullptr || !r.route->failsOver() || r.session == nullptr || r.refused ||
      r.shape != Shape::Direct || r.replica != nullptr || spreadRole(r) != SpreadRole::None ||
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
    conn->expect(*server, &r, 0, Delivery::Direct, route.expect, route.resend.size());
    return true;
  }
  return false;
}

}  // namespace mcring::core
