// Dispatcher, as the PoolContext of ReplicationHandler (pool_handlers.h; replicas > 1;
// docs/design.md, "Replication"): a write to every replica of its key, a read's failover state,
// the TTLs its other replicas get.
#include <algorithm>
#include <array>
#include <span>

#include "proxy/backend/replica_write.h"
#include "proxy/dispatch/command_counters.h"
#include "proxy/dispatch/direct_features.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/failover.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

// A replicated mg keeps what the next replica gets if this one cannot serve it (and is never
// streamed meanwhile: failover.h).
void Dispatcher::keepForNextReplica(KeyedCall& call) {
  PendingRequest* r = call.r;
  ReadFailover& f = *(r->read_failover = worker_.readFailovers().acquire());
  r->rewrites = true;
  f.session = src_->id();
  f.topology = pool_->topology.get();
  f.key.assign(call.key);
  f.line.assign(call.line.substr(0, req_->line_length));
  if (call.quiet_meta) {
    protocol::RequestWriter(f.line).noop();
  }
  f.quiet = call.quiet_meta;
  observeDirect(*r);  // a miss or failure marks it for the next replica
}

// A replicated mg whose replica's connect could not even start: on to the next (failover.h).
void Dispatcher::sendToNextReplica(KeyedCall& call) {
  PendingRequest* r = call.r;
  BackendServer* server = call.server;
  keepForNextReplica(call);
  src_->input().drain(consumedLength());
  server->countFailure(server->lastFailure());
  r->read_failover->failed_at = server;
  r->read_failover->failure = server->lastFailure();
  r->reply.append(backendFailureReply(r->read_failover->failure));
  if (!continueReadFailover(*r, worker_)) {
    src_->completeWith(r, std::string_view());
  }
}

namespace {

// The flag tokens of a meta request's arguments after its key (ms: after its datalen too).
// Calls f(token) for each; stops early if f returns false.
template <typename F>
void forEachMetaFlag(std::string_view args, size_t skip_tokens, F f) {
  size_t i = 0;
  size_t token = 0;
  while (i < args.size()) {
    while (i < args.size() && args[i] == ' ') {
      ++i;
    }
    size_t j = i;
    while (j < args.size() && args[j] != ' ') {
      ++j;
    }
    if (j > i && token++ >= skip_tokens && !f(args.substr(i, j - i))) {
      return;
    }
    i = j;
  }
}

}  // namespace

