// Multi-key gets split across backends: building the per-backend fragments and reassembling
// the VALUE units in the client's key order under one END.
#pragma once

#include <array>
#include <string_view>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pending_request.h"
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
    conn->expect(&r_, f, Delivery::Fragment, Expect::Retrieval, written);
    ++sent;
  }
  r_.fragments_left += sent;
  return sent;
}

}  // namespace mcring::core
