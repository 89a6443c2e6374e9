// A routed request's own state (dispatch/routed.cc): its route's counters, a shadowed read's
// probe, and what its route's failover needs. Kept out of PendingRequest, which holds one
// pointer to it (null for a request no route sent); pooled per worker (RouteStatePool, no
// allocation per request once warm) and returned when its request is recycled. Worker-thread
// only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/backend/shadow_probe.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

struct PoolRuntime;
class BackendServer;
class RouteStatePool;
enum class Expect : uint8_t;  // pending_request.h

// A multi-get's shadowed key: its index among the request's keys and its probe.
struct KeyProbe {
  uint32_t key = 0;
  ShadowProbe* probe = nullptr;
};

struct RouteState {
  RouteStatePool* owner = nullptr;     // its worker's pool
  stats::RouteStats* stats = nullptr;  // the route that sent it
  // A shadowed read (dispatch/shadow.h): compared with its copy's answer when complete; on a
  // copy, the same probe.
  ShadowProbe* probe = nullptr;
  // A multi-get's shadowed keys (each compared by hit or miss).
  std::vector<KeyProbe> key_probes;
  // Failover (dispatch/route_failover.h), for a single-key request: the pools still to try, in
  // order (from next), the request as first sent (line and data block), how its reply ends,
  // and its routing key.
  std::vector<PoolRuntime*> failover;
  uint8_t next = 0;
  bool failover_on_miss = false;
  Expect expect{};
  std::string resend;
  std::string key;

  // Failover of a multi-get's keys (route_failover.h): per key, its route's failover pools (a
  // range of key_pools; none for a key whose route has no failover) and how far it went; and the
  // servers the request's fragments were sent to (Fragment::server indexes this list then).
  struct KeyFailover {
    uint32_t offset = 0;
    uint8_t count = 0;
    uint8_t next = 0;
    bool on_miss = false;
    stats::RouteStats* stats = nullptr;  // the key's route
  };
  std::vector<KeyFailover> key_failover;
  std::vector<PoolRuntime*> key_pools;
  std::vector<BackendServer*> servers;

  bool failsOver() const { return next < failover.size(); }
  // A multi-get part that fails is kept for failover (fragment failures are settled on
  // completion, as replicated reads' are), not failed at once.
  bool defersFragmentFailures() const { return !key_failover.empty(); }

  // Returns it to its pool (the pointer is cleared).
  static void release(RouteState*& s);
};

// A worker's RouteStates, and the bytes their failover copies hold (bounded by the caller:
// dispatch/routed.cc sends a request without a copy past the bound).
class RouteStatePool {
 public:
  RouteState* acquire() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<RouteState>());
      all_.back()->owner = this;
      return all_.back().get();
    }
    RouteState* s = free_.back();
    free_.pop_back();
    return s;
  }
  uint64_t copyBytes() const { return copy_bytes_; }
  // A failover copy of n bytes is kept / let go.
  void holdCopy(uint64_t n) { copy_bytes_ += n; }
  void dropCopy(uint64_t n) { copy_bytes_ -= n; }

 private:
  friend struct RouteState;
  std::vector<RouteState*> free_;
  std::vector<std::unique_ptr<RouteState>> all_;
  uint64_t copy_bytes_ = 0;
};

inline void RouteState::release(RouteState*& s) {
  if (s == nullptr) {
    return;
  }
  ShadowProbe::release(s->probe);
  for (KeyProbe& k : s->key_probes) {
    ShadowProbe::release(k.probe);
  }
  s->key_probes.clear();
  s->key_failover.clear();
  s->key_pools.clear();
  s->servers.clear();
  s->stats = nullptr;
  if (!s->failover.empty()) {
    s->owner->dropCopy(s->resend.size());
    s->failover.clear();
    s->resend.clear();
  }
  s->next = 0;
  s->failover_on_miss = false;
  s->owner->free_.push_back(s);
  s = nullptr;
}

}  // namespace mcring::core
