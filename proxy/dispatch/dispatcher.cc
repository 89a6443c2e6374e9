// Dispatcher: routing, fragments, forwarding, broadcasts and local answers.
#include "proxy/dispatch/dispatcher.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <span>

#include "proxy/backend/replica_write.h"
#include "proxy/backend/spread_write.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/route_failover.h"
#include "proxy/dispatch/spread_fill.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;
using protocol::CommandEffect;

namespace {

// The counters a keyed request counts in, by CommandEffect (Read, Store, Delete, Touch,
// Other): per worker (`stats`; a keyed Read is mg, get/gets/gat/gats count per key elsewhere)
// and per backend (`stats backends`).
using WorkerCounter = std::atomic<uint64_t> stats::WorkerCounters::*;
using BackendCounter = std::atomic<uint64_t> stats::BackendStats::*;
constexpr WorkerCounter kWorkerCounterOf[] = {
    &stats::WorkerCounters::cmd_other, &stats::WorkerCounters::cmd_set,
    &stats::WorkerCounters::cmd_delete, &stats::WorkerCounters::cmd_touch,
    &stats::WorkerCounters::cmd_other};
constexpr BackendCounter kBackendCounterOf[] = {
    &stats::BackendStats::get_keys, &stats::BackendStats::stores, &stats::BackendStats::deletes,
    &stats::BackendStats::other_commands, &stats::BackendStats::other_commands};
static_assert(std::size(kWorkerCounterOf) == static_cast<size_t>(CommandEffect::Other) + 1);
static_assert(std::size(kBackendCounterOf) == static_cast<size_t>(CommandEffect::Other) + 1);

size_t effectIndex(protocol::Command c) {
  return static_cast<size_t>(protocol::commandEffect(c));
}

}  // namespace

void Dispatcher::invalidateKey(std::string_view line) {
  const std::string_view key = req_->routingKey(line, 0);
  if (pool_->config().routing.replicas > 1) {
    // Every replica may hold the old value.
    std::array<uint32_t, kReplicaSlots> set{};
    const uint32_t n =
        pool_->topology->router->replicaSet(key, std::span<uint32_t, routing::kMaxReplicas>(set));
    for (uint32_t i = 0; i < n; ++i) {
      invalidateAt(*pool_->by_index[set[i]], line);
    }
    return;
  }
  invalidateAt(*pool_->by_index[pool_->route(key)], line);
}

void Dispatcher::invalidateAt(BackendServer& server, std::string_view line) {
  BackendConnection* conn = server.connectionFor(src_->id());
  if (conn == nullptr) {
    return;
  }
  // Its reply (HD or NF) is nobody's business: a noreply request with no FIFO slot of its own
  // would break ordering, so it rides in a detached request that is never flushed.
  PendingRequest* r = worker_.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->noreply = true;
  r->command = Command::MetaDelete;  // a write: never answered as a miss (unavailable.h)
  net::Buffer& out = conn->output();
  out.append("md ");
  out.append(req_->keys[0].in(line));
  out.append(req_->key_base64 ? " b\r\n" : "\r\n");
  conn->expect(r, 0, Delivery::Direct, Expect::OneUnit, req_->keys[0].length + 5);
  worker_.requests().release(r);  // the backend's reference keeps it until the reply
}

void Dispatcher::invalidateTooLarge(RequestSource& src, PoolRuntime& pool,
                                    const protocol::Request& req, std::string_view line) {
  begin(src, pool, req);
  invalidateKey(line);
}

void Dispatcher::dispatch(RequestSource& src, PoolRuntime& pool, const protocol::Request& req,
                          std::string_view line) {
  begin(src, pool, req);
  if (pool.routed()) {
    dispatchRouted(line);  // routed.cc: to the pool of the key's route
    return;
  }
  dispatchToPool(line);
}

PendingRequest* Dispatcher::newRequest(protocol::Command command) {
  PendingRequest* r = src_->newRequest(command);
  r->pool = pool_;
  if (route_ != nullptr) {
    r->route_stats = route_->stats.get();
  }
  if (failover_ready_) {
    // Its route may send it on to the next pool (route_failover.h): kept whole, never streamed.
    r->route_failover.assign(route_->failover.begin(), route_->failover.end());
    r->route_failover_on_miss = route_->config->failover_on_miss;
    r->route_expect = failover_expect_;
    r->route_resend.swap(failover_bytes_);
    r->failover_key.assign(failover_key_);
    r->rewrites = true;
    failover_ready_ = false;
  }
  if (probe_ != nullptr) {
    // A shadowed read: its whole reply is compared with the shadow's when complete.
    r->shadow_probe = probe_;
    probe_ = nullptr;
    r->rewrites = true;
  }
  return r;
}

