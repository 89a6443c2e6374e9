// Multi-key gets split across backends: building the per-backend fragments and reassembling
// the VALUE units in the client's key order under one END.
#pragma once

#include <string_view>

#include "proxy/backend/pending_request.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

// multigetKey and multigetValueSink, which backend connections use too, are in
// pending_request.h.

// Called once every fragment is done: completes the client's reply in r.reply (after the units
// multigetValueSink put there). A failed fragment fails the whole reply (twemproxy).
void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters);

}  // namespace mcring::core
