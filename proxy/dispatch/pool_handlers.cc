#include "proxy/dispatch/pool_handlers.h"

#include <algorithm>

#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/direct_features.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

namespace {

// An mg's flags: its arguments after its key.
std::string_view metaFlagsOf(const protocol::Request& req, std::string_view line) {
  const std::string_view args = req.args.in(line);
  const size_t key_end = req.keys[0].offset + req.keys[0].length - req.args.offset;
  return args.substr(std::min(key_end, args.size()));
}

// The writes that go to every replica of their key. mg and me are reads (an mg with N, T or E
// changes the item at the replica it reads: docs/design.md, "Replication").
bool replicatedWrite(Command c) {
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

// What a request does to a spread key. Writes that every copy applies alike go to all of them;
// a cas (its unique is the primary's) and the meta writes (flags mcring does not reason about)
// go to the primary and unfill the copies; reads that return a CAS, or may change the item, go
// to the primary (the latter unfill the copies too).
SpreadUse spreadUse(const protocol::Request& req, std::string_view line) {
  switch (req.command) {
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
      const std::string_view flags = metaFlagsOf(req, line);
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

bool isGat(Command c) {
  return c == Command::Gat || c == Command::Gats;
}

}  // namespace

// --- replication

bool ReplicationHandler::takeKeyed(PoolContext& ctx, KeyedCall& call) const {
  if (!replicatedWrite(ctx.request().command)) {
    return false;
  }
  ctx.sendToReplicas(call);
  return true;
}

void ReplicationHandler::placeKeyed(PoolContext& ctx, KeyedCall& call) const {
  if (ctx.request().command == Command::MetaGet) {
    call.index = readReplica(ctx.pool(), ctx.worker(), call.key, ctx.sessionId());
    call.replicated_read = true;
  }
}

// An mg with T sets the TTL of what it reads (binary TOUCH and GAT become one): the key's other
// replicas get the same TTL by a detached `mg <key> T<ttl>`, so that a failover after the TTL
// does not read a key the client told to expire, nor lose a TTL it extended.
void ReplicationHandler::placedKeyed(PoolContext& ctx, KeyedCall& call) const {
  if (!call.replicated_read) {
    return;
  }
  const protocol::Request& req = ctx.request();
  const std::optional<std::string_view> ttl =
      protocol::findMetaFlag(metaFlagsOf(req, call.line), 'T');
  if (ttl && !ttl->empty()) {
    std::string& line = ctx.scratchLine();
    line.clear();
    protocol::RequestWriter(line)
        .verb(Command::MetaGet)
        .metaKey(req.keys[0].in(call.line), req.key_base64)
        .flag('T', *ttl)
        .end();
    ctx.sendToOtherReplicas(call.key, call.index, line);
  }
}

bool ReplicationHandler::keyedUnavailable(PoolContext& ctx, KeyedCall& call) const {
  if (!call.replicated_read) {
    return false;
  }
  ctx.sendToNextReplica(call);  // its connect could not even start (failover.h)
  return true;
}

bool ReplicationHandler::sendKeyed(PoolContext& ctx, KeyedCall& call) const {
  // A warm-up second hop keeps state of its own; it does not fail over.
  if (call.replicated_read && !call.warm_hop) {
    ctx.keepForNextReplica(call);
  }
  return false;
}

void ReplicationHandler::placeKey(PoolContext& ctx, RetrievalCall& call, size_t i) const {
  const std::string_view key = ctx.request().keys[i].in(call.line);
  call.servers[i] = readReplica(ctx.pool(), ctx.worker(), key, ctx.sessionId());
}

// Always split per key (failover.h: each key may go on to its own next replica); a gat's TTL
// goes to each key's other replicas too.
void ReplicationHandler::placedKeys(PoolContext& ctx, RetrievalCall& call) const {
  call.split = true;
  const protocol::Request& req = ctx.request();
  if (!isGat(req.command)) {
    return;
  }
  const std::string_view exptime = req.exptime.in(call.line);
  for (size_t i = 0; i < req.keys.size(); ++i) {
    const std::string_view key = req.keys[i].in(call.line);
    std::string& line = ctx.scratchLine();
    line.clear();
    protocol::RequestWriter(line).touch(key, exptime);
    ctx.sendToOtherReplicas(key, call.servers[i], line);
  }
}

void ReplicationHandler::prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                                         PendingRequest& r) const {
  if (call.warm) {
    return;  // warm-up's second hops answer its misses
  }
  r.read_failover = ctx.worker().readFailovers().acquire();  // failed fragments: next replicas
  r.rewrites = true;
  r.read_failover->session = ctx.sessionId();
  r.read_failover->topology = ctx.pool().topology.get();
}

// --- spread

void SpreadHandler::placeKeyed(PoolContext& ctx, KeyedCall& call) const {
  // A base64 meta key is looked up decoded: its writes reach the copies like any other.
  call.spread = ctx.pool().spreadEntry(call.key);
  if (call.spread == nullptr) {
    return;
  }
  call.spread_use = spreadUse(ctx.request(), call.line);
  if (call.spread_use == SpreadUse::ReadCopy) {
    call.spread_copy = ctx.readCopy(*call.spread);
    call.index = (*call.spread)->copies[call.spread_copy];
  }
}

void SpreadHandler::prepareKeyed(PoolContext& ctx, KeyedCall& call) const {
  if (call.spread == nullptr) {
    return;
  }
  PendingRequest& r = *call.r;
  if (call.spread_use == SpreadUse::ReadCopy && call.spread_copy > 0) {
    r.spread = ctx.worker().spreadStates().acquire();
    r.spread->role = SpreadRole::Read;
    r.spread->entry = *call.spread;
    r.spread->copy = call.spread_copy;
    observeDirect(r);  // a miss there clears the copy
  } else if (call.spread_use == SpreadUse::Invalidate) {
    // Its copies could not be written alike (a cas value, meta flags): none is read again until
    // a fill, which waits for this write to be done (settleSpreadWrite).
    SpreadEntry& e = **call.spread;
    r.spread = ctx.worker().spreadStates().acquire();
    r.spread->role = SpreadRole::Invalidate;
    r.spread->entry = *call.spread;
    e.writes_started.fetch_add(1);
    e.filled.store(1);
    stats::bump(ctx.worker().counters().spread_invalidations);
  }
}

bool SpreadHandler::sendKeyed(PoolContext& ctx, KeyedCall& call) const {
  if (call.spread == nullptr || call.spread_use != SpreadUse::Write) {
    return false;
  }
  ctx.sendToCopies(call);
  return true;
}

// Plain get keys that are spread go to one of their filled copies (gets returns the primary's
// CAS unique: to the primary). gat/gats change the item's TTL: to the primary, and the copies
// are unfilled, as for an mg with T.
void SpreadHandler::placeKey(PoolContext& ctx, RetrievalCall& call, size_t i) const {
  const protocol::Request& req = ctx.request();
  const bool gat = isGat(req.command);
  if (req.command != Command::Get && !gat) {
    return;
  }
  const std::shared_ptr<SpreadEntry>* e = ctx.pool().spreadEntry(req.keys[i].in(call.line));
  if (e == nullptr) {
    return;
  }
  if (!gat) {
    const uint32_t copy = ctx.readCopy(*e);
    if (copy > 0) {
      call.servers[i] = (*e)->copies[copy];
      call.spread_reads->push_back({static_cast<uint32_t>(i), copy, *e});
    }
    return;
  }
  // No copy is read again until a fill, which waits until this gat is done
  // (settleSpreadWrite: a spread read of copy 0 is the primary's TTL change).
  (*e)->writes_started.fetch_add(1);
  (*e)->filled.store(1);
  stats::bump(ctx.worker().counters().spread_invalidations);
  call.spread_reads->push_back({static_cast<uint32_t>(i), 0, *e});
}

// A key read at a spread copy needs the split's per-key bookkeeping: its miss there clears the
// copy (completeRequest).
void SpreadHandler::placedKeys(PoolContext&, RetrievalCall& call) const {
  if (!call.spread_reads->empty()) {
    call.split = true;
  }
}

void SpreadHandler::prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                                    PendingRequest& r) const {
  if (call.spread_reads->empty()) {
    return;
  }
  r.spread = ctx.worker().spreadStates().acquire();
  r.spread->reads.swap(*call.spread_reads);
  call.spread_reads->clear();
}

// --- warm-up

void WarmupHandler::prepareKeyed(PoolContext& ctx, KeyedCall& call) const {
  PoolRuntime& pool = ctx.pool();
  if (!pool.warmup) {
    return;
  }
  BackendServer* prev = pool.warmup->previousOwner(call.key, call.server);
  if (prev == nullptr) {
    return;
  }
  const protocol::Request& req = ctx.request();
  const Command c = req.command;
  if (c == Command::MetaGet) {
    // A miss may take a second hop (its DirectReplyObserver launches it on EN).
    const std::string_view flags = metaFlagsOf(req, call.line);
    if (!call.quiet_meta && !req.key_base64 && metaFlagsWarmable(flags)) {
      PendingRequest& r = *call.r;
      startWarmRead(r, ctx.worker());
      r.line.assign(call.key);
      r.key_offsets.assign({0, static_cast<uint32_t>(call.key.size())});
      r.key_count = 1;
      r.warm->meta_flags.assign(flags);
      call.warm_hop = true;
    }
  } else if (protocol::commandClass(c) == CommandClass::Storage || c == Command::Delete ||
             c == Command::MetaDelete || c == Command::MetaSet || c == Command::MetaArithmetic ||
             c == Command::Incr || c == Command::Decr) {
    ctx.invalidatePrevious(call, *prev);
  }
}

// A moved key's miss takes a second hop: that needs the split's per-key bookkeeping.
void WarmupHandler::placedKeys(PoolContext& ctx, RetrievalCall& call) const {
  PoolRuntime& pool = ctx.pool();
  if (!pool.warmup) {
    return;
  }
  const protocol::Request& req = ctx.request();
  for (size_t i = 0; i < req.keys.size(); ++i) {
    if (pool.warmup->previousOwner(req.keys[i].in(call.line), pool.by_index[call.servers[i]]) !=
        nullptr) {
      call.warm = true;
      call.split = true;
      return;
    }
  }
}

void WarmupHandler::prepareMultiget(PoolContext& ctx, const RetrievalCall& call,
                                    PendingRequest& r) const {
  if (call.warm) {
    startWarmRead(r, ctx.worker());
  }
}

}  // namespace mcring::core
