// BackendServer: a pool's accounting and policies for one memcached (its link connects).
#include "proxy/backend/backend_server.h"

#include <algorithm>
#include <cstring>

#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"

namespace mcring::core {
namespace {

// The answer to return_flush's flush_all (a detached request; its return_flush_mark is the
// server's missed-write count when it was sent): BackendServer::endReturnFlush.
class ReturnFlushReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t,
                     const protocol::Reply& rep, std::string_view unit) override {
    if (rep.isListItem() || rep.data_length > 0) {
      return UnitVerdict::Desync;
    }
    conn.server().endReturnFlush(r.return_flush_mark, rep.kind == protocol::ReplyKind::Ok,
                                 unit.substr(0, rep.line_length));
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest& r, uint32_t,
                 BackendFailure why) override {
    conn.server().endReturnFlush(r.return_flush_mark, false, backendFailureName(why));
  }
};

ReturnFlushReply return_flush_reply;

}  // namespace

BackendServer::BackendServer(WorkerContext& worker, PoolRuntime& pool, std::string identity,
                             std::string name, std::shared_ptr<BackendLink> link)
    : worker_(worker), pool_(&pool), identity_(std::move(identity)), link_(std::move(link)) {
  stats_ = worker_.backendStats().add(pool.name, identity_, name);
  fresh_ = serverFreshness(identity_);
  link_->attach(*this);
}

BackendServer::~BackendServer() {
  // Destroyed idle (Worker::reapDraining), or after the worker aborted every link: no request
  // on the link names it any more.
  link_->detach(*this);
  link_.reset();  // the last server's link closes its connections, which may count into stats_
  worker_.backendStats().remove(stats_.get());
}

void BackendServer::countFailure(BackendFailure why, uint64_t n) {
  stats::bump(stats_->errors, n);
  switch (why) {
    case BackendFailure::ConnectFailed:
      stats::bump(stats_->err_connect_failed, n);
      break;
    case BackendFailure::ConnectionClosed:
      stats::bump(stats_->err_connection_closed, n);
      break;
    case BackendFailure::Timeout:
      stats::bump(stats_->err_timeout, n);
      break;
    case BackendFailure::ProtocolError:
      stats::bump(stats_->err_protocol_error, n);
      break;
    case BackendFailure::Unavailable:
      stats::bump(stats_->err_unavailable, n);
      break;
    case BackendFailure::Backlogged:
      stats::bump(stats_->err_backlogged, n);
      break;
  }
}

void countFragmentFailure(BackendServer& server, const PendingRequest& r, const Fragment& fr,
                          BackendFailure why) {
  server.countFailure(why);
  if (r.key_server.empty()) {
    return;
  }
  std::vector<BackendServer*> counted{&server};  // a handful: the pools of the routes
  for (const uint32_t idx : fr.key_indices) {
    BackendServer* owner = r.key_server[idx];
    if (std::find(counted.begin(), counted.end(), owner) == counted.end()) {
      counted.push_back(owner);
      owner->countFailure(why);
    }
  }
}

BackendConnection* BackendServer::connectionFor(uint64_t session_id) {
  BackendConnection* c = link_->connectionFor(session_id);
  if (c == nullptr) {
    return nullptr;  // last_failure_ is the link's last failure (onFailure)
  }
  // A server that takes requests slower than they come (frozen, or too slow for the load) has
  // them queue here, unsent, in mcring's memory: bounded, and past the bound a request fails at
  // once as if the server were unavailable (its read a miss by unavailable_reads, a write the
  // failure, a route's failover tried), instead of growing without end.
  if (c->unsent() >= backlogLimit()) {
    last_failure_ = BackendFailure::Backlogged;
    return nullptr;
  }
  return c;
}

uint64_t BackendServer::backlogLimit() const {
  const config::PoolConfig& pc = pool_->config();
  return std::max<uint64_t>(pc.buffer_limit / 4, 2 * pc.item_size_max);
}

void BackendServer::onFailure(BackendFailure why) {
  last_failure_ = why;
  ++consecutive_failures_;
  const auto& pc = pool_->config();
  if (pc.auto_eject_hosts && !reported_down_ &&
      consecutive_failures_ >= std::max<uint32_t>(1, pc.server_failure_limit)) {
    reported_down_ = true;
    worker_.reportServerDown(pool_->name, identity_);
  }
}

void BackendServer::logFailure(BackendFailure why, int error, const std::string& detail) {
  uint64_t now = common::coarseMonotonicNs();
  if (last_log_ns_ != 0 && now - last_log_ns_ < 1000000000ULL) {
    ++suppressed_logs_;
    return;
  }
  last_log_ns_ = now;
  MCRING_LOG(
      Warn, "pool '%s': backend %s: %s (%s)%s", pool_->name.c_str(), identity_.c_str(),
      std::string(backendFailureName(why)).c_str(),
      !detail.empty() ? detail.c_str()
      : error != 0    ? std::strerror(error)
                      : "closed by peer",
      suppressed_logs_ > 0
          ? (" [+" + std::to_string(suppressed_logs_) + " more in the last second(s)]").c_str()
          : "");
  suppressed_logs_ = 0;
}

