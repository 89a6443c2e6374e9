// unavailable_reads: a read on an unavailable server answered as a miss, or not.
#include "proxy/dispatch/unavailable.h"

#include <algorithm>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/protocol/binary_packet.h"
#include "proxy/protocol/meta_miss.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {
namespace {

using protocol::Command;

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
      return r.shape == Shape::Direct &&
             !(r.binary.active &&
               r.binary.opcode == static_cast<uint8_t>(protocol::BinaryOpcode::Touch));
    default:
      return false;
  }
}

}  // namespace

bool answerUnavailable(PendingRequest& r, uint32_t fragment, BackendServer& server,
                       BackendFailure why, WorkerContext& worker) {
  if (!isRead(r) || server.pool().config().unavailable_reads != config::UnavailableReads::Miss) {
    return false;
  }
  uint64_t misses = 0;
  if (r.shape == Shape::Multiget) {
    Fragment& fr = r.fragments[fragment];
    fr.done = true;
    fr.unavailable = true;
    misses = fr.key_indices.size() - std::min<size_t>(fr.hits, fr.key_indices.size());
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

void prepareUnavailableRead(PendingRequest& r, const protocol::Request& req,
                            std::string_view line) {
  if (req.command != Command::MetaGet || req.keys.empty()) {
    return;
  }
  std::string_view args = req.args.in(line);
  const size_t key_end = req.keys[0].offset + req.keys[0].length - req.args.offset;
  r.meta_miss =
      protocol::metaMissReply(req.keys[0].in(line), args.substr(std::min(key_end, args.size())));
}

}  // namespace mcring::core
