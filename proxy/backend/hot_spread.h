// Hot-key spread (docs/design.md, "Hot-key spread"): the keys of a pool that are spread over
// several servers, as the main thread decided them (admin/hot_spread_plan.h) and every worker
// applies them.
//
// A SpreadSet is published by pointer and never changes membership; its entries carry the
// state every worker reads and bumps (atomics): the writes in flight, which copies hold the
// primary's value, whether a fill is in flight. The set counts the workers that applied it, so
// the main thread knows when a step of a key's life (spreading, collapsing, gone) is seen by
// all of them. Any thread.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/topology.h"

namespace mcring::core {

enum class SpreadPhase : uint8_t {
  Spreading,   // writes to every copy; plain reads to a random filled copy
  Collapsing,  // writes to every copy; reads to the primary only (the entry goes next)
};

struct SpreadEntry {
  static constexpr uint32_t kMaxCopies = 16;  // hot_key_spread's bound

  // `copy_ttl_ms`: hot_key_copy_ttl (0: a filled copy stays readable until a write or a miss
  // unfills it).
  SpreadEntry(std::string k, std::vector<uint32_t> c, uint64_t copy_ttl = 0)
      : key(std::move(k)),
        copies(std::move(c)),
        copy_ttl_ms(copy_ttl),
        filled_ms(copies.size()),
        reads(copies.size()) {
    for (size_t i = 0; i < copies.size(); ++i) {
      filled_ms[i].store(0, std::memory_order_relaxed);
      reads[i].store(0, std::memory_order_relaxed);
    }
  }

  const std::string key;
  const std::vector<uint32_t> copies;  // server indices in the set's topology; [0]: the primary

  std::atomic<SpreadPhase> phase{SpreadPhase::Spreading};
  // Writes of the key dispatched / completed (all their copies answered), on every worker. A
  // fill starts only with none in flight and counts only if none started meanwhile.
  std::atomic<uint64_t> writes_started{0};
  std::atomic<uint64_t> writes_done{0};
  // Bit i: copy i holds what the primary holds (bit 0, the primary, is always set). Set only by
  // a fill; cleared by a write whose copy answered differently, or a read that missed there.
  std::atomic<uint32_t> filled{1};
  std::atomic<bool> fill_in_flight{false};
  // writes_started when a fill last found the primary without the key: no fill again until the
  // key is written (every read of a deleted hot key would send one).
  std::atomic<uint64_t> missed_at{~uint64_t{0}};
  // A filled copy is read only until copy_ttl_ms after its fill (monotonic ms), then filled
  // again: what bounds its staleness when another proxy writes the primary alone.
  const uint64_t copy_ttl_ms;
  std::vector<std::atomic<uint64_t>> filled_ms;

  // Counts, for /hotkeys.
  std::vector<std::atomic<uint64_t>> reads;  // plain reads served by each copy
  std::atomic<uint64_t> fills{0};
  std::atomic<uint64_t> fills_abandoned{0};

  uint32_t fullMask() const { return copies.size() >= 32 ? ~0u : (1u << copies.size()) - 1; }
  // The copies that may be read now: filled, and within copy_ttl_ms of their fill.
  uint32_t readable(uint64_t now_ms) const {
    uint32_t mask = filled.load() | 1u;
    if (copy_ttl_ms == 0) {
      return mask;
    }
    for (uint32_t i = 1; i < copies.size(); ++i) {
      if ((mask & (1u << i)) != 0 && now_ms >= filled_ms[i].load() + copy_ttl_ms) {
        mask &= ~(1u << i);
      }
    }
    return mask;
  }
  bool allFilled(uint64_t now_ms) const { return readable(now_ms) == fullMask(); }
  // A fill of copy i succeeded (at now_ms).
  void markFilled(uint32_t i, uint64_t now_ms) {
    filled_ms[i].store(now_ms);
    filled.fetch_or(1u << i);
  }
  void clearCopy(uint32_t i) {
    if (i > 0) {
      filled.fetch_and(~(1u << i));
    }
  }
  // The copy a plain read goes to: the primary while collapsing, else one of the filled copies,
  // chosen by `random`.
  uint32_t pickRead(uint64_t random, uint64_t now_ms) const {
    if (phase.load() != SpreadPhase::Spreading) {
      return 0;
    }
    uint32_t mask = readable(now_ms);
    uint32_t n = static_cast<uint32_t>(random % static_cast<uint64_t>(std::popcount(mask)));
    for (uint32_t i = 0; i < copies.size(); ++i) {
      if ((mask & (1u << i)) != 0 && n-- == 0) {
        return i;
      }
    }
    return 0;
  }
  // The first copy not readable, or 0 if every copy is.
  uint32_t firstUnfilled(uint64_t now_ms) const {
    uint32_t mask = readable(now_ms);
    for (uint32_t i = 1; i < copies.size(); ++i) {
      if ((mask & (1u << i)) == 0) {
        return i;
      }
    }
    return 0;
  }
};

struct SpreadSet {
  // The snapshot the entries' server indices refer to: a worker that routes by another one
  // ignores the set (the main thread publishes fresh entries for the new one).
  std::shared_ptr<const config::PoolTopology> topology;
  std::vector<std::shared_ptr<SpreadEntry>> entries;  // a few keys: searched linearly
  int workers = 1;
  // After the last worker applied the set, how long before a fill may start: longer than a
  // backend request may take, so no write a worker dispatched before it saw the set (to the
  // primary only) is still in flight when a fill reads the primary. Not waited when every worker
  // acked quiet: it had no such write in flight when it applied the set, so none can be.
  uint64_t settle_ms = 2000;
  mutable std::atomic<int> acks{0};
  mutable std::atomic<int> loud_acks{0};         // acks that were not quiet
  mutable std::atomic<uint64_t> last_ack_ms{0};  // monotonic

  // A worker applied the set (its thread, once). `quiet`: nothing that may change an item was in
  // flight from it to the own server of a key this set spreads anew (spreadStartsQuiet).
  void ack(uint64_t now_ms, bool quiet = false) const {
    uint64_t prev = last_ack_ms.load();
    while (prev < now_ms && !last_ack_ms.compare_exchange_weak(prev, now_ms)) {
    }
    if (!quiet) {
      loud_acks.fetch_add(1);  // before acks: whoever sees every ack sees this one
    }
    acks.fetch_add(1);
  }
  bool allAcked() const { return acks.load() >= workers; }
  bool settled(uint64_t now_ms) const {
    return allAcked() && (loud_acks.load() == 0 || now_ms >= last_ack_ms.load() + settle_ms);
  }
  const std::shared_ptr<SpreadEntry>* find(std::string_view key) const {
    for (const auto& e : entries) {
      if (e->key == key) {
        return &e;
      }
    }
    return nullptr;
  }
};

}  // namespace mcring::core
