// What a reply means, supplied by the module that sends a request (the Routes architecture,
// docs/design.md §1): the backend connection frames reply units and matches them to requests in
// order; a request sent with a ReplyHandler has its units, its failure and its end handed to
// it, and the connection knows nothing of the feature behind it. The connection itself knows
// only reply types (BackendConnection's Delivery: a request's own reply, a multi-get's part, a
// broadcast's OK, a stats view's lines); what a feature makes of a request's own reply, which
// the connection forwards, is the request's DirectReplyObserver's (direct_reply_observer.h).
// Handlers: a route's shadow copies (dispatch/shadow.h),
// warm-up fetches, copies and invalidations (dispatch/warmup.h), hot-key spread fills
// (dispatch/spread_fill.h) and copy writes (spread_write.h), replicated writes and their `md`s
// (replica_write.h), return_flush's flush_all (backend_server.cc).
//
// A request sent with a handler is never sent again after its connection closed under it (only
// retrievals with no state of their own are: BackendConnection::replayable). One handler object
// may serve every request of its kind on every connection: what it needs of a request is in the
// request and its `tag`, what it needs of the server and worker comes with the connection.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/protocol/reply.h"

namespace mcring::core {

struct PendingRequest;
class BackendConnection;

enum class UnitVerdict : uint8_t {
  More,    // the request expects further units
  Done,    // its reply is over
  Desync,  // not a unit this request can have: the connection's replies no longer match
};

class ReplyHandler {
 public:
  virtual ~ReplyHandler() = default;

  // One whole unit of r's reply, read on `conn`: `unit` is its bytes (line and data block, if
  // any); the connection drops them afterwards.
  virtual UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                             const protocol::Reply& rep, std::string_view unit) = 0;
  // r's reply will not come (`conn` failed, closed or timed out).
  virtual void onFailure(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                         BackendFailure why) = 0;

  // r's expectation on `conn` is over (after a Done unit or a failure), before the connection
  // counts the part answered (r.fragments_left still counts it) and drops its reference. A
  // handler may complete r here, before its other parts answered (r.complete: the connection
  // then only drops its reference when the last part is over).
  virtual void onFinished(BackendConnection& conn, PendingRequest& r, uint32_t tag) {}

  // `conn` was closed by memcached under r's request, which did not answer and now fails
  // (onFailure follows). The handler may write to `conn` again (ensureConnected first).
  // False: it could not be connected again; the connection tells no further request.
  virtual bool onConnectionLost(BackendConnection& conn, PendingRequest& r, uint32_t tag) {
    return true;
  }

  // Whether r's request may change an item (BackendConnection::changesInFlight).
  virtual bool changesItem(const PendingRequest& r, uint32_t tag) const { return true; }
};

}  // namespace mcring::core
