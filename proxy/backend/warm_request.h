// A request's warm-migration state (dispatch/warmup.h): a read whose moved keys may take a second
// hop to their previous server (its hops, each key's fetch, an mg's flags to answer in), or a
// write whose `md` to the key's previous server found it there. Kept out of PendingRequest, which
// holds one pointer to it (null: warm-up has nothing to do with the request); pooled per worker
// (no allocation per request once warm) and returned when its request is recycled. The window
// and the registry of fetches in flight are warmup_state.h's. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/backend/record_pool.h"

namespace mcring::core {

// A key's warm-up fetch (warmup.h).
enum class WarmState : uint8_t { None, Fetching, CopyCancelled };

struct WarmRequest;
using WarmRequestPool = RecordPool<WarmRequest>;

struct WarmRequest {
  WarmRequestPool* owner = nullptr;  // its worker's pool
  // A read (mg, or a multi-get within one pool) of moved keys: a miss may take a second hop to
  // the key's previous server. False for a write, which only invalidates there.
  bool hops = false;
  bool hop_started = false;         // the second hops were decided (launch*Warmup)
  bool invalidated_hit = false;     // a write: the previous server had the key (its md hit)
  std::vector<WarmState> key_warm;  // per key of the read, once hops started
  std::string meta_flags;           // mg: the client's flags, to answer in its format

  // Returns it to its pool (the pointer is cleared).
  static void release(WarmRequest*& w);
};

inline void WarmRequest::release(WarmRequest*& w) {
  if (w == nullptr) {
    return;
  }
  w->hops = false;
  w->hop_started = false;
  w->invalidated_hit = false;
  w->key_warm.clear();
  w->meta_flags.clear();
  w->owner->giveBack(w);
  w = nullptr;
}

}  // namespace mcring::core
