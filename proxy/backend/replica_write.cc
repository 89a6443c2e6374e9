// Replicated writes: replies recorded, cas copies, the client's reply.
#include "proxy/backend/replica_write.h"

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_writer.h"

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
  if (i >= r.replica->count) {
    return;
  }
  r.replica->outcome[i] = classifyReplicaReply(rep);
  r.replica->units[i].assign(unit);
}

namespace {

// The primary stored a cas: the same value goes to the other replicas as replica_followup.
void sendFollowups(PendingRequest& r, BackendServer& primary) {
  PoolRuntime& pool = primary.pool();
  auto& c = primary.worker().counters();
  for (uint32_t i = 1; i < r.replica->count; ++i) {
    if (r.replica->topology != pool.topology.get() ||
        r.replica->servers[i] >= pool.by_index.size()) {
      r.replica->outcome[i] = ReplicaOutcome::Skipped;  // a reload in between: indices moved
      continue;
    }
    BackendServer* server = pool.by_index[r.replica->servers[i]];
    stats::bump(server->stats().stores);
    BackendConnection* conn = server->connectionFor(r.replica->session);
    if (conn == nullptr) {
      replicaFailed(r, i, server->lastFailure(), *server);
      server->countFailure(server->lastFailure());
      continue;
    }
    r.replica->outcome[i] = ReplicaOutcome::Pending;
    conn->output().append(r.replica->followup);
    ++r.fragments_left;
    stats::bump(c.replica_writes);
    conn->expect(*server, &r, replicaWriteHandler(), replicaWriteTag(i, false), Expect::OneUnit,
                 r.replica->followup.size());
  }
}

constexpr uint32_t kQuietTag = 1u << 31;

// The `md` of a replicated write's key at one replica (a detached request): anything but HD or
// NF marks the server stale after all (return_flush).
class ReplicaInvalidateReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest&, uint32_t, const protocol::Reply& rep,
                     std::string_view) override {
    if (rep.isListItem() || rep.data_length > 0) {
      return UnitVerdict::Desync;
    }
    if (rep.kind != ReplyKind::MetaHit && rep.kind != ReplyKind::MetaNotFound) {
      conn.server().missedWrite();
    }
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest&, uint32_t, BackendFailure) override {
    conn.server().missedWrite();
  }
};

ReplicaInvalidateReply replica_invalidate_reply;

// An `md` of replica write r's key on `conn`, detached (its reply is only checked); replica i is
// then not marked stale for r.
void sendReplicaInvalidate(BackendConnection& conn, PendingRequest& r, uint32_t i) {
  WorkerContext& w = conn.server().worker();
  PendingRequest* md = w.requests().acquire();
  md->refs = 1;
  md->fragments_left = 1;
  md->noreply = true;
  md->command = protocol::Command::MetaDelete;
  protocol::RequestWriter line(conn.output());
  line.metaDelete(r.replica->key, r.replica->key_b64);
  conn.expect(conn.server(), md, replica_invalidate_reply, 0, Expect::OneUnit, line.written());
  w.requests().release(md);
  r.replica->invalidated |= static_cast<uint8_t>(1u << i);
}

// A write at replica i of its key (tag: i, and kQuietTag for a meta q write).
class ReplicaWriteReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                     const protocol::Reply& rep, std::string_view unit) override {
    const uint32_t i = tag & ~kQuietTag;
    const bool quiet = (tag & kQuietTag) != 0;
    if (rep.isListItem()) {
      return UnitVerdict::Desync;
    }
    if (quiet && rep.kind != ReplyKind::MetaNoop) {
      recordReplicaReply(r, i, rep, unit);  // then the mn we added
      return UnitVerdict::More;
    }
    if (!quiet) {
      recordReplicaReply(r, i, rep, unit);
    }
    if (replicaAnswered(r, i, conn.server())) {
      sendReplicaInvalidate(conn, r, i);
    }
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                 BackendFailure why) override {
    replicaFailed(r, tag & ~kQuietTag, why, conn.server());
  }
  void onFinished(BackendConnection& conn, PendingRequest& r, uint32_t) override {
    completeDecidedReplicaWrite(r, conn.server().worker().counters());
  }
  // A write memcached closed the connection under may or may not have been applied: rather than
  // marking the whole server stale (a flush when it is next reached), its key is deleted there
  // on a fresh connection, which memcached reads after the closed one. If that cannot even
  // start, or the md fails, the server is marked stale after all (return_flush).
  bool onConnectionLost(BackendConnection& conn, PendingRequest& r, uint32_t tag) override {
    const uint32_t i = tag & ~kQuietTag;
    if (r.replica->key.empty() || i >= r.replica->count) {
      return true;
    }
    if (conn.state() == BackendConnection::State::Closed && !conn.ensureConnected()) {
      return false;
    }
    sendReplicaInvalidate(conn, r, i);
    return true;
  }
};

