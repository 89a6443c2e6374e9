// What a client session needs of its worker beyond the data plane's WorkerContext: deferred
// destruction of itself, the `stats` renderer and the worker's stats views of its pools.
// Control's Worker implements it.
// Worker-thread only.
#pragma once

#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/metadump.h"
#include "proxy/dispatch/shadow.h"
#include "proxy/dispatch/stats_views.h"
#include "proxy/stats/client_table.h"
#include "proxy/stats/stats_renderer.h"

namespace mcring::core {

class ClientSession;

class SessionContext : public WorkerContext {
 public:
  SessionContext(const DispatchSteps& steps, const stats::StatsRenderer& reporter)
      : WorkerContext(steps),
        reporter_(reporter),
        stats_views_(*this, reporter),
        metadumps_(*this),
        shadows_(*this) {}

  const stats::StatsRenderer& reporter() const { return reporter_; }
  // memcached's stats views and version of this worker's pools, fetched and cached.
  StatsViews& statsViews() { return stats_views_; }
  // `lru_crawler metadump`s in progress, over their own connections.
  Metadumps& metadumps() { return metadumps_; }
  // Routes' shadow copies and their comparisons (dispatch/shadow.h).
  Shadows& shadows() { return shadows_; }
  // Requests and bytes per client address (stats/client_table.h), read by the admin endpoint.
  stats::ClientTable& clients() { return clients_; }
  const stats::ClientTable& clients() const { return clients_; }
  // Deferred destruction: a session ends itself from inside its own callbacks.
  virtual void retire(ClientSession* session) = 0;
  // Memory for large requests being received was freed: wake the sessions waiting for it soon
  // (not from inside the session that freed it).
  virtual void scheduleInputWake() = 0;
  // A session started waiting for input memory: the worker checks the waiters now and then for
  // clients that went away (abandonIfPeerGone).
  virtual void onInputWaiting() = 0;

 private:
  const stats::StatsRenderer& reporter_;
  stats::ClientTable clients_;
  // Destroyed before WorkerContext's request pool, which its requests return to.
  StatsViews stats_views_;
  Metadumps metadumps_;
  Shadows shadows_;
};

}  // namespace mcring::core
