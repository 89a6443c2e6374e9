// What a request's features make of the replies the backend connection parses itself
// (Delivery::Direct: a request's own reply from one server), supplied by dispatch with the
// request (PendingRequest::observer; docs/design.md §1). The connection frames a Direct reply,
// counts its hits and misses, applies classic noreply and forwards it to the client's reply;
// what the reply means to a feature (a spread copy that lost its value, a warm-up second hop, a
// replicated read going on to the next replica) is the observer's. A request without feature
// state has no observer and pays one null check. Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/protocol/reply.h"

namespace mcring::core {

struct PendingRequest;
class BackendConnection;

// Which part of a Direct reply the observer is shown.
enum class DirectUnit : uint8_t {
  Whole,       // the one unit of a one-unit reply (Expect::OneUnit)
  Quiet,       // a unit of a quiet meta request's reply, before the mn mcring added (UntilNoop)
  QuietEmpty,  // that mn, with no unit before it: memcached's q hid the reply (a quiet mg's miss)
};

class DirectReplyObserver {
 public:
  virtual ~DirectReplyObserver() = default;

  // A unit of r's reply read on `conn` (`rep` its parse, `line` its bytes from the reply line
  // on), before the connection counts it and forwards it to r's reply, which it always does: an
  // observer may only note what the unit means, or set off more parts that r's reply waits for
  // (r.fragments_left). A retrieval's VALUE and END units are not shown (a get with feature
  // state is sent as a multi-get).
  virtual void onUnit(BackendConnection& conn, PendingRequest& r, DirectUnit unit,
                      const protocol::Reply& rep, std::string_view line) const = 0;

  // r's reply will not come from `conn` (why). True: r's features settle the failure when r
  // completes (the next replica is asked), so the connection leaves only its failure line in
  // r's reply, and neither answers it by unavailable_reads / unavailable_writes nor counts it as
  // a server error. False: it fails as a plain request's.
  virtual bool onFailure(BackendConnection& conn, PendingRequest& r, BackendFailure why) const = 0;

  // Whether r may be sent again after its connection closed under it (only if the connection's
  // own conditions allow it too: BackendConnection::replayable). False for a request whose
  // features keep state tied to what was sent (a warm-up read's second hops).
  virtual bool replayable(const PendingRequest& r) const = 0;
};

}  // namespace mcring::core
