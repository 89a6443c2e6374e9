// Read failover (replicas > 1; docs/design.md, "Replication"): the one place where a read that
// its server could not serve goes on to the key's next replica.
//
// A read of a replicated pool goes to the first *readable* replica of its key (not backing off,
// not stale: BackendServer::readable). What its server could not serve is marked where the
// failure shows (backend_connection.cc: a fragment's `failed`, a Direct mg's
// ReadFailover::failed_at: an error reply, a timeout, a closed connection; with
// read_failover_on_miss or in the server's return window, a miss too). When every part of the
// request has answered, completeRequest calls continueReadFailover: each such key goes to its next
// readable replica, in new fragments (a multi-get's reply is still assembled in the client's key
// order), and the request waits for them. When a key has no replica left, its failure stands: the
// whole multi-get's SERVER_ERROR, as without replication (the place where an unavailable_reads
// policy would answer it). Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"

namespace mcring::core {

// The replica a read of `key` goes to: the first readable one of its replica set (counting a
// failover read at each one skipped), else the primary. replicas: 1: the primary.
uint32_t readReplica(PoolRuntime& pool, WorkerContext& worker, std::string_view key,
                     uint64_t session_id);

// All parts of r answered: sends what failed (or missed, where that fails over) on to the next
// replicas. True if it did (r waits for them); false if r's reply is final now (then any part
// still failed has set r.failed / left its failure in r.reply).
bool continueReadFailover(PendingRequest& r, WorkerContext& worker);

}  // namespace mcring::core