void Dispatcher::dispatchToPool(std::string_view line) {
  switch (protocol::commandClass(req_->command)) {
    case CommandClass::Retrieval:
      dispatchRetrieval(line);
      return;
    case CommandClass::Storage:
    case CommandClass::Keyed:
    case CommandClass::Meta:
      dispatchKeyed(line);
      return;
    case CommandClass::MetaNoop: {
      PendingRequest* r = newRequest(req_->command);
      src_->input().drain(req_->line_length);
      src_->completeWith(r, protocol::kMetaNoopLine);
      return;
    }
    case CommandClass::Local:
      answerLocal(line);
      return;
    case CommandClass::Broadcast:
      dispatchFlushAll(line);
      return;
  }
}

void Dispatcher::dispatchKeyed(std::string_view line) {
  auto& counters = worker_.counters();
  stats::bump(counters.*kWorkerCounterOf[effectIndex(req_->command)]);
  bool meta = protocol::commandClass(req_->command) == CommandClass::Meta;
  if (meta) {
    stats::bump(counters.cmd_meta);
  }
  PendingRequest* r = newRequest(req_->command);
  // Meta q is left for the backend to apply (which replies it hides depends on the item: an
  // autovivified `ma` still answers HD); an `mn` after it tells where its reply ends.
  bool quiet_meta = meta && req_->noreply;
  if (!meta) {
    r->noreply = req_->noreply;
  }
  net::Buffer& in = src_->input();
  std::string_view key = req_->routingKey(line, 0);
  uint32_t index = pool_->route(key);
  // Replication (replicas > 1): a write goes to every replica of the key, an mg to its first
  // readable replica (and on to the next if that one cannot serve it: failover.h).
  const bool replicated = pool_->config().routing.replicas > 1;
  if (replicated && replicatedWrite(req_->command)) {
    dispatchReplicatedWrite(r, line, key, index);
    return;
  }
  const bool replicated_read = replicated && req_->command == Command::MetaGet;
  if (replicated_read) {
    index = readReplica(*pool_, worker_, key, src_->id());
  }
  // A spread key (backend/hot_spread.h): a write goes to every copy, a plain mg to one.
  // (A base64 meta key is looked up decoded: its writes reach the copies like any other.)
  const std::shared_ptr<SpreadEntry>* spread = pool_->spreadEntry(key);
  const SpreadUse use = spread != nullptr ? spreadUse(line) : SpreadUse::Primary;
  uint32_t copy = 0;
  if (use == SpreadUse::ReadCopy) {
    copy = readCopy(*spread);
    index = (*spread)->copies[copy];
  }
  BackendServer* server = pool_->by_index[index];
  countForBackend(*server, key);
  prepareUnavailableAnswer(*r, *pool_, *req_, line);
  if (replicated_read) {
    std::string_view args = req_->args.in(line);
    size_t key_end = req_->keys[0].offset + req_->keys[0].length - req_->args.offset;
    const std::optional<std::string_view> ttl =
        protocol::findMetaFlag(args.substr(std::min(key_end, args.size())), 'T');
    if (ttl && !ttl->empty()) {
      head_.assign("mg ");
      head_.append(req_->keys[0].in(line));
      head_.append(req_->key_base64 ? " b T" : " T");
      head_.append(*ttl);
      head_.append("\r\n");
      touchOtherReplicas(key, index, head_);
    }
  }
  BackendConnection* conn = server->connectionFor(src_->id());
  if (conn == nullptr) {
    if (replicated_read) {
      // Its connect could not even start: the next replica (failover.h).
      prepareReplicaRead(r, line, key, quiet_meta);
      src_->input().drain(consumedLength());
      server->countFailure(server->lastFailure());
      r->read_failed_at = server;
      r->read_failure = server->lastFailure();
      r->reply.append(backendFailureReply(r->read_failure));
      if (!continueReadFailover(*r, worker_)) {
        src_->completeWith(r, std::string_view());
      }
      return;
    }
    failUnavailable(r, *server, consumedLength());
    return;
  }
  if (use == SpreadUse::ReadCopy && copy > 0) {
    r->spread_role = SpreadRole::Read;
    r->spread = *spread;
    r->spread_copy = copy;
  } else if (use == SpreadUse::Invalidate) {
    // Its copies could not be written alike (a cas value, meta flags): none is read again until
    // a fill, which waits for this write to be done (settleSpreadWrite).
    SpreadEntry& e = **spread;
    r->spread_role = SpreadRole::Invalidate;
    r->spread = *spread;
    e.writes_started.fetch_add(1);
    e.filled.store(1);
    stats::bump(counters.spread_invalidations);
  }
  if (pool_->warmup) {
    if (BackendServer* prev = pool_->warmup->previousOwner(key, server)) {
      if (req_->command == Command::MetaGet) {
        // A miss may take a second hop (BackendConnection asks launchMetaWarmup on EN).
        std::string_view args = req_->args.in(line);
        size_t key_end = req_->keys[0].offset + req_->keys[0].length - req_->args.offset;
        std::string_view flags = args.substr(std::min(key_end, args.size()));
        if (!quiet_meta && !req_->key_base64 && metaFlagsWarmable(flags)) {
          r->warm = true;
          r->line.assign(key);
          r->key_offsets.assign({0, static_cast<uint32_t>(key.size())});
          r->key_count = 1;
          r->meta_flags.assign(flags);
        }
      } else if (protocol::commandClass(req_->command) == CommandClass::Storage ||
                 req_->command == Command::Delete || req_->command == Command::MetaDelete ||
                 req_->command == Command::MetaSet || req_->command == Command::MetaArithmetic ||
                 req_->command == Command::Incr || req_->command == Command::Decr) {
        invalidatePrevious(r, *prev, line);
      }
    }
  }
  if (use == SpreadUse::Write) {
    dispatchSpreadWrite(r, *conn, *spread, line);
    return;
  }
  if (replicated_read && !r->warm) {
    prepareReplicaRead(r, line, key, quiet_meta);
  }
  net::Buffer& out = conn->output();
  uint64_t sent = consumedLength();
  if (quiet_meta) {
    in.moveTo(out, consumedLength());
    out.append("mn\r\n");
    conn->expect(r, 0, Delivery::Direct, Expect::UntilNoop, sent + 4);
    return;
  }
  if (replayable(line)) {  // no data block: the line is the whole request
    r->resend.assign(line.substr(0, req_->line_length));
    if (!req_->noreply_token.empty()) {
      r->resend.erase(req_->noreply_token.offset, req_->noreply_token.length);
    }
  }
  if (req_->noreply_token.empty()) {
    in.moveTo(out, consumedLength());
  } else {
    sent -= req_->noreply_token.length;
    // The proxy always reads the backend's reply (to stay in sync) and drops it itself.
    const protocol::Span& t = req_->noreply_token;
    out.append(line.substr(0, t.offset));
    out.append(line.substr(t.offset + t.length));
    in.drain(req_->line_length);
    if (req_->has_data) {
      in.moveTo(out, req_->value_length + 2);
    }
  }
  conn->expect(r, 0, Delivery::Direct, Expect::OneUnit, sent);
}

