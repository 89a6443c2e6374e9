// Hot-key spread fills (docs/design.md, "Hot-key spread"): a copy of a spread key becomes
// readable only by a fill, a background read of the primary (`mg <key> v f t`) and a write of
// the copy (`ms <key> <len> F<flags> T<ttl>`), which counts only if no write of the key started
// in between. Detached requests on the worker's own backend connections: no client sees their
// replies. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "proxy/backend/hot_spread.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/protocol/reply.h"

namespace mcring::core {

// Starts a fill of the entry's first unfilled copy, unless one is in flight (on any worker), a
// write of the key is in flight, or every copy is filled. The caller checked that the pool's
// set is settled (every worker applied it, and its settle time passed) and the key spreading.
void startSpreadFill(PoolRuntime& pool, const std::shared_ptr<SpreadEntry>& entry,
                     WorkerContext& worker, uint64_t session_id);

}  // namespace mcring::core
