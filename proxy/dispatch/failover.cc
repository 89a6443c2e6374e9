// Read failover: next replicas for the keys a server could not serve.
#include "proxy/dispatch/failover.h"

#include <array>
#include <span>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/unavailable.h"

namespace mcring::core {

namespace {

using ReplicaSet = std::array<uint32_t, kReplicaSlots>;
static_assert(kReplicaSlots == routing::kMaxReplicas);

uint32_t replicaSetOf(const PoolRuntime& pool, std::string_view key, ReplicaSet& set) {
  return pool.topology->router->replicaSet(key, std::span<uint32_t, routing::kMaxReplicas>(set));
}

void countFailover(BackendServer& from, WorkerContext& worker, uint64_t n = 1) {
  stats::bump(from.stats().failover_reads, n);
  stats::bump(worker.counters().failover_reads, n);
}

// The next readable replica of `key` after the one at by_index[from_index]; UINT32_MAX if none
// (or if that server is not in the key's set any more: a reload in between).
uint32_t nextReplica(PoolRuntime& pool, std::string_view key, uint32_t from_index,
                     uint64_t session_id) {
  ReplicaSet set;
  const uint32_t n = replicaSetOf(pool, key, set);
  uint32_t j = 0;
  while (j < n && set[j] != from_index) {
    ++j;
  }
  for (uint32_t k = j + 1; k < n; ++k) {
    if (pool.by_index[set[k]]->readable(session_id)) {
      return set[k];
    }
  }
  return UINT32_MAX;
}

uint32_t indexOf(const PoolRuntime& pool, const BackendServer* server) {
  for (uint32_t i = 0; i < pool.by_index.size(); ++i) {
    if (pool.by_index[i] == server) {
      return i;
    }
  }
  return UINT32_MAX;
}

// A Direct mg with no replica left: the reply holds the last replica's miss, error reply or
// failure line. A failure is answered as unavailable_reads says (the miss in the client's format,
// in place of the failure line), or stays, counted as a server error.
void settleDirect(PendingRequest& r, WorkerContext& worker) {
  const ReadFailover& f = *r.read_failover;
  if (f.missed) {
    return;
  }
  // failEach and the connect paths leave exactly the failure line in the reply.
  const size_t failure_line = r.reply.size();
  if (f.failed_at != nullptr && answerUnavailable(r, 0, *f.failed_at, f.failure, worker)) {
    r.reply.drain(failure_line);
    return;
  }
  stats::bump(worker.counters().server_errors);
}

// A Direct mg: to the next replica after failed_at, its bytes as first sent.
bool continueDirect(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker) {
  ReadFailover& f = *r.read_failover;
  while (f.failed_at != nullptr) {
    BackendServer* failed = f.failed_at;
    const uint32_t from = indexOf(pool, failed);
    if (from == UINT32_MAX) {
      settleDirect(r, worker);
      return false;
    }
    const uint32_t next = nextReplica(pool, f.key, from, f.session);
    if (next == UINT32_MAX) {
      settleDirect(r, worker);
      return false;
    }
    countFailover(*failed, worker);
    BackendServer* server = pool.by_index[next];
    BackendConnection* conn = server->connectionFor(f.session);
    r.reply.drain(r.reply.size());
    if (conn == nullptr) {
      server->countFailure(server->lastFailure());
      f.failed_at = server;
      f.failure = server->lastFailure();
      f.missed = false;
      r.reply.append(backendFailureReply(f.failure));
      continue;
    }
    f.failed_at = nullptr;
    f.missed = false;
    stats::bump(server->stats().get_keys);
    conn->output().append(f.line);
    r.fragments_left = 1;
    conn->expect(*server, &r, 0, Delivery::Direct, f.quiet ? Expect::UntilNoop : Expect::OneUnit,
                 f.line.size());
    return true;
  }
  return false;
}

// A multi-get: each key not hit whose fragment failed (or missed where that fails over) goes
// to its next readable replica; fragments that cannot even be sent fail at once, and their keys
// move again, until something was sent or no key can move.
bool continueMultiget(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker) {
  for (;;) {
    FragmentRound round(r);
    uint32_t moved = 0;
    for (uint32_t i = 0; i < r.key_count; ++i) {
      if (r.key_hit_length[i] != 0) {
        continue;
      }
      const uint32_t f = r.key_fragment[i];
      if (f >= round.first()) {
        continue;
      }
      Fragment& fr = r.fragments[f];
      BackendServer* from = pool.by_index[fr.server];
      if (!fr.failed && !from->missFailsOver()) {
        continue;  // a miss, and misses do not fail over here
      }
      const std::string_view key = multigetKey(r, i);
      const uint32_t next = nextReplica(pool, key, fr.server, r.read_failover->session);
      if (next == UINT32_MAX) {
        continue;
      }
      countFailover(*from, worker);
      const uint32_t nf = round.join(next, key.size() + 1);
      r.fragments[nf].key_indices.push_back(i);
      r.key_fragment[i] = nf;
      stats::bump(pool.by_index[next]->stats().get_keys);
      ++moved;
    }
    if (moved == 0) {
      return false;
    }
    if (round.send(r.read_failover->session, [&](const Fragment& fr) -> BackendServer& {
          return *pool.by_index[fr.server];
        }) > 0) {
      return true;
    }
  }
}

// No replica is left for the keys of failed fragments that were not hit: unavailable_reads
// answers them (misses, the rest of the multi-get served), or the multi-get fails as it does
// without replication. `pool`: the session's, null if it is gone or a reload replaced the
// snapshot the request was routed by (then no per-backend count).
void settleMultiget(PendingRequest& r, const PoolRuntime* pool, WorkerContext& worker) {
  settleFailedFragments(
      r, worker, [&](const Fragment& fr, const PoolRuntime** policy, BackendServer** server) {
        *server = pool != nullptr && fr.server < pool->by_index.size() ? pool->by_index[fr.server]
                                                                       : nullptr;
        *policy = pool != nullptr ? pool : r.pool;
      });
}

}  // namespace

uint32_t readReplica(PoolRuntime& pool, WorkerContext& worker, std::string_view key,
                     uint64_t session_id) {
  ReplicaSet set;
  const uint32_t n = replicaSetOf(pool, key, set);
  for (uint32_t j = 0; j < n; ++j) {
    if (pool.by_index[set[j]]->readable(session_id)) {
      for (uint32_t k = 0; k < j; ++k) {
        countFailover(*pool.by_index[set[k]], worker);
      }
      return set[j];
    }
  }
  // None readable: the first that is not stale (return_flush), so that a read fails (backoff)
  // rather than reaching a server that may hold overwritten values; else the primary.
  for (uint32_t j = 0; j < n; ++j) {
    const BackendServer& s = *pool.by_index[set[j]];
    if (!pool.config().return_flush || !s.freshness().stale()) {
      return set[j];
    }
  }
  return set[0];
}

bool continueReadFailover(PendingRequest& r, WorkerContext& worker) {
  if (r.read_failover == nullptr) {
    return false;
  }
  const bool usable = r.session != nullptr && r.pool != nullptr && !r.refused &&
                      r.pool->topology.get() == r.read_failover->topology;
  if (r.shape == Shape::Direct) {
    if (!usable) {
      if (r.read_failover->failed_at != nullptr && !r.read_failover->missed) {
        stats::bump(worker.counters().server_errors);
      }
      return false;
    }
    return continueDirect(r, *r.pool, worker);
  }
  if (usable && continueMultiget(r, *r.pool, worker)) {
    return true;
  }
  settleMultiget(r, usable ? r.pool : nullptr, worker);
  return false;
}

}  // namespace mcring::core
