// unavailable_reads and unavailable_writes: what a request answers for a key whose server could
// not serve it (backing off after a failure, connect failed, connection closed with the request
// in flight, timeout, protocol error). The one place that decides it, for the dispatcher (a
// server known down when the request is dispatched) and for backend connections (a server that
// fails with the request in flight, through DispatchSteps::answerUnavailable).
//
// To a client mcring is one server, and many clients mark a server dead for 15-30 s after one
// SERVER_ERROR. Reads: with `miss` (the default) such keys are misses, the request's other keys
// are served; with `error`, the SERVER_ERROR (a multi-get: that one line). Writes: with `error`
// (the default) the SERVER_ERROR; with `not_stored`, memcached's answer for a write it did not
// apply (NOT_STORED, NOT_FOUND; NS, NF), never success.
//
// Replication's failover tries the other replicas first and calls this for a read only when none
// is left; replicated writes and a spread key's writes are composed elsewhere and keep their
// SERVER_ERROR. Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/protocol/request.h"

namespace mcring::core {

class BackendServer;
class WorkerContext;
struct PoolRuntime;

// Part `fragment` of `r` (a multi-get's fragment; 0 for a Direct request) could not be served by
// `server` because of `why`. If `r` is a read and server's pool says `miss`, answers that part
// as a miss and returns true:
// - get/gets/gat/gats split in fragments: the fragment is done, its keys not hit yet are misses
//   (and take no warm-up second hop); the reply is assembled under END as usual;
// - get/gets/gat/gats forwarded whole: the VALUE units received so far stay, then END;
// - mg: its miss in the client's format (prepareUnavailableRead), nothing for a quiet one.
// Counts the keys answered so (`unavailable_misses`, per backend and per worker) and logs them,
// rate-limited. If `r` is a write (Direct, of no spread key) and the pool says `not_stored`,
// answers it NOT_STORED (set, add, replace, append, prepend), NOT_FOUND (cas, delete, incr,
// decr, touch), NS or NF for ms/md/ma and EN for a binary touch, in the client's format
// (prepareUnavailableAnswer), nothing for classic noreply; counts it (`unavailable_writes`) and
// returns true. Otherwise false: the caller fails the part with why's SERVER_ERROR, as it always
// did. The caller has counted the server's failure.
bool answerUnavailable(PendingRequest& r, uint32_t fragment, BackendServer& server,
                       BackendFailure why, WorkerContext& worker);

// Replication's read failover (failover.h) found no replica left for `keys` keys of multi-get
// `r` whose last server (null if a reload replaced it meanwhile) failed because of `why`. True
// if `pool` says `miss`: the keys stay misses, counted (on `server` if known) and logged; false:
// the caller fails the request with why's SERVER_ERROR.
bool answerUnavailableKeys(const PendingRequest& r, const PoolRuntime& pool, BackendServer* server,
                           BackendFailure why, uint64_t keys, WorkerContext& worker);

// Called when a keyed request is dispatched (before it is sent): an mg remembers its miss in the
// client's format, and with `pool`'s unavailable_writes: not_stored an ms/md/ma its NS or NF, in
// case its server fails with it in flight. Nothing for other commands.
void prepareUnavailableAnswer(PendingRequest& r, const PoolRuntime& pool,
                              const protocol::Request& req, std::string_view line);

}  // namespace mcring::core
