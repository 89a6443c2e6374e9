// The pool handlers (pool_handler.h), one capability each. buildPoolHandlers (route_tree.h) lists
// the ones a pool's config turns on, in this order: replication chooses among a key's replicas,
// spread may then send a read to a copy instead, and warm-up looks at the server finally chosen.
#pragma once

#include "proxy/dispatch/pool_handler.h"

namespace mcring::core {

// replicas > 1 (docs/design.md, "Replication"): a write to every replica of its key, a read to
// its first readable replica and on to the next if that one cannot serve it (failover.h), and
// a read that sets a TTL gives the other replicas the same TTL.
class ReplicationHandler final : public PoolHandler {
 public:
  bool takeKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void placeKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void placedKeyed(PoolContext& ctx, KeyedCall& call) const override;
  bool keyedUnavailable(PoolContext& ctx, KeyedCall& call) const override;
  bool sendKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void placeKey(PoolContext& ctx, RetrievalCall& call, size_t i) const override;
  void placedKeys(PoolContext& ctx, RetrievalCall& call) const override;
  void prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                       PendingRequest& r) const override;
  std::string_view kind() const override { return "replication"; }
};

// hot_key_spread (backend/hot_spread.h): a spread key's plain reads go to one of its filled
// copies, its writes to every copy; writes its copies cannot apply alike unfill them.
class SpreadHandler final : public PoolHandler {
 public:
  void placeKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void prepareKeyed(PoolContext& ctx, KeyedCall& call) const override;
  bool sendKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void placeKey(PoolContext& ctx, RetrievalCall& call, size_t i) const override;
  void placedKeys(PoolContext& ctx, RetrievalCall& call) const override;
  void prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                       PendingRequest& r) const override;
  std::string_view kind() const override { return "spread"; }
};

// warmup_window (warmup.h): while a window is open, a moved key's miss takes a second hop to
// its previous server, and a write of a moved key deletes the copy there first.
class WarmupHandler final : public PoolHandler {
 public:
  void prepareKeyed(PoolContext& ctx, KeyedCall& call) const override;
  void placedKeys(PoolContext& ctx, RetrievalCall& call) const override;
  void prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                       PendingRequest& r) const override;
  std::string_view kind() const override { return "warmup"; }
};

}  // namespace mcring::core
