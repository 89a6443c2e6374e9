// Multi-key gets split across backends: building the per-backend fragments and reassembling
// the VALUE units in the client's key order under one END.
#pragma once

#include <string_view>

#include "proxy/core/pending_request.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

// Key i of a multi-get (its bytes live in r.line).
inline std::string_view multigetKey(const PendingRequest& r, uint32_t i) {
  return std::string_view(r.line).substr(r.key_offsets[2 * i], r.key_offsets[2 * i + 1]);
}

// Where a VALUE unit for fragment `fr` of r goes as it arrives. A lone fragment (every key on one
// server, the usual single-key get) answers in the client's key order already, so its units go
// straight into r.reply instead of being copied twice; a warm get may add fragments later, so
// it always collects per fragment.
inline net::Buffer& multigetValueSink(PendingRequest& r, Fragment& fr) {
  return r.fragment_count == 1 && !r.warm ? r.reply : fr.values;
}

// Called once every fragment is done: completes the client's reply in r.reply (after the units
// multigetValueSink put there). A failed fragment fails the whole reply (twemproxy).
void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters);

}  // namespace mcring::core
