// dispatchSteps(): the backend layer's view of request completion, unavailable reads and an
// mg's warm-up hop.
#include "proxy/dispatch/dispatch_steps.h"

#include "proxy/dispatch/completion.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/dispatch/warmup.h"

namespace mcring::core {
namespace {

class Steps final : public DispatchSteps {
 public:
  bool complete(PendingRequest& r, WorkerContext& worker) const override {
    return completeRequest(r, worker);
  }
  bool answerUnavailable(PendingRequest& r, uint32_t fragment, BackendServer& server,
                         BackendFailure why, WorkerContext& worker) const override {
    return core::answerUnavailable(r, fragment, server, why, worker);
  }
  bool launchMetaWarmup(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker,
                        uint64_t session_id) const override {
    return core::launchMetaWarmup(r, pool, worker, session_id);
  }
};

}  // namespace

const DispatchSteps& dispatchSteps() {
  static const Steps steps;
  return steps;
}

}  // namespace mcring::core
