// Replicated writes: replies recorded, cas copies, the client's reply.
#include "proxy/backend/replica_write.h"

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

using protocol::ReplyKind;

ReplicaOutcome classifyReplicaReply(const protocol::Reply& rep) {
  switch (rep.kind) {
    case ReplyKind::Stored:
    case ReplyKind::Deleted:
    case ReplyKind::Touched:
    case ReplyKind::Ok:
    case ReplyKind::Number:
    case ReplyKind::MetaHit:
    case ReplyKind::MetaValue:
    case ReplyKind::MetaNoop:
      return ReplicaOutcome::Success;
    case ReplyKind::NotStored:
    case ReplyKind::Exists:
    case ReplyKind::NotFound:
    case ReplyKind::MetaNotFound:
    case ReplyKind::MetaNotStored:
    case ReplyKind::MetaExists:
    case ReplyKind::MetaMiss:
      return ReplicaOutcome::Refusal;
    default:
      return ReplicaOutcome::Error;
  }
}

void recordReplicaReply(PendingRequest& r, uint32_t i, const protocol::Reply& rep,
                        std::string_view unit) {
  if (i >= r.replica_count) {
    return;
  }
  r.replica_outcome[i] = classifyReplicaReply(rep);
  r.replica_units[i].assign(unit);
}

namespace {

// The primary stored a cas: the same value goes to the other replicas as replica_followup.
void sendFollowups(PendingRequest& r, BackendServer& primary) {
  PoolRuntime& pool = primary.pool();
  auto& c = primary.worker().counters();
  for (uint32_t i = 1; i < r.replica_count; ++i) {
    if (r.replica_topology != pool.topology.get() || r.replica_servers[i] >= pool.by_index.size()) {
      r.replica_outcome[i] = ReplicaOutcome::Skipped;  // a reload in between: indices moved
      continue;
    }
    BackendServer* server = pool.by_index[r.replica_servers[i]];
    stats::bump(server->stats().stores);
    BackendConnection* conn = server->connectionFor(r.replica_session);
    if (conn == nullptr) {
      replicaFailed(r, i, server->lastFailure(), *server);
      server->countFailure(server->lastFailure());
      continue;
    }
    r.replica_outcome[i] = ReplicaOutcome::Pending;
    conn->output().append(r.replica_followup);
    ++r.fragments_left;
    stats::bump(c.replica_writes);
    conn->expect(&r, i, Delivery::ReplicaWrite, Expect::OneUnit, r.replica_followup.size());
  }
}

bool answered(ReplicaOutcome o) {
  return o == ReplicaOutcome::Success || o == ReplicaOutcome::Refusal;
}

int rank(ReplicaOutcome o) {
  switch (o) {
    case ReplicaOutcome::Success:
      return 1;
    case ReplicaOutcome::Refusal:
      return 2;
    case ReplicaOutcome::Error:
    case ReplicaOutcome::Failed:
      return 3;
    default:
      return 0;
  }
}

uint32_t chosenReplica(const PendingRequest& r) {
  if (r.replica_all) {
    uint32_t best = 0;
    int best_rank = -1;
    for (uint32_t i = 0; i < r.replica_count; ++i) {
      if (rank(r.replica_outcome[i]) > best_rank) {
        best_rank = rank(r.replica_outcome[i]);
        best = i;
      }
    }
    return best;
  }
  for (uint32_t i = 0; i < r.replica_count; ++i) {
    if (answered(r.replica_outcome[i])) {
      return i;
    }
  }
  return 0;  // none answered: the primary's error or failure
}

}  // namespace

bool replicaAnswered(PendingRequest& r, uint32_t i, BackendServer& server) {
  if (i >= r.replica_count) {
    return false;
  }
  ReplicaOutcome& o = r.replica_outcome[i];
  if (o == ReplicaOutcome::Pending) {
    o = ReplicaOutcome::Success;  // meta q: the nominal reply was hidden
  }
  bool invalidate = false;
  if (o == ReplicaOutcome::Error && r.replica_units[i].starts_with("SERVER_ERROR")) {
    stats::bump(server.stats().replica_write_failures);
    // It may still hold the value this write replaced (an append refused for memory keeps the
    // old one): its copy of this key goes, not the server's whole contents.
    if (r.replica_key.empty()) {
      server.missedWrite();
    } else {
      invalidate = true;
    }
  }
  if (i == 0 && r.replica_cas && o == ReplicaOutcome::Success && r.replica_count > 1) {
    sendFollowups(r, server);
  }
  return invalidate;
}

void replicaFailed(PendingRequest& r, uint32_t i, BackendFailure why, BackendServer& server) {
  if (i >= r.replica_count) {
    return;
  }
  r.replica_outcome[i] = ReplicaOutcome::Failed;
  r.replica_failure[i] = why;
  stats::bump(server.stats().replica_write_failures);
  if ((r.replica_invalidated & (1u << i)) == 0) {
    server.missedWrite();
  }
}

uint32_t pendingReplicas(const PendingRequest& r) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r.replica_count; ++i) {
    n += r.replica_outcome[i] == ReplicaOutcome::Pending ? 1 : 0;
  }
  return n;
}

bool replicaWriteDecided(const PendingRequest& r) {
  if (pendingReplicas(r) == 0) {
    return true;
  }
  if (r.replica_all) {
    return false;
  }
  for (uint32_t i = 0; i < r.replica_count; ++i) {
    const ReplicaOutcome o = r.replica_outcome[i];
    if (answered(o)) {
      return true;
    }
    if (o == ReplicaOutcome::Pending) {
      return false;  // it may still answer first in preference order
    }
  }
  return false;
}

void composeReplicaReply(PendingRequest& r, stats::WorkerCounters& c) {
  const uint32_t i = chosenReplica(r);
  const ReplicaOutcome o = r.replica_outcome[i];
  r.reply.drain(r.reply.size());
  if (o == ReplicaOutcome::Failed || o == ReplicaOutcome::Pending || o == ReplicaOutcome::Skipped) {
    stats::bump(c.server_errors);
    // Classic noreply gets nothing back even on failure; meta q always returns errors.
    if (!r.noreply) {
      r.reply.append(backendFailureReply(
          o == ReplicaOutcome::Failed ? r.replica_failure[i] : BackendFailure::Unavailable));
    }
    return;
  }
  std::string_view unit = r.replica_units[i];
  if (r.noreply) {
    // Classic noreply: memcached silences every reply but SERVER_ERROR (too large excepted).
    if (!unit.starts_with("SERVER_ERROR") || unit == protocol::kTooLargeLine) {
      return;
    }
  }
  if (r.invalidated_hit && r.command == protocol::Command::Delete &&
      unit == protocol::kNotFoundLine) {
    unit = protocol::kDeletedLine;  // warm-up: the previous server had it
  }
  r.reply.append(unit);
}

}  // namespace mcring::core
