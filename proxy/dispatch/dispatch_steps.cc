// dispatchSteps(): the backend layer's view of warm-up and multi-get assembly.
#include "proxy/dispatch/dispatch_steps.h"

#include "proxy/dispatch/completion.h"
#include "proxy/dispatch/spread_fill.h"
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
  void onWarmupReply(PendingRequest& r, uint32_t key_index, const protocol::Reply& rep,
                     std::string_view unit, BackendServer& from) const override {
    core::onWarmupReply(r, key_index, rep, unit, from);
  }
  void onWarmupCopyReply(const protocol::Reply& rep, WorkerContext& worker) const override {
    core::onWarmupCopyReply(rep, worker);
  }
  void onSpreadFillReply(PendingRequest& r, const protocol::Reply& rep, std::string_view unit,
                         WorkerContext& worker) const override {
    core::onSpreadFillReply(r, rep, unit, worker);
  }
};

}  // namespace

const DispatchSteps& dispatchSteps() {
  static const Steps steps;
  return steps;
}

}  // namespace mcring::core
