// Multi-key gets split across backends: building the per-backend fragments and reassembling
// the VALUE units in the client's key order under one END.
#pragma once

#include <array>
#include <string_view>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

// multigetKey and multigetValueSink, which backend connections use too, are in
// pending_request.h.

// Called once every fragment is done: completes the client's reply in r.reply (after the units
// multigetValueSink put there). A failed fragment fails the whole reply (twemproxy).
void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters);

// A round of failover for a multi-get's keys (failover.h: to their next replicas; route_failover.h:
// to their routes' next pools): the keys that move join new fragments appended to r, one per
// server and line, which are then sent together.
class FragmentRound {
 public:
  explicit FragmentRound(PendingRequest& r) : r_(r), first_(r.fragment_count) {}
  // The first fragment of this round: fragments before it are the ones whose keys may move.
  uint32_t first() const { return first_; }
  // The fragment of this round that a moved key of `add` line bytes joins for `server` (its
  // meaning is the caller's: Fragment::server): one with room on its line, else a new one.
  uint32_t join(uint32_t server, size_t add);
  // Sends this round's fragments, each to server_of(fragment) on the connection of `session`;
  // one whose connection cannot even start fails at once (its keys may move again). Returns
  // how many were sent (r.fragments_left counts them).
  template <typename ServerOf>
  uint32_t send(uint64_t session, ServerOf server_of);

 private:
  PendingRequest& r_;
  const uint32_t first_;
  std::array<size_t, 64> bytes_{};  // line bytes of the round's first fragments
};

// The end of a multi-get's failover (replicas' or routes'): no replica or pool is left for the
// keys not hit of its failed fragments. For each such fragment, `where(fr, &pool, &server)`
// names the pool whose unavailable_reads answers them and the server that failed them (null if
// a reload removed it meanwhile: not counted); the keys become misses, or the multi-get fails
// with the fragment's failure, as without failover.
template <typename Where>
void settleFailedFragments(PendingRequest& r, WorkerContext& worker, Where where) {
  for (uint32_t f = 0; f < r.fragment_count && !r.failed; ++f) {
    Fragment& fr = r.fragments[f];
    if (!fr.failed) {
      continue;
    }
    uint64_t keys = 0;
    for (uint32_t i : fr.key_indices) {
      keys += r.key_fragment[i] == f && r.key_hit_length[i] == 0 ? 1 : 0;
    }
    if (keys == 0) {
      continue;
    }
    const PoolRuntime* pool = nullptr;
    BackendServer* server = nullptr;
    where(fr, &pool, &server);
    if (pool != nullptr && answerUnavailableKeys(r, *pool, server, fr.failure, keys, worker)) {
      fr.unavailable = true;  // no warm-up second hop for them either
      continue;
    }
    r.failed = true;
    if (r.error_line.empty()) {
      r.error_line.assign(backendFailureReply(fr.failure));
    }
    stats::bump(worker.counters().server_errors);
  }
}

template <typename ServerOf>
uint32_t FragmentRound::send(uint64_t session, ServerOf server_of) {
  uint32_t sent = 0;
  for (uint32_t f = first_; f < r_.fragment_count; ++f) {
    Fragment& fr = r_.fragments[f];
    BackendServer& server = server_of(fr);
    BackendConnection* conn = server.connectionFor(session);
    if (conn == nullptr) {
      server.countFailure(server.lastFailure());
      fr.failed = true;
      fr.failure = server.lastFailure();
      fr.done = true;
      continue;
    }
    const size_t written = writeFragmentLine(conn->output(), r_, fr);
    conn->expect(server, &r_, f, Delivery::Fragment, Expect::Retrieval, written);
    ++sent;
  }
  r_.fragments_left += sent;
  return sent;
}

}  // namespace mcring::core