ReplicaWriteReply replica_write_reply;

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
  if (r.replica->all) {
    uint32_t best = 0;
    int best_rank = -1;
    for (uint32_t i = 0; i < r.replica->count; ++i) {
      if (rank(r.replica->outcome[i]) > best_rank) {
        best_rank = rank(r.replica->outcome[i]);
        best = i;
      }
    }
    return best;
  }
  for (uint32_t i = 0; i < r.replica->count; ++i) {
    if (answered(r.replica->outcome[i])) {
      return i;
    }
  }
  return 0;  // none answered: the primary's error or failure
}

}  // namespace

ReplyHandler& replicaWriteHandler() {
  return replica_write_reply;
}

uint32_t replicaWriteTag(uint32_t i, bool quiet) {
  return quiet ? i | kQuietTag : i;
}

bool replicaAnswered(PendingRequest& r, uint32_t i, BackendServer& server) {
  if (i >= r.replica->count) {
    return false;
  }
  ReplicaOutcome& o = r.replica->outcome[i];
  if (o == ReplicaOutcome::Pending) {
    o = ReplicaOutcome::Success;  // meta q: the nominal reply was hidden
  }
  bool invalidate = false;
  if (o == ReplicaOutcome::Error && r.replica->units[i].starts_with("SERVER_ERROR")) {
    stats::bump(server.stats().replica_write_failures);
    // It may still hold the value this write replaced (an append refused for memory keeps the
    // old one): its copy of this key goes, not the server's whole contents.
    if (r.replica->key.empty()) {
      server.missedWrite();
    } else {
      invalidate = true;
    }
  }
  if (i == 0 && r.replica->cas && o == ReplicaOutcome::Success && r.replica->count > 1) {
    sendFollowups(r, server);
  }
  return invalidate;
}

void replicaFailed(PendingRequest& r, uint32_t i, BackendFailure why, BackendServer& server) {
  if (i >= r.replica->count) {
    return;
  }
  r.replica->outcome[i] = ReplicaOutcome::Failed;
  r.replica->failure[i] = why;
  stats::bump(server.stats().replica_write_failures);
  if ((r.replica->invalidated & (1u << i)) == 0) {
    server.missedWrite();
  }
}

uint32_t pendingReplicas(const PendingRequest& r) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < r.replica->count; ++i) {
    n += r.replica->outcome[i] == ReplicaOutcome::Pending ? 1 : 0;
  }
  return n;
}

bool replicaWriteDecided(const PendingRequest& r) {
  if (pendingReplicas(r) == 0) {
    return true;
  }
  if (r.replica->all) {
    return false;
  }
  for (uint32_t i = 0; i < r.replica->count; ++i) {
    const ReplicaOutcome o = r.replica->outcome[i];
    if (answered(o)) {
      return true;
    }
    if (o == ReplicaOutcome::Pending) {
      return false;  // it may still answer first in preference order
    }
  }
  return false;
}

void completeDecidedReplicaWrite(PendingRequest& r, stats::WorkerCounters& c) {
  if (r.replica == nullptr || r.complete || r.fragments_left - 1 != pendingReplicas(r) ||
      !replicaWriteDecided(r)) {
    return;
  }
  composeReplicaReply(r, c);
  r.complete = true;
  if (r.session != nullptr) {
    r.session->onRequestComplete(&r);
  }
}

void composeReplicaReply(PendingRequest& r, stats::WorkerCounters& c) {
  const uint32_t i = chosenReplica(r);
  const ReplicaOutcome o = r.replica->outcome[i];
  r.reply.drain(r.reply.size());
  if (o == ReplicaOutcome::Failed || o == ReplicaOutcome::Pending || o == ReplicaOutcome::Skipped) {
    stats::bump(c.server_errors);
    // Classic noreply gets nothing back even on failure; meta q always returns errors.
    if (!r.noreply) {
      r.reply.append(backendFailureReply(
          o == ReplicaOutcome::Failed ? r.replica->failure[i] : BackendFailure::Unavailable));
    }
    return;
  }
  std::string_view unit = r.replica->units[i];
  if (r.noreply) {
    // Classic noreply: memcached silences every reply but SERVER_ERROR (too large excepted).
    if (!unit.starts_with("SERVER_ERROR") || unit == protocol::kTooLargeLine) {
      return;
    }
  }
  if (warmInvalidatedHit(r) && r.command == protocol::Command::Delete &&
      unit == protocol::kNotFoundLine) {
    unit = protocol::kDeletedLine;  // warm-up: the previous server had it
  }
  r.reply.append(unit);
}

}  // namespace mcring::core
