// directFeatures(): a Direct reply as hot-key spread, warm-up and read failover see it.
#include "proxy/dispatch/direct_features.h"

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/spread_write.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/warmup.h"

namespace mcring::core {
namespace {

using protocol::ReplyKind;

// A replicated mg missed at `server`: with read_failover_on_miss, or in the server's return
// window, the next replica is asked (dispatch/failover.h).
void readMissed(PendingRequest& r, BackendServer& server) {
  if (r.read_failover != nullptr && server.missFailsOver()) {
    r.read_failover->failed_at = &server;
    r.read_failover->missed = true;
  }
}

// A replicated mg got an error reply (or no reply: why) at `server`: the next replica is asked.
void readFailed(PendingRequest& r, BackendServer& server, BackendFailure why) {
  if (r.read_failover != nullptr) {
    r.read_failover->failed_at = &server;
    r.read_failover->failure = why;
    r.read_failover->missed = false;
  }
}

// A plain mg of a spread key that a copy did not answer with its value: the copy lost it.
void copyMissed(PendingRequest& r, WorkerContext& worker) {
  if (spreadRole(r) == SpreadRole::Read) {
    missedAtCopy(*r.spread->entry, r.spread->copy, worker.counters());
  }
}

class DirectFeatures final : public DirectReplyObserver {
 public:
  void onUnit(BackendConnection& conn, PendingRequest& r, DirectUnit unit,
              const protocol::Reply& rep, std::string_view line) const override {
    BackendServer& server = conn.server();
    const bool mg = r.command == protocol::Command::MetaGet;
    switch (unit) {
      case DirectUnit::QuietEmpty:
        if (mg) {
          readMissed(r, server);
          copyMissed(r, server.worker());
        }
        return;
      case DirectUnit::Quiet:
        if (rep.kind == ReplyKind::ServerError) {
          readFailed(r, server, BackendFailure::ProtocolError);
        }
        return;
      case DirectUnit::Whole:
        break;
    }
    if (spreadRole(r) == SpreadRole::Write) {
      recordSpreadReply(r, 0, rep, line);  // the primary's: compared with the copies'
    }
    if (!mg) {
      return;
    }
    if (rep.kind == ReplyKind::MetaMiss) {
      readMissed(r, server);
    } else if (rep.kind == ReplyKind::ServerError) {
      readFailed(r, server, BackendFailure::ProtocolError);
    }
    if (rep.kind != ReplyKind::MetaValue && rep.kind != ReplyKind::MetaHit) {
      copyMissed(r, server.worker());
    }
    if (rep.kind == ReplyKind::MetaMiss && warmHops(r) && !r.warm->hop_started &&
        r.session != nullptr && r.pool != nullptr) {
      // The key's previous server may have it: a second hop, whose answer replaces this EN
      // (the EN is kept if it has not: it carries the client's k/O flags).
      launchMetaWarmup(r, *r.pool, server.worker(), r.session->id());
    }
  }

  bool onFailure(BackendConnection& conn, PendingRequest& r, BackendFailure why) const override {
    if (spreadRole(r) == SpreadRole::Write) {
      r.spread->replies[0] = kSpreadFailed;  // the primary failed: every copy differs
    }
    if (r.read_failover != nullptr) {
      // The next replica may serve it (failover.h); with none left, unavailable_reads answers it
      // there, and a failure that stands is counted there.
      readFailed(r, conn.server(), why);
      return true;
    }
    return false;
  }

  bool replayable(const PendingRequest& r) const override { return !warmHops(r); }
};

const DirectFeatures direct_features;

}  // namespace

const DirectReplyObserver& directFeatures() {
  return direct_features;
}

}  // namespace mcring::core
