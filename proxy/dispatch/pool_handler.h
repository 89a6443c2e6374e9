// A pool's own capabilities as handlers (docs/design.md §9, "The route tree"): under the route
// tree's leaf, which names a pool, each feature the pool has on is one PoolHandler:
// replication (replicas > 1), hot-key spread (hot_key_spread), warm migration (warmup_window).
// buildPoolHandlers (route_tree.h) composes a pool's list from its config at each snapshot; a pool
// with none of them has an empty list, and a request pays a few empty loops for it.
//
// A listener's request reaches its pool (its own, or its route's) and dispatch runs it through
// the list in phases, every handler in list order within a phase, so that each phase sees what
// every handler decided in the one before:
//   keyed request (storage, arithmetic, delete, touch, meta):
//     take      - a handler may send the request itself, before any server is chosen
//                 (replication: a write to every replica of its key);
//     place     - where it goes (replication: the first readable replica; spread: a copy);
//     placed    - side requests for the server chosen (replication: other replicas' TTL);
//     unavailable - the server can take nothing now: a handler may send it elsewhere
//                 (replication: the next replica); else the pool's unavailable_* answer;
//     prepare   - what its reply will need (spread's role, warm-up's second hop, a moved key's
//                 invalidation at its previous server);
//     send      - a handler may send it itself (spread: a write to every copy); else it goes
//                 to the server chosen, as one Direct request.
//   retrieval (get, gets, gat, gats):
//     placeKey  - each key's server (replication, spread);
//     placedKeys - whether the request needs per-key bookkeeping (a multi-get split), and
//                 side requests (warm-up: a moved key; replication: other replicas' TTL);
//     prepareMultiget - the split request's state (spread's reads, warm-up's hops,
//                 replication's failover).
// A handler decides; the PoolContext (dispatch's Dispatcher) sends, so handlers never see
// buffers or connections. A new pool capability is a new handler and one line in
// buildPoolHandlers. Worker-thread only; immutable once built.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backend/hot_spread.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/spread_state.h"
#include "proxy/protocol/request.h"

namespace mcring::core {

class BackendConnection;
class BackendServer;
class WorkerContext;
struct PoolRuntime;

// What a request does to a spread key (backend/hot_spread.h; spreadUse in pool_handlers.cc).
enum class SpreadUse : uint8_t { Primary, Write, Invalidate, ReadCopy };

// A keyed request on its way through its pool's handlers.
struct KeyedCall {
  PendingRequest* r = nullptr;
  std::string_view line;  // as framed (a data block follows it in the input)
  std::string_view key;   // its routing key
  bool quiet_meta = false;
  // The server it goes to: the key's on the ring, unless a handler places it elsewhere.
  uint32_t index = 0;
  BackendServer* server = nullptr;    // from the placed phase on
  BackendConnection* conn = nullptr;  // from the prepare phase on
  // What handlers decided on the way; each field is written by one handler.
  bool replicated_read = false;                          // replication: an mg at one replica
  const std::shared_ptr<SpreadEntry>* spread = nullptr;  // spread: the key's entry
  SpreadUse spread_use = SpreadUse::Primary;
  uint32_t spread_copy = 0;
  bool warm_hop = false;  // warm-up: an mg whose miss may take a second hop
};

// A retrieval on its way through its pool's handlers.
struct RetrievalCall {
  std::string_view line;
  std::span<uint32_t> servers;  // each key's server, by its index in the pool's list
  // Needs a multi-get's per-key bookkeeping even if every key is on one server.
  bool split = false;
  bool warm = false;  // warm-up: a key's server changed; its miss may take a second hop
  std::vector<SpreadRead>* spread_reads = nullptr;  // spread: keys read at a copy (scratch)
};

// What a pool handler can have done; the Dispatcher implements it.
class PoolContext {
 public:
  virtual PoolRuntime& pool() = 0;
  virtual WorkerContext& worker() = 0;
  virtual const protocol::Request& request() const = 0;
  virtual uint64_t sessionId() const = 0;
  virtual std::string& scratchLine() = 0;  // a side request's line being built
  // Replication: a write to every replica; `line` to the key's other replicas than `read_at`,
  // as detached requests; an mg kept so that the next replica may get it; an mg whose
  // replica cannot take it now, on to the next.
  virtual void sendToReplicas(KeyedCall& call) = 0;
  virtual void sendToOtherReplicas(std::string_view key, uint32_t read_at,
                                   std::string_view line) = 0;
  virtual void keepForNextReplica(KeyedCall& call) = 0;
  virtual void sendToNextReplica(KeyedCall& call) = 0;
  // Spread: the copy a read of the key goes to (0: the primary); a write to every copy.
  virtual uint32_t readCopy(const std::shared_ptr<SpreadEntry>& entry) = 0;
  virtual void sendToCopies(KeyedCall& call) = 0;
  // Warm-up: the key's copy at its previous server is deleted before the request's reply.
  virtual void invalidatePrevious(KeyedCall& call, BackendServer& previous) = 0;

 protected:
  ~PoolContext() = default;
};

class PoolHandler {
 public:
  virtual ~PoolHandler() = default;
  PoolHandler() = default;
  PoolHandler(const PoolHandler&) = delete;
  PoolHandler& operator=(const PoolHandler&) = delete;

  // Keyed requests (the phases above). A `bool` phase returns true if the handler sent the
  // request: later handlers and phases do not see it.
  virtual bool takeKeyed(PoolContext&, KeyedCall&) const { return false; }
  virtual void placeKeyed(PoolContext&, KeyedCall&) const {}
  virtual void placedKeyed(PoolContext&, KeyedCall&) const {}
  virtual bool keyedUnavailable(PoolContext&, KeyedCall&) const { return false; }
  virtual void prepareKeyed(PoolContext&, KeyedCall&) const {}
  virtual bool sendKeyed(PoolContext&, KeyedCall&) const { return false; }

  // Retrievals.
  virtual void placeKey(PoolContext&, RetrievalCall&, size_t i) const {}
  virtual void placedKeys(PoolContext&, RetrievalCall&) const {}
  virtual void prepareMultiget(PoolContext&, const RetrievalCall&, PendingRequest&) const {}

  // What the handler is ("replication", "spread", "warmup"), for tests and descriptions.
  virtual std::string_view kind() const = 0;
};

}  // namespace mcring::core
