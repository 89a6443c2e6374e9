// Hot-key spread (hot_spread.h), as a backend reply sees it: a write's copies compared with its
// primary, a copy that missed a read, the end of a fill. Worker-thread only (the entries they
// touch are shared atomics).
#pragma once

#include <string_view>

#include "proxy/backend/hot_spread.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/reply_handler.h"
#include "proxy/protocol/reply.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

// The handler a spread write's copy is sent with (tag: the copy's index in the entry): its reply
// is recorded (recordSpreadReply), compared with the primary's when the write settles, and
// never seen by the client; a copy that fails differs.
ReplyHandler& spreadCopyHandler();

// A spread write's reply from copy `copy` (0: the primary), `line` its reply line.
void recordSpreadReply(PendingRequest& r, uint32_t copy, const protocol::Reply& rep,
                       std::string_view line);

// A plain read that a filled copy answered with a miss: the copy lost the value (evicted, or
// expired a moment before the primary); it is not read again until a fill.
void missedAtCopy(SpreadEntry& entry, uint32_t copy, stats::WorkerCounters& c);

// Every part of `r` answered. A spread write: a copy whose reply differs from the primary's
// (or that failed, or any copy when the primary failed) is no longer filled; then the write
// counts as done (a fill may start again). A cas or meta write to the primary only: done. A
// gat/gats of spread keys (their spread reads of copy 0, the primary): each such key's done.
void settleSpreadWrite(PendingRequest& r, stats::WorkerCounters& c);

// Whether this worker may ack `next` quiet (SpreadSet::ack): no request that may change an item
// is in flight to the own server of any key `next` spreads that `current` (the set it replaces)
// did not. Such a request went to the primary alone, and a fill that read the primary before it
// landed would copy the older value; without one, fills need not wait the set's settle_ms.
bool spreadStartsQuiet(const PoolRuntime& pool, const SpreadSet* current, const SpreadSet& next);

// A fill is over: its copy is filled if it succeeded and no write of the key started since it
// began (`ok`), else abandoned (the copy stays unfilled, and the next fill overwrites it).
void endSpreadFill(PendingRequest& r, bool ok, stats::WorkerCounters& c);

}  // namespace mcring::core
