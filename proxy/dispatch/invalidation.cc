// Dispatcher: deleting a key's copy elsewhere (a set refused as too large; warm migration's
// previous server).
#include <algorithm>
#include <array>
#include <span>

#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

void Dispatcher::invalidateKey(std::string_view line) {
  const std::string_view key = req_->routingKey(line, 0);
  if (pool_->config().routing.replicas > 1) {
    // Every replica may hold the old value.
    std::array<uint32_t, kReplicaSlots> set{};
    const uint32_t n =
        pool_->topology->router->replicaSet(key, std::span<uint32_t, routing::kMaxReplicas>(set));
    for (uint32_t i = 0; i < n; ++i) {
      invalidateAt(*pool_->by_index[set[i]], line);
    }
    return;
  }
  invalidateAt(*pool_->by_index[pool_->route(key)], line);
}

void Dispatcher::invalidateAt(BackendServer& server, std::string_view line) {
  BackendConnection* conn = server.connectionFor(src_->id());
  if (conn == nullptr) {
    return;
  }
  // Its reply (HD or NF) is nobody's business: a noreply request with no FIFO slot of its own
  // would break ordering, so it rides in a detached request that is never flushed.
  PendingRequest* r = worker_.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->noreply = true;
  r->command = Command::MetaDelete;  // a write: never answered as a miss (unavailable.h)
  protocol::RequestWriter md(conn->output());
  md.metaDelete(req_->keys[0].in(line), req_->key_base64);
  conn->expect(server, r, 0, Delivery::Direct, Expect::OneUnit, md.written());
  worker_.requests().release(r);  // the backend's reference keeps it until the reply
}

void Dispatcher::invalidateTooLarge(RequestSource& src, PoolRuntime& pool,
                                    const protocol::Request& req, std::string_view line) {
  begin(src, pool, req);
  line_ = line;
  invalidateKey(line);
}

// Warm migration: a write or delete of a moved key also deletes the previous server's copy
// (so that neither a later warm-up fetch nor a rollback of the change brings the old value
// back), and cancels copies of fetches of it in flight. The request's reply waits for it.
void Dispatcher::invalidatePrevious(KeyedCall& call, BackendServer& previous) {
  invalidateAtPrevious(call.r, previous, call.line);
}

void Dispatcher::invalidateAtPrevious(PendingRequest* r, BackendServer& prev,
                                      std::string_view line) {
  worker_.warmup().cancelCopies(req_->routingKey(line, 0));
  r->rewrites = true;  // a delete's NOT_FOUND may become DELETED (BackendConnection::finish)
  BackendConnection* conn = prev.connectionFor(src_->id());
  if (conn == nullptr) {
    return;  // unreachable: it serves nobody, and a fetch from it fails too
  }
  protocol::RequestWriter md(conn->output());
  md.metaDelete(req_->keys[0].in(line), req_->key_base64);
  if (r->warm == nullptr) {
    r->warm = worker_.warmRequests().acquire();  // for what its md finds (invalidated_hit)
  }
  ++r->fragments_left;
  stats::bump(worker_.counters().warmup_invalidations);
  conn->expect(prev, r, warmInvalidationHandler(), 0, Expect::OneUnit, md.written());
}

}  // namespace mcring::core
