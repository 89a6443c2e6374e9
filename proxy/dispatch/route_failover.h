// A route's failover (config `failover`, `failover_on_miss`; mcrouter's FailoverRoute and
// MissFailoverRoute): a single-key request whose pool answered an error, timed out or was
// unavailable (and, with failover_on_miss, a read that missed) is sent, as it was first sent,
// to the next pool of the route's list, in order, until one serves it or none is left; then the
// last answer stands. A multi-key get is not failed over (its keys are answered by their pool's
// unavailable_reads); nor are a replicated write or a hot key's spread write, which answer from
// several servers already. Worker-thread only.
#pragma once

#include "proxy/backend/pending_request.h"

namespace mcring::core {

// Called when r's parts have all answered: true if r went on to its route's next pool (its
// reply is then pending again).
bool continueRouteFailover(PendingRequest& r);

}  // namespace mcring::core
