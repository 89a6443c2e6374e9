// Hot-key spread decisions (docs/design.md, "Hot-key spread"): from a pool's hot keys, the next
// set of spread keys the workers apply (backend/hot_spread.h). Pure but for the atomics of the
// entries it carries over (it marks a cooling key's entry Collapsing). Main thread.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "config/topology.h"
#include "proxy/backend/hot_spread.h"

namespace mcring::core {

// Whether the pool spreads hot keys at all: hot_key_spread >= 2, hot keys counted with an event
// share, and a distribution that routes a key to one server (random does not).
bool spreadsHotKeys(const config::PoolTopology& pool);

// The pool's next spread set given its `hot` keys (hot_key_event_percent, cooled below half of
// it), or null when `current` stays as it is. A hot key gets an entry (nothing filled); a key
// that cooled is first marked Collapsing (reads to the primary, writes still to every copy) and
// dropped only in a later set, once every worker applied the set that showed it collapsing
// (writes then go to the primary only); a key that heats again while collapsing gets a fresh
// entry. A new snapshot (reload) gets fresh entries for its hot keys, with its own copies.
std::shared_ptr<SpreadSet> planSpread(const std::shared_ptr<const config::PoolTopology>& pool,
                                      const std::set<std::string>& hot, const SpreadSet* current,
                                      int workers);

}  // namespace mcring::core
