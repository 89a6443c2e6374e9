// A route's failover (config `failover`, `failover_on_miss`; mcrouter's FailoverRoute and
// MissFailoverRoute): a single-key request whose pool answered an error, timed out or was
// unavailable (and, with failover_on_miss, a read that missed) is sent, as it was first sent,
// to the next pool of the route's list, in order, until one serves it or none is left; then the
// last answer stands. A multi-get's keys go on the same way, each by its own route: the keys of
// a part that failed (or missed, with failover_on_miss) and were not hit are sent, grouped by
// server, to their next pools, until none is left; then the pool's unavailable_reads answers
// them or the get fails, as without failover. Not failed over: a replicated write or a hot key's
// spread write, which answer from several servers already, and a multi-get within a pool whose
// own replica failover or warm-up handles its keys. Worker-thread only.
#pragma once

#include "proxy/backend/pending_request.h"
#include "proxy/backend/worker_context.h"

namespace mcring::core {

// Called when r's parts have all answered: true if r went on to its route's next pool (its
// reply is then pending again).
bool continueRouteFailover(PendingRequest& r);

// Called when multi-get r's fragments have all answered: true if some of its keys went on to
// their routes' next pools (it is pending again); else its failed parts are settled.
bool continueRouteMultiget(PendingRequest& r, WorkerContext& worker);

}  // namespace mcring::core