void BackendServer::countUnavailableWrite(BackendFailure why) {
  stats::bump(stats_->unavailable_writes);
  stats::bump(worker_.counters().unavailable_writes);
  ++unavailable_writes_unlogged_;
  const uint64_t now = common::coarseMonotonicNs();
  if (unavailable_write_log_ns_ != 0 && now - unavailable_write_log_ns_ < 10000000000ULL) {
    return;
  }
  unavailable_write_log_ns_ = now;
  MCRING_LOG(Warn,
             "pool '%s': backend %s unavailable (%s): %llu write(s) answered as not stored or "
             "not found (unavailable_writes: not_stored)%s",
             pool_->name.c_str(), identity_.c_str(), std::string(backendFailureName(why)).c_str(),
             static_cast<unsigned long long>(unavailable_writes_unlogged_),
             unavailable_writes_unlogged_ > 1 ? " since the last such line" : "");
  unavailable_writes_unlogged_ = 0;
}

void BackendServer::countUnavailableMisses(BackendFailure why, uint64_t n) {
  if (n == 0) {
    return;
  }
  stats::bump(stats_->unavailable_misses, n);
  stats::bump(worker_.counters().unavailable_misses, n);
  unavailable_unlogged_ += n;
  const uint64_t now = common::coarseMonotonicNs();
  if (unavailable_log_ns_ != 0 && now - unavailable_log_ns_ < 10000000000ULL) {
    return;
  }
  unavailable_log_ns_ = now;
  MCRING_LOG(Warn,
             "pool '%s': backend %s unavailable (%s): %llu read key(s) answered as misses "
             "(unavailable_reads: miss)%s",
             pool_->name.c_str(), identity_.c_str(), std::string(backendFailureName(why)).c_str(),
             static_cast<unsigned long long>(unavailable_unlogged_),
             unavailable_unlogged_ > n ? " since the last such line" : "");
  unavailable_unlogged_ = 0;
}

bool BackendServer::readable(uint64_t session_id) {
  if (pool_->config().return_flush && fresh_->stale()) {
    // Reads stay away, but they bring it back: a connection (re)established sends the flush
    // first (ensureConnected), one already up sends it now.
    if (BackendConnection* c = connectionFor(session_id);
        c != nullptr && c->state() == BackendConnection::State::Connected) {
      startReturnFlush(*c);
    }
    return false;
  }
  return !link_->backingOff(session_id);
}

void BackendServer::missedWrite() {
  if (!pool_->config().return_flush) {
    return;
  }
  fresh_->missWrite();
  // A server that answers (a SERVER_ERROR to a write) keeps its connection: flush it now.
  if (BackendConnection* c = link_->anyConnected()) {
    startReturnFlush(*c);
  }
}

bool BackendServer::missFailsOver() const {
  const auto& pc = pool_->config();
  if (pc.read_failover_on_miss) {
    return true;
  }
  if (!pc.return_flush || pc.return_window_ms == 0) {
    return false;
  }
  const uint64_t at = fresh_->returned_at_ms.load(std::memory_order_relaxed);
  return at != 0 && common::coarseMonotonicNs() / 1000000 < at + pc.return_window_ms;
}

void BackendServer::startReturnFlush(BackendConnection& conn) {
  if (!pool_->config().return_flush || !fresh_->stale()) {
    return;
  }
  bool expected = false;
  if (!fresh_->flush_in_flight.compare_exchange_strong(expected, true)) {
    return;  // another worker's connection is flushing it
  }
  PendingRequest* r = worker_.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->noreply = true;
  r->command = protocol::Command::FlushAll;
  r->return_flush_mark = fresh_->missed.load();
  static constexpr std::string_view kFlush = "flush_all\r\n";
  conn.output().append(kFlush);
  stats::bump(stats_->other_commands);
  conn.expect(*this, r, return_flush_reply, 0, Expect::OneUnit, kFlush.size());
  worker_.requests().release(r);  // the expectation's reference keeps it until the reply
}

void BackendServer::endReturnFlush(uint64_t mark, bool ok, std::string_view reply) {
  if (!ok) {
    fresh_->flush_in_flight.store(false);
    MCRING_LOG(Warn,
               "pool '%s': backend %s: return flush_all failed (%.*s): its reads stay on "
               "the next replica until a flush succeeds",
               pool_->name.c_str(), identity_.c_str(), static_cast<int>(reply.size()),
               reply.data());
    return;
  }
  stats::bump(stats_->return_flushes);
  fresh_->flushDone(mark, common::coarseMonotonicNs() / 1000000);
  MCRING_LOG(Notice,
             "pool '%s': backend %s returned after missing writes (%llu since start): "
             "flushed (flush_all) before serving reads (return_flush)",
             pool_->name.c_str(), identity_.c_str(), static_cast<unsigned long long>(mark));
}

bool BackendServer::changesInFlight() const {
  return link_->changesInFlight();
}

}  // namespace mcring::core
