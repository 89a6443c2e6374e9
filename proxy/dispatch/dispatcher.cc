// Dispatcher: a request's entry (a routed listener's goes through routed.cc first), its FIFO slot,
// and what every kind shares: per-backend accounting, the line as sent, an unavailable server's
// answer. By request kind: dispatch_keyed.cc, dispatch_retrieval.cc (the multi-get split),
// local_answers.cc; routes: routed.cc; what pool handlers (pool_handler.h) have done:
// dispatch_replicated.cc, dispatch_spread.cc, invalidation.cc.
#include "proxy/dispatch/dispatcher.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <span>

#include "proxy/backend/replica_write.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/dispatch/command_counters.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/route_failover.h"
#include "proxy/dispatch/spread_fill.h"
#include "proxy/dispatch/stats_detail.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_writer.h"
#include "proxy/stats/request_watch.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

void Dispatcher::dispatch(RequestSource& src, PoolRuntime& pool, const protocol::Request& req,
                          std::string_view line) {
  begin(src, pool, req);
  line_ = line;
  if (pool.routed()) {
    dispatchRouted(line);  // routed.cc: to the pool of the key's route
    return;
  }
  dispatchToPool(line);
}

PendingRequest* Dispatcher::newRequest(protocol::Command command) {
  PendingRequest* r = src_->newRequest(command);
  r->pool = pool_;
  // With no watcher and no slow_request_ms: one relaxed load and one config field.
  if (stats::watching() || client_pool_->config().slow_request_ms != 0) [[unlikely]] {
    traceRequest(r);
  }
  if (route_ == nullptr && probe_ == nullptr && key_probes_.empty() && multiget_failover_.empty()) {
    return r;
  }
  RouteState* st = worker_.routeStates().acquire();
  r->route = st;
  st->stats = route_ != nullptr ? route_->stats.get() : nullptr;
  if (failover_ready_) {
    // Its route may send it on to the next pool (route_failover.h): kept whole, never streamed.
    st->failover.assign(failover_pools_.begin(), failover_pools_.end());
    st->failover_on_miss = failover_on_miss_;
    st->expect = failover_expect_;
    st->resend.swap(failover_bytes_);
    worker_.routeStates().holdCopy(st->resend.size());
    st->key.assign(failover_key_);
    r->rewrites = true;
    failover_ready_ = false;
  }
  if (!key_probes_.empty()) {
    // A multi-get's shadowed keys: each compared by hit or miss when it completes (split per
    // key, so that its hits are known: dispatchRetrieval).
    st->key_probes.swap(key_probes_);
  }
  if (probe_ != nullptr) {
    // A shadowed read: its whole reply is compared with the shadow's when complete.
    st->probe = probe_;
    probe_ = nullptr;
    r->rewrites = true;
  }
  return r;
}

void Dispatcher::dispatchToPool(std::string_view line) {
  switch (protocol::commandClass(req_->command)) {
    case CommandClass::Retrieval:
      dispatchRetrieval(line);
      return;
    case CommandClass::Storage:
    case CommandClass::Keyed:
    case CommandClass::Meta:
      dispatchKeyed(line);
      return;
    case CommandClass::MetaNoop: {
      PendingRequest* r = newRequest(req_->command);
      src_->input().drain(req_->line_length);
      src_->completeWith(r, protocol::kMetaNoopLine);
      return;
    }
    case CommandClass::Local:
      answerLocal(line);
      return;
    case CommandClass::Broadcast:
      dispatchFlushAll(line);
      return;
  }
}

uint64_t Dispatcher::sessionId() const {
  return src_->id();
}

void Dispatcher::traceRequest(PendingRequest* r) {
  r->start_ns = common::monotonicNs();
  r->trace_keys = static_cast<uint32_t>(req_->keys.size());
  if (r->trace_keys > 0) {
    r->trace_key.assign(req_->routingKey(line_, 0));
  }
  if (route_ != nullptr) {
    r->trace_route.assign(route_->name);
  }
  traced_ = r;
}

// The request's line as a backend gets it, in head_ (scratch: no allocation once warm), without
// the `noreply` token `t` (empty: none): mcring reads every reply and drops it itself.
const std::string& Dispatcher::lineAsSent(std::string_view line, const protocol::Span& t) {
  head_.assign(line.substr(0, t.empty() ? req_->line_length : t.offset));
  if (!t.empty()) {
    head_.append(line.substr(t.offset + t.length, req_->line_length - t.offset - t.length));
  }
  return head_;
}

// Per-backend accounting of one keyed request: command kind and the key's distinct-key sketch;
// and the pool's hot-key sketch and, with `stats detail on`, its prefix stats.
void Dispatcher::countForBackend(BackendServer& server, std::string_view key) {
  stats::BackendStats& bs = server.stats();
  stats::bump(bs.*kBackendCounterOf[effectIndex(req_->command)]);
  const uint64_t hash = stats::HyperLogLog::hashKey(key);
  bs.keys.add(hash);
  if (traced_ != nullptr && traced_->trace_backend.empty()) [[unlikely]] {
    traced_->trace_backend.assign(server.identity());
  }
  PoolRuntime& pool = server.pool();  // a multi-get across routes spans pools
  if (pool.hot_keys) {
    pool.hot_keys->record(key, hash);
  }
  if (pool.detailOn()) {
    countDetail(pool, req_->command, key);
  }
}

// The key's server is backing off after a failure: discard the request's `bytes` and answer
// at once, without a connect attempt: a read as the pool's unavailable_reads says
// (unavailable.h), anything else with that failure (nothing for classic noreply).
void Dispatcher::failUnavailable(PendingRequest* r, BackendServer& server, uint64_t bytes) {
  src_->input().drain(bytes);
  server.countFailure(server.lastFailure());
  if (r->route != nullptr && r->route->failsOver()) {
    // Its route may have another pool for it (route_failover.h).
    r->backend_failed = true;
    if (!answerUnavailable(*r, 0, server, server.lastFailure(), worker_)) {
      r->reply.append(backendFailureReply(server.lastFailure()));
    }
    if (continueRouteFailover(*r)) {
      return;
    }
    if (r->reply.size() > 0 && r->reply.contiguous(1)[0] == 'S') {  // SERVER_ERROR, not a miss
      stats::bump(worker_.counters().server_errors);
      if (r->route->stats != nullptr) {
        stats::bump(r->route->stats->errors);
      }
      if (r->noreply) {
        r->reply.drain(r->reply.size());
      }
    }
    src_->completeWith(r, std::string_view());
    return;
  }
  if (answerUnavailable(*r, 0, server, server.lastFailure(), worker_)) {
    src_->completeWith(r, std::string_view());
    return;
  }
  stats::bump(worker_.counters().server_errors);
  if (r->route != nullptr && r->route->stats != nullptr) {
    stats::bump(r->route->stats->errors);
  }
  src_->completeWith(r,
                     r->noreply ? std::string_view() : backendFailureReply(server.lastFailure()));
}

}  // namespace mcring::core
