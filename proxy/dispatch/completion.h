// The last step of dispatch: once every part of a request has answered, its reply is composed
// here (multi-get assembly under one END, a broadcast's OK, the out-of-memory error of a refused
// reply, a warm-up invalidation's DELETED), or a second hop is launched; a spread write's copies
// are settled first (settleSpreadWrite). Backend connections only
// match reply units to requests; they never shape a client's reply. Worker-thread only.
#pragma once

#include "proxy/backend/pending_request.h"
#include "proxy/backend/worker_context.h"

namespace mcring::core {

// False if a warm-up second hop was launched instead (it holds the request until it answers).
bool completeRequest(PendingRequest& r, WorkerContext& worker);

}  // namespace mcring::core