// What a request does to a spread key. Writes that every copy applies alike go to all of them;
// a cas (its unique is the primary's) and the meta writes (flags mcring does not reason about)
// go to the primary and unfill the copies; reads that return a CAS, or may change the item, go
// to the primary (the latter unfill the copies too).
Dispatcher::SpreadUse Dispatcher::spreadUse(std::string_view line) const {
  switch (req_->command) {
    case Command::Set:
    case Command::Add:
    case Command::Replace:
    case Command::Append:
    case Command::Prepend:
    case Command::Delete:
    case Command::Incr:
    case Command::Decr:
    case Command::Touch:
      return SpreadUse::Write;
    case Command::MetaGet: {
      std::string_view args = req_->args.in(line);
      size_t key_end = req_->keys[0].offset + req_->keys[0].length - req_->args.offset;
      std::string_view flags = args.substr(std::min(key_end, args.size()));
      bool cas = false;
      for (size_t i = 0; i < flags.size(); ++i) {
        if (flags[i] == ' ' || flags[i] == '\r' || flags[i] == '\n' ||
            (i > 0 && flags[i - 1] != ' ')) {
          continue;  // only each token's first character is its flag
        }
        if (flags[i] == 'c') {
          cas = true;
        } else if (std::string_view("vfktOsqb").find(flags[i]) == std::string_view::npos) {
          return SpreadUse::Invalidate;  // N, T, E, I, h, l, ...: it may change the item
        }
      }
      return cas ? SpreadUse::Primary : SpreadUse::ReadCopy;
    }
    case Command::MetaDebug:
      return SpreadUse::Primary;
    default:
      return SpreadUse::Invalidate;
  }
}

// The copy a plain read of a spread key goes to: a random filled one (the primary while the
// key collapses, or during a warm-up window, whose second hops assume the key's own server).
// Starts a fill if a copy is unfilled and the pool's set has settled.
uint32_t Dispatcher::readCopy(const std::shared_ptr<SpreadEntry>& entry) {
  SpreadEntry& e = *entry;
  if (pool_->warmup) {
    return 0;
  }
  const uint64_t now = common::coarseMonotonicNs() / 1000000;
  if (e.phase.load() == SpreadPhase::Spreading && !e.allFilled(now) &&
      pool_->spread->settled(now)) {
    startSpreadFill(*pool_, entry, worker_, src_->id());
  }
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  uint32_t copy = e.pickRead(rng_, now);
  e.reads[copy].fetch_add(1, std::memory_order_relaxed);
  if (copy > 0) {
    stats::bump(worker_.counters().spread_reads);
  }
  return copy;
}

// The request's line as a backend gets it, in head_ (scratch: no allocation once warm), without
// the `noreply` token `t` (empty: none): mcring reads every reply and drops it itself.
const std::string& Dispatcher::lineAsSent(std::string_view line, const protocol::Span& t) {
  head_.assign(line.substr(0, t.empty() ? req_->line_length : t.offset));
  if (!t.empty()) {
    head_.append(line.substr(t.offset + t.length, req_->line_length - t.offset - t.length));
  }
  return head_;
}

