// A shadowed read's two answers, compared when both are in: the route's shadow agreement
// (dispatch/shadow.h sends the copy and reads both replies). Shared by the primary request and
// its shadow copy, each holding one reference; whoever answers second compares. A side that
// goes away without an answer (a client request answered locally, a copy that failed) makes
// the pair not comparable. Pooled per worker (no allocation per read once warm). Worker-thread
// only.
#pragma once

#include <cstdint>
#include <vector>

#include "proxy/stats/route_stats.h"

namespace mcring::core {

struct ShadowProbe {
  enum class Answer : uint8_t {
    Pending,
    Miss,
    Hit,         // with a value (digest)
    HitNoValue,  // a hit whose reply carries no value (an mg without v): hit or miss only
    Unusable,    // an error or no reply: not compared
  };

  uint32_t refs = 0;
  std::vector<ShadowProbe*>* free_list = nullptr;  // its worker's pool
  stats::RouteStats* stats = nullptr;
  Answer primary = Answer::Pending;
  Answer shadow = Answer::Pending;
  uint64_t primary_digest = 0;
  uint64_t shadow_digest = 0;

  void answer(bool from_shadow, Answer a, uint64_t digest) {
    (from_shadow ? shadow : primary) = a;
    (from_shadow ? shadow_digest : primary_digest) = digest;
    if (primary == Answer::Pending || shadow == Answer::Pending || primary == Answer::Unusable ||
        shadow == Answer::Unusable) {
      return;
    }
    constexpr auto relaxed = std::memory_order_relaxed;
    stats->shadow_compared.fetch_add(1, relaxed);
    const bool primary_hit = primary != Answer::Miss;
    const bool shadow_hit = shadow != Answer::Miss;
    bool agree = primary_hit == shadow_hit;
    if (agree && primary == Answer::Hit && shadow == Answer::Hit) {
      agree = primary_digest == shadow_digest;
    }
    if (agree) {
      stats->shadow_agreed.fetch_add(1, relaxed);
    }
  }

  // Drops one reference (the pointer is cleared); the last returns the probe to its pool.
  static void release(ShadowProbe*& p) {
    if (p == nullptr) {
      return;
    }
    if (--p->refs == 0) {
      p->primary = Answer::Pending;
      p->shadow = Answer::Pending;
      p->stats = nullptr;
      p->free_list->push_back(p);
    }
    p = nullptr;
  }
};

}  // namespace mcring::core
