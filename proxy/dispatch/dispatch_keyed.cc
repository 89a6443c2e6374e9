// Dispatcher: a keyed request (storage, delete/incr/decr/touch, meta) to its key's server, with
// the pool's replication, hot-key spread and warm-up steps decided on the way.
#include <algorithm>
#include <array>
#include <span>

#include "proxy/dispatch/command_counters.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

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
      head_.clear();
      protocol::RequestWriter(head_)
          .verb(Command::MetaGet)
          .metaKey(req_->keys[0].in(line), req_->key_base64)
          .flag('T', *ttl)
          .end();
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
    r->spread = worker_.spreadStates().acquire();
    r->spread->role = SpreadRole::Read;
    r->spread->entry = *spread;
    r->spread->copy = copy;
  } else if (use == SpreadUse::Invalidate) {
    // Its copies could not be written alike (a cas value, meta flags): none is read again until
    // a fill, which waits for this write to be done (settleSpreadWrite).
    SpreadEntry& e = **spread;
    r->spread = worker_.spreadStates().acquire();
    r->spread->role = SpreadRole::Invalidate;
    r->spread->entry = *spread;
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
    protocol::RequestWriter mn(out);
    mn.noop();
    conn->expect(r, 0, Delivery::Direct, Expect::UntilNoop, sent + mn.written());
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

}  // namespace mcring::core
