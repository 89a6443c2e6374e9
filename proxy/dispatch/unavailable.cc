// unavailable_reads, unavailable_writes: a request on an unavailable server answered as a miss
// or a write not applied, or not.
#include "proxy/dispatch/unavailable.h"

#include <algorithm>
#include <optional>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/protocol/binary_packet.h"
#include "proxy/protocol/meta_flags.h"
#include "proxy/protocol/meta_miss.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {
namespace {

using protocol::Command;

// A binary touch: sent as an mg without v, but a write of a TTL.
bool isBinaryTouch(const PendingRequest& r) {
  return r.binary.active && r.binary.opcode == static_cast<uint8_t>(protocol::BinaryOpcode::Touch);
}

// get/gets/gat/gats (gat and gats touch, but a client reads with them: a miss is what it gets
// for a key it cannot have) and mg, whatever its flags; not a binary touch, which mcring sends as
// an mg without v but the client asked to write a TTL.
bool isRead(const PendingRequest& r) {
  switch (r.command) {
    case Command::Get:
    case Command::Gets:
    case Command::Gat:
    case Command::Gats:
      return r.shape == Shape::Multiget || r.shape == Shape::Direct;
    case Command::MetaGet:
      return r.shape == Shape::Direct && !isBinaryTouch(r);
    default:
      return false;
  }
}

// What a write answers with unavailable_writes: not_stored, as memcached answers a write it did
// not apply; nullopt for a request that is no such write. Meta writes and a binary touch answer
// in the client's format, prepared at dispatch (empty if the policy changed since: no answer).
std::optional<std::string_view> notAppliedReply(const PendingRequest& r) {
  if (r.shape != Shape::Direct || spreadRole(r) != SpreadRole::None) {
    return std::nullopt;
  }
  switch (r.command) {
    case Command::Set:
    case Command::Add:
    case Command::Replace:
    case Command::Append:
    case Command::Prepend:
      return protocol::kNotStoredLine;
    case Command::Cas:  // memcached's answer for a cas of a key it does not hold
    case Command::Delete:
    case Command::Incr:
    case Command::Decr:
    case Command::Touch:
      return protocol::kNotFoundLine;
    case Command::MetaGet:
      if (!isBinaryTouch(r)) {
        return std::nullopt;
      }
      [[fallthrough]];
    case Command::MetaSet:
    case Command::MetaDelete:
    case Command::MetaArithmetic:
      if (r.meta_miss.empty()) {
        return std::nullopt;
      }
      return std::string_view(r.meta_miss);
    default:
      return std::nullopt;
  }
}

bool answerUnavailableWrite(PendingRequest& r, BackendServer& server, BackendFailure why) {
  if (server.pool().config().unavailable_writes != config::UnavailableWrites::NotStored) {
    return false;
  }
  const std::optional<std::string_view> reply = notAppliedReply(r);
  if (!reply) {
    return false;
  }
  r.reply.drain(r.reply.size());
  if (!r.noreply) {  // classic noreply: silent, as memcached is for NOT_STORED
    r.reply.append(*reply);
  }
  server.countUnavailableWrite(why);
  return true;
}

}  // namespace

bool answerUnavailable(PendingRequest& r, uint32_t fragment, BackendServer& server,
                       BackendFailure why, WorkerContext& worker) {
  if (!isRead(r)) {
    return answerUnavailableWrite(r, server, why);
  }
  if (server.pool().config().unavailable_reads != config::UnavailableReads::Miss) {
    return false;
  }
  uint64_t misses = 0;
  if (r.shape == Shape::Multiget) {
    Fragment& fr = r.fragments[fragment];
    fr.done = true;
    fr.unavailable = true;
    misses = fr.key_indices.size() - std::min<size_t>(fr.hits, fr.key_indices.size());
    if (!r.key_server.empty()) {
      // Merged across pools (routed.cc): each key not hit is its own pool's server's miss.
      for (const uint32_t idx : fr.key_indices) {
        if (r.key_hit_length[idx] == 0) {
          r.key_server[idx]->countUnavailableMisses(why, 1);
        }
      }
      return true;
    }
  } else if (r.command == Command::MetaGet) {
    // A quiet mg may have had its hit before the failure (it waited for the mn behind it).
    if (r.units_received == 0) {
      r.reply.append(r.meta_miss);
      misses = 1;
    }
  } else {
    auto& c = worker.counters();
    const uint64_t hits = std::min<uint64_t>(r.units_received, r.key_count);
    misses = r.key_count - hits;
    stats::bump(c.get_hits, hits);
    stats::bump(c.get_misses, misses);
    r.reply.append(protocol::kEndLine);
  }
  server.countUnavailableMisses(why, misses);
  return true;
}

bool answerUnavailableKeys(const PendingRequest& r, const PoolRuntime& pool, BackendServer* server,
                           BackendFailure why, uint64_t keys, WorkerContext& worker) {
  if (!isRead(r) || pool.config().unavailable_reads != config::UnavailableReads::Miss) {
    return false;
  }
  if (server != nullptr) {
    server->countUnavailableMisses(why, keys);
  } else {
    stats::bump(worker.counters().unavailable_misses, keys);
  }
  return true;
}

void prepareUnavailableAnswer(PendingRequest& r, const PoolRuntime& pool,
                              const protocol::Request& req, std::string_view line) {
  const bool write = req.command == Command::MetaSet || req.command == Command::MetaDelete ||
                     req.command == Command::MetaArithmetic;
  if ((req.command != Command::MetaGet && !write) || req.keys.empty()) {
    return;
  }
  if (write && pool.config().unavailable_writes != config::UnavailableWrites::NotStored) {
    return;  // nothing to prepare on the path every write takes
  }
  std::string_view args = req.args.in(line);
  const size_t key_end = req.keys[0].offset + req.keys[0].length - req.args.offset;
  const std::string_view key = req.keys[0].in(line);
  const std::string_view flags = args.substr(std::min(key_end, args.size()));
  if (!write) {
    r.meta_miss = protocol::metaMissReply(key, flags);
    return;
  }
  // ms answers NS, but NF with a cas (C), as md and ma do: memcached's answers when the item is
  // not there.
  const bool cas = protocol::findMetaFlag(flags, 'C').has_value();
  r.meta_miss = protocol::metaNotAppliedReply(req.command == Command::MetaSet && !cas ? "NS" : "NF",
                                              key, flags);
}

}  // namespace mcring::core
