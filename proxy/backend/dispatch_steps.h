// The dispatch steps a backend reply can set off: composing a completed request's reply, what a
// request its server could not serve answers. (Features' own replies go to the ReplyHandler
// their requests were sent with, reply_handler.h; what features make of a Direct reply, to the
// request's DirectReplyObserver, direct_reply_observer.h.) Backend connections match reply units
// to requests and hand them on through this interface; dispatch implements it
// (dispatch/dispatch_steps.h), so backend never depends on dispatch. Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/protocol/reply.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

class BackendServer;
class WorkerContext;
struct PoolRuntime;

class DispatchSteps {
 public:
  virtual ~DispatchSteps() = default;
  // Every part of `r` has answered: compose its reply (dispatch/completion.h). False if a
  // second hop was launched instead; it holds `r` then.
  virtual bool complete(PendingRequest& r, WorkerContext& worker) const = 0;
  // dispatch/unavailable.h: part `fragment` of `r` could not be served by `server` (why). True
  // if the pool's unavailable_reads answered it (a read, as a miss: the part is done); false:
  // fail it with why's SERVER_ERROR, as before.
  virtual bool answerUnavailable(PendingRequest& r, uint32_t fragment, BackendServer& server,
                                 BackendFailure why, WorkerContext& worker) const = 0;
};

}  // namespace mcring::core
