// dispatchSteps(): the backend layer's view of request completion and unavailable reads.
#include "proxy/dispatch/dispatch_steps.h"

#include "proxy/dispatch/completion.h"
#include "proxy/dispatch/unavailable.h"

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
};

}  // namespace

const DispatchSteps& dispatchSteps() {
  static const Steps steps;
  return steps;
}

}  // namespace mcring::core
