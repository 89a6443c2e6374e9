// Hot-key spread (hot_spread.h), as a backend reply sees it: a write's copies compared with its
// primary, a copy that missed a read, the end of a fill. Worker-thread only (the entries they
// touch are shared atomics).
#pragma once

#include <string_view>

#include "proxy/backend/hot_spread.h"
#include "proxy/backend/pending_request.h"
#include "proxy/protocol/reply.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

// A spread write's reply from copy `copy` (0: the primary), `line` its reply line.
void recordSpreadReply(PendingRequest& r, uint32_t copy, const protocol::Reply& rep,
                       std::string_view line);

// A plain read that a filled copy answered with a miss: the copy lost the value (evicted, or
// expired a moment before the primary); it is not read again until a fill.
void missedAtCopy(SpreadEntry& entry, uint32_t copy, stats::WorkerCounters& c);

// Every part of `r` answered. A spread write: a copy whose reply differs from the primary's
// (or that failed, or any copy when the primary failed) is no longer filled; then the write
// counts as done (a fill may start again). A cas or meta write to the primary only: done.
void settleSpreadWrite(PendingRequest& r, stats::WorkerCounters& c);

// A fill is over: its copy is filled if it succeeded and no write of the key started since it
// began (`ok`), else abandoned (the copy stays unfilled, and the next fill overwrites it).
void endSpreadFill(PendingRequest& r, bool ok, stats::WorkerCounters& c);

}  // namespace mcring::core