// A write of a spread key: to every copy (classic noreply dropped there, as for the primary:
// mcring reads every reply), the client's reply the primary's, sent once every copy answered
// (`rewrites`: never streamed before). A copy that answers otherwise loses its filled bit.
void Dispatcher::dispatchSpreadWrite(PendingRequest* r, BackendConnection& primary,
                                     const std::shared_ptr<SpreadEntry>& entry,
                                     std::string_view line) {
  SpreadEntry& e = *entry;
  net::Buffer& in = src_->input();
  const std::string& head = lineAsSent(line, req_->noreply_token);
  if (req_->command == Command::Touch) {
    r->resend = head;  // replayable (see replayable())
  }
  r->rewrites = true;
  r->spread_role = SpreadRole::Write;
  r->spread = entry;
  r->spread_replies.assign(e.copies.size(), kSpreadPending);
  e.writes_started.fetch_add(1);
  in.drain(req_->line_length);
  const uint64_t data_length = req_->has_data ? req_->value_length + 2 : 0;
  std::string_view data = data_length > 0 ? in.contiguous(data_length) : std::string_view();
  auto& counters = worker_.counters();
  for (uint32_t i = 1; i < e.copies.size(); ++i) {
    BackendServer* server = pool_->by_index[e.copies[i]];
    stats::bump(server->stats().*kBackendCounterOf[effectIndex(req_->command)]);
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      continue;  // its reply stays pending: the copy is unfilled when the write settles
    }
    net::Buffer& out = conn->output();
    out.append(head);
    out.append(data);
    ++r->fragments_left;
    stats::bump(counters.spread_write_copies);
    conn->expect(r, spreadCopyHandler(), i, Expect::OneUnit, head.size() + data.size());
  }
  net::Buffer& out = primary.output();
  out.append(head);
  if (data_length > 0) {
    in.moveTo(out, data_length);
  }
  primary.expect(r, 0, Delivery::Direct, Expect::OneUnit, head.size() + data_length);
}

// A replicated mg keeps what the next replica gets if this one cannot serve it (and is never
// streamed meanwhile: failover.h).
void Dispatcher::prepareReplicaRead(PendingRequest* r, std::string_view line, std::string_view key,
                                    bool quiet) {
  r->replica_read = true;
  r->rewrites = true;
  r->replica_session = src_->id();
  r->replica_topology = pool_->topology.get();
  r->failover_key.assign(key);
  r->failover_line.assign(line.substr(0, req_->line_length));
  if (quiet) {
    r->failover_line.append("mn\r\n");
  }
  r->failover_expect = quiet ? Expect::UntilNoop : Expect::OneUnit;
}

