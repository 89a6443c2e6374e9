// Warm migration: for a window after a membership change, a miss on a key whose server changed
// is answered from the key's previous server, and the value is copied to the new one.
//
// The worker knows both placements at the moment it switches snapshots, so it can do what
// mcrouter's WarmUpRoute needs wiring for. Per pool, one window: a second change closes it and
// opens a new one whose previous placement is the one that change replaced (so the oldest
// placement consulted is always the one just before the latest change).
//
// Ordering rules that keep newer values safe:
// - the copy is a meta `ms ... ME` (add): it never replaces a value written meanwhile;
// - a write or delete of a moved key also deletes the previous server's copy, and its reply
//   waits for that delete, so a later read cannot fetch the old value again;
// - a write or delete that arrives while a fetch of the same key is in flight cancels the
//   fetch's copy (a pipelined `get k; delete k` cannot resurrect k);
// - a read answered by warm-up returns only after its copy was stored or refused, so a write
//   sent after that reply always lands after the copy.
// Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "config/topology.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/reply_handler.h"
#include "proxy/backend/warmup_state.h"
#include "proxy/protocol/reply.h"

namespace mcring::core {

class BackendServer;
class WorkerContext;
struct PoolRuntime;

// True if the two snapshots may place some key differently (servers, weights, names or routing
// options differ).
bool placementChanged(const config::PoolTopology& a, const config::PoolTopology& b);

// Second hop of a multi-key get (classic get/gets/gat/gats) once every fragment answered: sends
// r reads moved keys (an mg, or a multi-get within one pool): a miss may take a second hop to
// the key's previous server. Gives r its warm-up state (backend/warm_request.h).
void startWarmRead(PendingRequest& r, WorkerContext& worker);

// `mg <key> v f t c` to the previous server of each missed moved key. Returns true if any was
// sent (the request completes when they and their copies are answered).
bool launchMultigetWarmup(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker,
                          uint64_t session_id);

// Second hop of an `mg` that missed on its new server. True if sent.
bool launchMetaWarmup(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker,
                      uint64_t session_id);

// The handler a write or delete of a moved key sends its `md` to the key's previous server with
// (Dispatcher::invalidatePrevious): a hit there makes a delete's NOT_FOUND a DELETED
// (WarmRequest::invalidated_hit); the request's reply waits for it.
ReplyHandler& warmInvalidationHandler();

// Client `mg` flags the warm-up path can answer itself (v f t c k s O); others go cold.
bool metaFlagsWarmable(std::string_view flags);

}  // namespace mcring::core
