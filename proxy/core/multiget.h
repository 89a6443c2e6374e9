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

// Called once every fragment is done: writes the client's reply into r.reply. Values move from
// the fragments' buffers without copying; a failed fragment fails the whole reply (twemproxy).
void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters);

}  // namespace mcring::core