// The writes that go to every replica of their key (replicas > 1). mg and me are reads (an mg
// with N, T or E changes the item at the replica it reads: docs/design.md, "Replication").
bool Dispatcher::replicatedWrite(Command c) {
  switch (c) {
    case Command::Set:
    case Command::Add:
    case Command::Replace:
    case Command::Append:
    case Command::Prepend:
    case Command::Cas:
    case Command::Delete:
    case Command::Incr:
    case Command::Decr:
    case Command::Touch:
    case Command::MetaSet:
    case Command::MetaDelete:
    case Command::MetaArithmetic:
      return true;
    default:
      return false;
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
void Dispatcher::dispatchReplicatedWrite(PendingRequest* r, std::string_view line,
                                         std::string_view key, uint32_t primary) {
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
  r->replica_count = static_cast<uint8_t>(n);
  r->replica_all = pool_->config().replica_write_all;
  r->replica_quiet = quiet;
  r->replica_cas = cas && n > 1;
  r->replica_session = src_->id();
  r->replica_topology = pool_->topology.get();
  r->replica_key.assign(req_->keys[0].in(line));
  r->replica_key_b64 = req_->key_base64;
  r->fragments_left = 0;
  countForBackend(*pool_->by_index[set[0]], key);
  if (pool_->warmup) {
    if (BackendServer* prev = pool_->warmup->previousOwner(key, pool_->by_index[set[0]])) {
      invalidatePrevious(r, *prev, line);  // before the line leaves the input
    }
  }
  // Meta q is kept (the backend applies it; mcring's mn follows).
  const std::string& head = lineAsSent(line, meta ? protocol::Span() : req_->noreply_token);
  if (r->replica_cas) {
    // What the other replicas get if the primary applies the cas.
    std::string& fu = r->replica_followup;
    fu.clear();
    if (req_->command == Command::Cas) {
      // cas <key> <flags> <exptime> <bytes> <unique> -> set <key> <flags> <exptime> <bytes>
      fu.append("set");
      size_t tokens = 0;
      forEachMetaFlag(args, 0, [&](std::string_view tok) {
        if (tokens++ < 4) {
          fu.append(" ");
          fu.append(tok);
        }
        return tokens < 4;
      });
    } else {
      fu.append(req_->command == Command::MetaArithmetic ? "md"
                                                         : protocol::commandName(req_->command));
      size_t tokens = 0;
      const size_t fixed = req_->command == Command::MetaSet ? 2 : 1;
      const bool to_delete = req_->command == Command::MetaArithmetic;
      forEachMetaFlag(args, 0, [&](std::string_view tok) {
        const bool flag = tokens++ >= fixed;
        if (!flag || (!to_delete && tok[0] != 'C' && tok[0] != 'q' && tok[0] != 'E') ||
            (to_delete && (tok[0] == 'b' || tok[0] == 'k' || tok[0] == 'O'))) {
          fu.append(" ");
          fu.append(tok);
        }
        return true;
      });
    }
    fu.append("\r\n");
  }
  net::Buffer& in = src_->input();
  in.drain(req_->line_length);
  const uint64_t data_length = req_->has_data ? req_->value_length + 2 : 0;
  const std::string_view data = data_length > 0 ? in.contiguous(data_length) : std::string_view();
  if (r->replica_cas && req_->command != Command::MetaArithmetic) {
    r->replica_followup.append(data);
  }
  auto& counters = worker_.counters();
  for (uint32_t i = 0; i < n; ++i) {
    BackendServer* server = pool_->by_index[set[i]];
    r->replica_servers[i] = set[i];
    r->replica_units[i].clear();
    r->replica_outcome[i] = ReplicaOutcome::Pending;
    if (i > 0 && r->replica_cas) {
      r->replica_outcome[i] = ReplicaOutcome::Skipped;  // until the primary stored it
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
    net::Buffer& out = conn->output();
    out.append(head);
    out.append(data);
    uint64_t bytes = head.size() + data.size();
    if (quiet) {
      out.append("mn\r\n");
      bytes += 4;
    }
    if (i > 0) {
      stats::bump(counters.replica_writes);
    }
    ++r->fragments_left;
    conn->expect(r, replicaWriteHandler(), replicaWriteTag(i, quiet),
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

// A keyed request that is safe to send twice if its backend connection closes under it
// (BackendConnection::replayable): touch (it sets the same TTL again) and an mg without N (creates
// the item on a miss, and only the first asker wins it) or R (wins a recache); its T sets the same
// TTL again. A quiet mg never gets here (it ends with the mn mcring adds).
bool Dispatcher::replayable(std::string_view line) const {
  if (req_->command == Command::Touch) {
    return true;
  }
  if (req_->command != Command::MetaGet) {
    return false;
  }
  std::string_view args = req_->args.in(line);
  size_t key_end = req_->keys[0].offset + req_->keys[0].length - req_->args.offset;
  std::string_view flags = args.substr(std::min(key_end, args.size()));
  for (size_t i = 0; i < flags.size(); ++i) {
    if ((i == 0 || flags[i - 1] == ' ') && (flags[i] == 'N' || flags[i] == 'R')) {
      return false;
    }
  }
  return true;
}

// Warm migration: a write or delete of a moved key also deletes the previous server's copy
// (so that neither a later warm-up fetch nor a rollback of the change brings the old value
// back), and cancels copies of fetches of it in flight. The request's reply waits for it.
void Dispatcher::invalidatePrevious(PendingRequest* r, BackendServer& prev, std::string_view line) {
  worker_.warmup().cancelCopies(req_->routingKey(line, 0));
  r->rewrites = true;  // a delete's NOT_FOUND may become DELETED (BackendConnection::finish)
  BackendConnection* conn = prev.connectionFor(src_->id());
  if (conn == nullptr) {
    return;  // unreachable: it serves nobody, and a fetch from it fails too
  }
  net::Buffer& out = conn->output();
  out.append("md ");
  out.append(req_->keys[0].in(line));
  out.append(req_->key_base64 ? " b\r\n" : "\r\n");
  ++r->fragments_left;
  stats::bump(worker_.counters().warmup_invalidations);
  conn->expect(r, warmInvalidationHandler(), 0, Expect::OneUnit, req_->keys[0].length + 5);
}

// Per-backend accounting of one keyed request: command kind and the key's distinct-key sketch;
// and the pool's hot-key sketch.
void Dispatcher::countForBackend(BackendServer& server, std::string_view key) {
  stats::BackendStats& bs = server.stats();
  stats::bump(bs.*kBackendCounterOf[effectIndex(req_->command)]);
  const uint64_t hash = stats::HyperLogLog::hashKey(key);
  bs.keys.add(hash);
  PoolRuntime& pool = server.pool();  // a multi-get across routes spans pools
  if (pool.hot_keys) {
    pool.hot_keys->record(key, hash);
  }
}

// The key's server is backing off after a failure: discard the request's `bytes` and answer
// at once, without a connect attempt: a read as the pool's unavailable_reads says
// (unavailable.h), anything else with that failure (nothing for classic noreply).
void Dispatcher::failUnavailable(PendingRequest* r, BackendServer& server, uint64_t bytes) {
  src_->input().drain(bytes);
  server.countFailure(server.lastFailure());
  if (!r->route_failover.empty()) {
    // Its route may have another pool for it (route_failover.h).
    r->backend_failed = true;
    if (!answerUnavailable(*r, 0, server, server.lastFailure(), worker_)) {
      r->reply.append(backendFailureReply(server.lastFailure()));
    }
    if (continueRouteFailover(*r, worker_)) {
      return;
    }
    if (r->reply.size() > 0 && r->reply.contiguous(1)[0] == 'S') {  // SERVER_ERROR, not a miss
      stats::bump(worker_.counters().server_errors);
      stats::bump(r->route_stats->errors);
      if (r->noreply) {
        r->reply.drain(r->reply.size());
      }
    }
    src_->completeWith(r, std::string_view());
    return;
  }
  if (answerUnavailable(*r, 0, server, server.lastFailure(), worker_)) {
    src_->completeWith(r, std::string_view());
    return;
  }
  stats::bump(worker_.counters().server_errors);
  if (r->route_stats != nullptr) {
    stats::bump(r->route_stats->errors);
  }
  src_->completeWith(r,
                     r->noreply ? std::string_view() : backendFailureReply(server.lastFailure()));
}

void Dispatcher::dispatchRetrieval(std::string_view line) {
  auto& counters = worker_.counters();
  size_t n = req_->keys.size();
  stats::bump(counters.cmd_get, n);
  if (req_->command == Command::Gat || req_->command == Command::Gats) {
    stats::bump(counters.cmd_touch);
  }
  routes_.resize(n);
  bool single = true;
  // Plain get keys that are spread go to one of their filled copies (gets returns the primary's
  // CAS unique: to the primary). gat/gats change the item's TTL: to the primary, and the copies
  // are unfilled, as for an mg with T (spreadUse).
  const bool spread = pool_->spread && !pool_->spread->entries.empty();
  const bool spreadable = spread && req_->command == Command::Get;
  const bool touches = spread && (req_->command == Command::Gat || req_->command == Command::Gats);
  spread_reads_.clear();
  // Replication: each key to its first readable replica, always split per key (failover.h).
  const bool replicated = pool_->config().routing.replicas > 1;
  for (size_t i = 0; i < n; ++i) {
    std::string_view key = req_->keys[i].in(line);
    routes_[i] = replicated ? readReplica(*pool_, worker_, key, src_->id()) : pool_->route(key);
    if (spreadable) {
      if (const std::shared_ptr<SpreadEntry>* e = pool_->spreadEntry(key)) {
        uint32_t copy = readCopy(*e);
        if (copy > 0) {
          routes_[i] = (*e)->copies[copy];
          spread_reads_.push_back({static_cast<uint32_t>(i), copy, *e});
        }
      }
    } else if (touches) {
      if (const std::shared_ptr<SpreadEntry>* e = pool_->spreadEntry(key)) {
        // No copy is read again until a fill, which waits until this gat is done
        // (settleSpreadWrite: a spread read of copy 0 is the primary's TTL change).
        (*e)->writes_started.fetch_add(1);
        (*e)->filled.store(1);
        stats::bump(counters.spread_invalidations);
        spread_reads_.push_back({static_cast<uint32_t>(i), 0, *e});
      }
    }
    single = single && routes_[i] == routes_[0];
  }
  bool warm = false;
  if (pool_->warmup) {
    for (size_t i = 0; i < n && !warm; ++i) {
      warm = pool_->warmup->previousOwner(req_->keys[i].in(line), pool_->by_index[routes_[i]]) !=
             nullptr;
    }
  }
  if (replicated && (req_->command == Command::Gat || req_->command == Command::Gats)) {
    const std::string_view exptime = req_->exptime.in(line);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view key = req_->keys[i].in(line);
      head_.assign("touch ");
      head_.append(key);
      head_.append(" ");
      head_.append(exptime);
      head_.append("\r\n");
      touchOtherReplicas(key, routes_[i], head_);
    }
  }
  if (!single || warm || coalescing() || splitsLines(line.size()) || !spread_reads_.empty() ||
      replicated) {
    // A moved key's miss takes a second hop: that needs the per-key bookkeeping of a split get,
    // and so does a get whose keys share a line with other requests' (coalesce_gets), and a long
    // gat/gats that goes to its server as several lines; and a key read at a spread copy, whose
    // miss there clears the copy (completeRequest).
    dispatchMultiget(line, warm);
    return;
  }
  // Every key lives on one backend: forward the line as-is and pass the reply through.
  PendingRequest* r = newRequest(req_->command);
  r->key_count = static_cast<uint32_t>(n);
  BackendServer* server = pool_->by_index[routes_[0]];
  for (size_t i = 0; i < n; ++i) {
    countForBackend(*server, req_->keys[i].in(line));
  }
  BackendConnection* conn = server->connectionFor(src_->id());
  if (conn == nullptr) {
    failUnavailable(r, *server, req_->line_length);
    return;
  }
  r->resend.assign(line.substr(0, req_->line_length));  // a retrieval may be sent again
  src_->input().moveTo(conn->output(), req_->line_length);
  conn->expect(r, 0, Delivery::Direct, Expect::Retrieval, req_->line_length);
}

// gat/gats, and an mg with T (binary TOUCH and GAT become one), set the TTL of what they read,
// and a replicated read goes to one replica (`read_at`): the key's other replicas get the same
// TTL by a detached `line` (a `touch`, or an `mg <key> T<ttl>`: a write, whose reply is nobody's),
// so that a failover after the TTL does not read the key a client told to expire, nor lose a TTL
// a client extended. A replica that cannot be reached missed it, as it would a write
// (return_flush).
void Dispatcher::touchOtherReplicas(std::string_view key, uint32_t read_at, std::string_view line) {
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
    conn->expect(t, 0, Delivery::Direct, Expect::OneUnit, line.size());
    worker_.requests().release(t);  // the backend's reference keeps it until the reply
  }
}

void Dispatcher::dispatchMultiget(std::string_view line, bool warm) {
  auto& counters = worker_.counters();
  PendingRequest* r = newRequest(req_->command);
  r->shape = Shape::Multiget;
  r->warm = warm;
  r->exptime = req_->exptime;
  size_t n = req_->keys.size();
  r->key_count = static_cast<uint32_t>(n);
  r->line.assign(line);
  r->key_offsets.resize(2 * n);
  r->key_fragment.resize(n);
  r->key_hit_length.assign(n, 0);
  r->spread_reads.swap(spread_reads_);
  spread_reads_.clear();
  if (across_ == nullptr && pool_->config().routing.replicas > 1 && !warm) {
    r->replica_read = true;  // fragments that fail go on to each key's next replica
    r->rewrites = true;
    r->replica_session = src_->id();
    r->replica_topology = pool_->topology.get();
  }
  size_t servers = across_ != nullptr ? across_->size() : pool_->by_index.size();
  fragment_of_.assign(servers, -1);
  fragment_bytes_.clear();
  const bool split = splitsLines(line.size());
  // "gat <exptime>" ... "\r\n": what every line of a fragment carries besides its keys.
  const size_t overhead = protocol::commandName(req_->command).size() + req_->exptime.length + 4;
  uint32_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    r->key_offsets[2 * i] = req_->keys[i].offset;
    r->key_offsets[2 * i + 1] = req_->keys[i].length;
    uint32_t s = routes_[i];
    const size_t add = 1 + req_->keys[i].length;
    if (fragment_of_[s] >= 0 && split &&
        fragment_bytes_[static_cast<size_t>(fragment_of_[s])] + add > kMaxBackendLine) {
      fragment_of_[s] = -1;  // this server's line is full: its next keys start another
    }
    if (fragment_of_[s] < 0) {
      fragment_of_[s] = static_cast<int32_t>(count);
      if (r->fragments.size() <= count) {
        r->fragments.emplace_back();
      }
      r->fragments[count].server = s;
      fragment_bytes_.push_back(overhead);
      ++count;
    }
    uint32_t f = static_cast<uint32_t>(fragment_of_[s]);
    fragment_bytes_[f] += add;
    countForBackend(serverAt(s), req_->keys[i].in(line));
    r->key_fragment[i] = f;
    r->fragments[f].key_indices.push_back(static_cast<uint32_t>(i));
  }
  r->fragment_count = count;
  r->fragments_left = count;
  src_->input().drain(req_->line_length);

  std::string_view name = protocol::commandName(req_->command);
  std::string_view exptime = req_->exptime.in(r->line);
  // Send every fragment first, then account for immediate failures, so that a request that
  // completes synchronously is never touched again here.
  uint32_t failed_now = 0;
  bool errored_now = false;
  for (uint32_t f = 0; f < count; ++f) {
    Fragment& frag = r->fragments[f];
    BackendServer* server = &serverAt(frag.server);
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      frag.done = true;
      server->countFailure(server->lastFailure());
      if (r->replica_read) {
        frag.failed = true;  // its keys go on to their next replicas (failover.h)
        frag.failure = server->lastFailure();
        ++failed_now;
        continue;
      }
      // Its keys are misses (unavailable_reads: miss), or the whole reply is the failure.
      if (!answerUnavailable(*r, f, *server, server->lastFailure(), worker_)) {
        errored_now = true;
        if (!r->failed) {
          r->failed = true;
          r->error_line.assign(backendFailureReply(server->lastFailure()));
        }
      }
      ++failed_now;
      continue;
    }
    if (coalescing()) {
      conn->sendSharedKeys(r, f, name);
      continue;
    }
    net::Buffer& out = conn->output();
    size_t before = out.size();
    out.append(name);
    if (!exptime.empty()) {
      out.append(" ");
      out.append(exptime);
    }
    for (uint32_t idx : frag.key_indices) {
      out.append(" ");
      out.append(multigetKey(*r, idx));
    }
    out.append("\r\n");
    conn->expect(r, f, Delivery::Fragment, Expect::Retrieval, out.size() - before);
  }
  if (failed_now > 0) {
    if (errored_now) {  // a replicated read: counted if no replica serves it (failover.h)
      stats::bump(counters.server_errors);
    }
    r->fragments_left -= failed_now;
    if (r->fragments_left == 0) {
      if (continueReadFailover(*r, worker_)) {
        return;  // the next replicas answer it
      }
      assembleMultiget(*r, counters);
      r->complete = true;
      src_->onRequestComplete(r);
    }
  }
}

void Dispatcher::dispatchFlushAll(std::string_view line) {
  stats::bump(worker_.counters().cmd_flush);
  PendingRequest* r = newRequest(req_->command);
  r->shape = Shape::Broadcast;
  r->noreply = req_->noreply;
  net::Buffer& in = src_->input();
  if (!pool_->config().allow_flush_all) {
    in.drain(req_->line_length);
    refuse(r);
    return;
  }
  const protocol::Span& t = req_->noreply_token;
  std::string forward(line.substr(0, t.empty() ? line.size() : t.offset));
  if (!t.empty()) {
    forward.append(line.substr(t.offset + t.length));
  }
  in.drain(req_->line_length);
  // A routed listener's flush_all reaches every pool its routes send to.
  flush_servers_.clear();
  if (pool_->routed()) {
    routedServers(flush_servers_);
  } else {
    flush_servers_.assign(pool_->by_index.begin(), pool_->by_index.end());
  }
  uint32_t count = static_cast<uint32_t>(flush_servers_.size());
  r->fragments_left = count;
  uint32_t failed_now = 0;
  for (uint32_t s = 0; s < count; ++s) {
    BackendServer* server = flush_servers_[s];
    BackendConnection* conn = server->connectionFor(src_->id());
    stats::bump(server->stats().other_commands);
    if (conn == nullptr) {
      server->countFailure(server->lastFailure());
      if (!r->failed) {
        r->failed = true;
        r->error_line.assign(backendFailureReply(server->lastFailure()));
      }
      ++failed_now;
      continue;
    }
    conn->output().append(forward);
    conn->expect(r, s, Delivery::Broadcast, Expect::OneUnit, forward.size());
  }
  if (failed_now > 0) {
    r->fragments_left -= failed_now;
    if (r->fragments_left == 0) {
      src_->completeWith(r, r->error_line);
    }
  }
}

// memcached -F's answer (silent with noreply), counted as memcached counts it: in cmd_flush too.
void Dispatcher::refuse(PendingRequest* r) {
  stats::bump(worker_.counters().cmd_flush_refused);
  stats::bump(worker_.counters().client_errors);
  src_->completeWith(r, r->noreply ? std::string_view() : protocol::kFlushAllRefusedLine);
}

void Dispatcher::refuseFlushAll(RequestSource& src, PoolRuntime& pool,
                                const protocol::Request& req) {
  begin(src, pool, req);
  stats::bump(worker_.counters().cmd_flush);
  PendingRequest* r = newRequest(req_->command);
  r->noreply = req_->noreply;
  refuse(r);
}

void Dispatcher::answerLocal(std::string_view line) {
  PendingRequest* r = newRequest(req_->command);
  // Build the reply while `line` (a view into the input buffer) is still valid.
  std::string out;
  // Answered from the pool's servers (stats_views.h) instead of here.
  bool from_servers = false;
  protocol::StatsView view = protocol::StatsView::Version;
  switch (req_->command) {
    case Command::Version:
      from_servers = true;
      break;
    case Command::Verbosity:
      out = req_->noreply ? "" : protocol::kOkLine;
      break;
    case Command::Quit:
      r->close_after = true;
      src_->stopReading();
      break;
    case Command::Stats:
      out = req_->args.in(line);  // the arguments, for now
      if (auto v = protocol::statsViewOf(out)) {
        view = *v;
        from_servers = true;
        if (view == protocol::StatsView::CacheDump && !pool_->config().allow_dump) {
          from_servers = false;
          out = protocol::kCacheDumpRefusedLine;
          stats::bump(worker_.counters().client_errors);
        }
      } else {
        std::string args = std::move(out);
        if (!views_.renderer().render(args, &out)) {
          stats::bump(worker_.counters().client_errors);
        }
      }
      break;
    case Command::LruCrawler:
      if (!pool_->config().allow_dump) {
        stats::bump(worker_.counters().client_errors);
        out = protocol::kMetadumpRefusedLine;
        break;
      }
      out = line.substr(0, req_->line_length);
      src_->input().drain(req_->line_length);
      dumps_.answer(*pool_, r, out);
      return;
    default:
      out = "ERROR\r\n";
      break;
  }
  src_->input().drain(req_->line_length);
  if (from_servers) {
    views_.answer(*src_, *pool_, r, view, out);
    return;
  }
  src_->completeWith(r, out);
}

}  // namespace mcring::core
