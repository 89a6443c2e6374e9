// A request's state as it concerns spread keys (backend/hot_spread.h; dispatch/dispatch_spread.cc,
// dispatch/spread_fill.cc send it, backend/spread_write.h reads the replies): its role for the
// key, the key's entry, the copy it reads or fills, a write's copies' replies, a get's keys served
// by a copy. Kept out of PendingRequest, which holds one pointer to it (null: the request has
// nothing to do with a spread key); pooled per worker (no allocation per request once warm) and
// returned when its request is recycled. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "proxy/backend/hot_spread.h"
#include "proxy/backend/record_pool.h"

namespace mcring::core {

struct PoolRuntime;

// What a request is to a spread key.
enum class SpreadRole : uint8_t {
  None,        // no role (a get whose keys are only in `reads`)
  Write,       // sent to every copy; the copies' replies are compared with the primary's
  Invalidate,  // a write sent to the primary only (cas, meta writes): it cleared every copy
  Read,        // a plain mg sent to copy `copy`
  FillRead,    // a fill's `mg <key> v f t` to the primary (detached)
  FillWrite,   // a fill's `ms` to copy `copy` (detached)
};

// A plain get key served by a copy: a miss there clears the copy's filled bit.
struct SpreadRead {
  uint32_t key_index = 0;
  uint32_t copy = 0;
  std::shared_ptr<SpreadEntry> entry;
};

// SpreadState::replies: a copy not answered yet, or failed (no reply); else a hash of its reply
// line.
inline constexpr uint64_t kSpreadPending = ~uint64_t{0} - 1;
inline constexpr uint64_t kSpreadFailed = ~uint64_t{0};

struct SpreadState;
using SpreadStatePool = RecordPool<SpreadState>;

struct SpreadState {
  SpreadStatePool* owner = nullptr;  // its worker's pool
  SpreadRole role = SpreadRole::None;
  std::shared_ptr<SpreadEntry> entry;  // the key's entry (Write, Invalidate, Read, fills)
  uint32_t copy = 0;                   // Read, FillWrite: the copy's index in its entry
  uint64_t mark = 0;                   // fills: writes_started when the fill began
  PoolRuntime* pool = nullptr;         // fills: the pool (a worker's pools outlive requests)
  std::vector<uint64_t> replies;       // Write: each copy's reply ([0]: the primary)
  bool primary_ok = false;             // Write: the primary answered, and not an error
  // get: the keys served by a copy; gat/gats: the spread keys whose TTL it changes (copy 0)
  std::vector<SpreadRead> reads;

  // Returns it to its pool (the pointer is cleared).
  static void release(SpreadState*& s);
};

inline void SpreadState::release(SpreadState*& s) {
  if (s == nullptr) {
    return;
  }
  s->role = SpreadRole::None;
  s->entry.reset();
  s->copy = 0;
  s->mark = 0;
  s->pool = nullptr;
  s->replies.clear();
  s->primary_ok = false;
  s->reads.clear();
  s->owner->giveBack(s);
  s = nullptr;
}

}  // namespace mcring::core
