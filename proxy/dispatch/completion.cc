// completeRequest: the reply of a request whose parts have all answered.
#include "proxy/dispatch/completion.h"

#include "proxy/backend/spread_write.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/route_failover.h"
#include "proxy/dispatch/shadow.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

namespace {

bool composeReply(PendingRequest& r, WorkerContext& worker) {
  switch (r.shape) {
    case Shape::Direct:
      if (continueReadFailover(r, worker)) {
        return false;  // gone on to the key's next replica
      }
      if (continueRouteFailover(r)) {
        return false;  // gone on to the route's next pool
      }
      if (r.refused) {
        r.reply.drain(r.reply.size());
        r.reply.append(r.noreply ? std::string_view() : protocol::kOutOfMemoryLine);
        stats::bump(worker.counters().server_errors);
      } else if (warmInvalidatedHit(r) && r.command == protocol::Command::Delete &&
                 r.reply.size() == protocol::kNotFoundLine.size() &&
                 r.reply.contiguous(protocol::kNotFoundLine.size()) == protocol::kNotFoundLine) {
        // Not copied yet, but the previous server had it: the key did exist.
        r.reply.drain(protocol::kNotFoundLine.size());
        r.reply.append(protocol::kDeletedLine);
      }
      return true;
    case Shape::Multiget:
      if (warmHops(r) && !r.warm->hop_started && r.session != nullptr && r.pool != nullptr &&
          launchMultigetWarmup(r, *r.pool, worker, r.session->id())) {
        return false;
      }
      if (continueReadFailover(r, worker)) {
        return false;  // keys gone on to their next replicas
      }
      if (continueRouteMultiget(r, worker)) {
        return false;  // keys gone on to their routes' next pools
      }
      if (r.spread != nullptr) {
        for (const SpreadRead& s : r.spread->reads) {
          if (!r.failed && r.key_hit_length[s.key_index] == 0) {
            missedAtCopy(*s.entry, s.copy, worker.counters());
          }
        }
      }
      assembleMultiget(r, worker.counters());
      return true;
    case Shape::Broadcast:
      r.reply.append(r.failed ? std::string_view(r.error_line)
                              : (r.noreply ? std::string_view() : protocol::kOkLine));
      return true;
    case Shape::Stats:
      return true;  // its owner, a stats fetch (stats_views.h), merges the answers
  }
  return true;
}

bool isErrorReply(PendingRequest& r) {
  constexpr std::string_view kServerError = "SERVER_ERROR";
  return r.failed || (r.reply.size() >= kServerError.size() &&
                      r.reply.contiguous(kServerError.size()) == kServerError);
}

}  // namespace

bool completeRequest(PendingRequest& r, WorkerContext& worker) {
  settleSpreadWrite(r, worker.counters());
  if (!composeReply(r, worker)) {
    return false;  // gone on (a second hop, a next replica)
  }
  if (r.route == nullptr) {
    return true;
  }
  if (r.session != nullptr) {  // not the shadow's own copy
    if (r.route->probe != nullptr) {
      Shadows::primaryAnswered(r);
    }
    if (!r.route->key_probes.empty()) {
      Shadows::primaryAnsweredKeys(r);
    }
  }
  if (r.route->stats != nullptr && isErrorReply(r)) {
    stats::bump(r.route->stats->errors);
  }
  return true;
}

}  // namespace mcring::core
