// Replication (docs/design.md, "Replication"), as a backend reply sees a write sent to every
// replica of its key: each replica's reply recorded and counted, a cas's copies to the others
// once the primary stored it, and the client's reply composed by the pool's
// replica_write_reply; the `md` of a write's key at a replica that may hold an older value
// (instead of that server's return flush). The replies reach this through replicaWriteHandler(),
// the ReplyHandler each replica's write is sent with. Worker-thread only.
#pragma once

#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/reply_handler.h"
#include "proxy/protocol/reply.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

class BackendServer;

// The handler a write to replica i is sent with, and its tag (`quiet`: a meta q write, whose
// reply ends with the mn mcring added; expected as Expect::UntilNoop).
ReplyHandler& replicaWriteHandler();
uint32_t replicaWriteTag(uint32_t i, bool quiet);

// How a write's reply counts: success, refusal or error (failures are recorded apart).
ReplicaOutcome classifyReplicaReply(const protocol::Reply& rep);

// Replica `i` of `r` sent a reply unit `unit` (with its data block, if any). A quiet request
// may send none before the mn: replicaAnswered then records a success.
void recordReplicaReply(PendingRequest& r, uint32_t i, const protocol::Reply& rep,
                        std::string_view unit);
// Replica i's answer is whole: counts an error against `server`; a cas the primary stored now
// goes to the other replicas (as a plain write, replica_followup). True if replica i answered
// SERVER_ERROR (too large, out of memory): it may still hold the value this write replaced, so
// the caller deletes the key there (an `md` on the same connection) rather than the whole server
// being marked stale: a reachable memcached refusing one item must not be flushed.
bool replicaAnswered(PendingRequest& r, uint32_t i, BackendServer& server);
// Replica i could not be written (no reply: why).
void replicaFailed(PendingRequest& r, uint32_t i, BackendFailure why, BackendServer& server);

// Replicas sent and not answered yet.
uint32_t pendingReplicas(const PendingRequest& r);
// The client's reply is known: replica_write_reply: primary, a replica answered (not an error)
// and every replica before it in preference order failed; all (or primary), none is pending.
bool replicaWriteDecided(const PendingRequest& r);
// Writes the client's reply into r.reply (see replica_write_reply in docs/configuration.md).
void composeReplicaReply(PendingRequest& r, stats::WorkerCounters& c);
// A part of replicated write r is over and r.fragments_left still counts it: if the client's
// reply is now known (replicaWriteDecided, every other part answered), it is composed and r
// completes, possibly before the other replicas answered (their replies are then read in the
// background). Any part: a replica's write, or a warm-up invalidation (dispatch/warmup.h).
void completeDecidedReplicaWrite(PendingRequest& r, stats::WorkerCounters& c);

}  // namespace mcring::core