// A write to every replica of its key (docs/design.md, "Replication"). A cas (cas, or an ms,
// md, ma with a C flag) goes to the primary alone: a cas unique is one server's; if the primary
// applies it, the other replicas get replica_followup (a plain set of the same value, flags and
// exptime; the meta command without C; an md for an ma, whose result only the primary knows).
void Dispatcher::sendToReplicas(KeyedCall& call) {
  PendingRequest* r = call.r;
  const std::string_view line = call.line;
  const std::string_view key = call.key;
  const uint32_t primary = call.index;
  static_assert(kReplicaSlots == routing::kMaxReplicas);
  std::array<uint32_t, kReplicaSlots> set{};
  uint32_t n =
      pool_->topology->router->replicaSet(key, std::span<uint32_t, routing::kMaxReplicas>(set));
  if (n == 0) {
    set[0] = primary;
    n = 1;
  }
  const bool meta = protocol::commandClass(req_->command) == CommandClass::Meta;
  const bool quiet = meta && req_->noreply;
  const std::string_view args = req_->args.in(line);
  bool cas = req_->command == Command::Cas;
  if (meta) {
    forEachMetaFlag(args, req_->command == Command::MetaSet ? 2 : 1, [&](std::string_view t) {
      if (t[0] == 'C') {
        cas = true;
      }
      return !cas;
    });
  }
  r->rewrites = true;
  r->replica = worker_.replicaWrites().acquire();
  r->replica->count = static_cast<uint8_t>(n);
  r->replica->all = pool_->config().replica_write_all;
  r->replica->quiet = quiet;
  r->replica->cas = cas && n > 1;
  r->replica->session = src_->id();
  r->replica->topology = pool_->topology.get();
  r->replica->key.assign(req_->keys[0].in(line));
  r->replica->key_b64 = req_->key_base64;
  r->fragments_left = 0;
  countForBackend(*pool_->by_index[set[0]], key);
  if (pool_->warmup) {
    if (BackendServer* prev = pool_->warmup->previousOwner(key, pool_->by_index[set[0]])) {
      invalidateAtPrevious(r, *prev, line);  // before the line leaves the input
    }
  }
  // Meta q is kept (the backend applies it; mcring's mn follows).
  const std::string& head = lineAsSent(line, meta ? protocol::Span() : req_->noreply_token);
  if (r->replica->cas) {
    // What the other replicas get if the primary applies the cas.
    std::string& fu = r->replica->followup;
    fu.clear();
    protocol::RequestWriter followup(fu);
    if (req_->command == Command::Cas) {
      // cas <key> <flags> <exptime> <bytes> <unique> -> set <key> <flags> <exptime> <bytes>
      followup.verb(Command::Set);
      size_t tokens = 0;
      forEachMetaFlag(args, 0, [&](std::string_view tok) {
        if (tokens++ < 4) {
          followup.arg(tok);
        }
        return tokens < 4;
      });
    } else {
      followup.verb(req_->command == Command::MetaArithmetic ? Command::MetaDelete : req_->command);
      size_t tokens = 0;
      const size_t fixed = req_->command == Command::MetaSet ? 2 : 1;
      const bool to_delete = req_->command == Command::MetaArithmetic;
      forEachMetaFlag(args, 0, [&](std::string_view tok) {
        const bool flag = tokens++ >= fixed;
        if (!flag || (!to_delete && tok[0] != 'C' && tok[0] != 'q' && tok[0] != 'E') ||
            (to_delete && (tok[0] == 'b' || tok[0] == 'k' || tok[0] == 'O'))) {
          followup.arg(tok);
        }
        return true;
      });
    }
    followup.end();
  }
  net::Buffer& in = src_->input();
  in.drain(req_->line_length);
  const uint64_t data_length = req_->has_data ? req_->value_length + 2 : 0;
  const std::string_view data = data_length > 0 ? in.contiguous(data_length) : std::string_view();
  if (r->replica->cas && req_->command != Command::MetaArithmetic) {
    r->replica->followup.append(data);
  }
  auto& counters = worker_.counters();
  for (uint32_t i = 0; i < n; ++i) {
    BackendServer* server = pool_->by_index[set[i]];
    r->replica->servers[i] = set[i];
    r->replica->units[i].clear();
    r->replica->outcome[i] = ReplicaOutcome::Pending;
    if (i > 0 && r->replica->cas) {
      r->replica->outcome[i] = ReplicaOutcome::Skipped;  // until the primary stored it
      continue;
    }
    if (i > 0) {
      stats::bump(server->stats().*kBackendCounterOf[effectIndex(req_->command)]);
    }
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      server->countFailure(server->lastFailure());
      replicaFailed(*r, i, server->lastFailure(), *server);
      continue;
    }
    protocol::RequestWriter write(conn->output());
    write.raw(head).raw(data);
    if (quiet) {
      write.noop();
    }
    const uint64_t bytes = write.written();
    if (i > 0) {
      stats::bump(counters.replica_writes);
    }
    ++r->fragments_left;
    conn->expect(*server, r, replicaWriteHandler(), replicaWriteTag(i, quiet),
                 quiet ? Expect::UntilNoop : Expect::OneUnit, bytes);
  }
  in.drain(data_length);
  if (r->fragments_left == 0) {
    // Not one replica could be reached.
    composeReplicaReply(*r, counters);
    r->complete = true;
    src_->onRequestComplete(r);
  }
}

// A TTL change (`line`: a `touch`, or an `mg <key> T<ttl>`) to the key's replicas other than
// `read_at`, as detached requests whose replies are nobody's (ReplicationHandler says why). A
// replica that cannot be reached missed it, as it would a write (return_flush).
void Dispatcher::sendToOtherReplicas(std::string_view key, uint32_t read_at,
                                     std::string_view line) {
  std::array<uint32_t, routing::kMaxReplicas> set{};
  const uint32_t n = pool_->topology->router->replicaSet(key, set);
  for (uint32_t j = 0; j < n; ++j) {
    if (set[j] == read_at) {
      continue;
    }
    BackendServer* server = pool_->by_index[set[j]];
    stats::bump(server->stats().other_commands);
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      server->missedWrite();
      continue;
    }
    PendingRequest* t = worker_.requests().acquire();
    t->refs = 1;
    t->fragments_left = 1;
    t->noreply = true;
    t->command = Command::Touch;
    conn->output().append(line);
    conn->expect(*server, t, 0, Delivery::Direct, Expect::OneUnit, line.size());
    worker_.requests().release(t);  // the backend's reference keeps it until the reply
  }
}

}  // namespace mcring::core
