// BackendConnection: pipelined request/reply matching over one backend socket.
#include "proxy/backend/backend_connection.h"

#include <algorithm>
#include <cstring>

#include "proxy/backend/backend_link.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/direct_reply_observer.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/pool_security.h"
#include "proxy/backend/worker_context.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::ReplyKind;

namespace {

uint64_t monotonicMicros() {
  return common::monotonicNs() / 1000;
}

// A fragment merged across pools (routed.cc) carries keys of other pools than its server's,
// each counted by its own pool's server when the reply comes (takeValue, countMisses) or fails
// (answerUnavailable, countFragmentFailure). Such a key holds its server in flight like a
// request of its own, so a reload that drains that server (its pool removed, or given other
// link settings) cannot reap it, and delete it, before the reply that counts on it.
void holdKeyServers(const PendingRequest& r, const Fragment& fr, const BackendServer& server) {
  for (const uint32_t idx : fr.key_indices) {
    if (r.key_server[idx] != &server) {
      r.key_server[idx]->countSent();
    }
  }
}

void releaseKeyServers(const PendingRequest& r, const Fragment& fr, const BackendServer& server,
                       WorkerContext& worker) {
  for (const uint32_t idx : fr.key_indices) {
    BackendServer* owner = r.key_server[idx];
    if (owner != &server) {
      owner->countFinished();
      if (owner->draining() && owner->idle()) {
        worker.onBackendIdle();  // it goes after this call (reapDraining defers the delete)
      }
    }
  }
}

}  // namespace

BackendConnection::BackendConnection(BackendLink& link) : link_(link) {}

BackendConnection::~BackendConnection() {
  // Owners abort before destroying; anything left is failed so no request dangles.
  if (!idle()) {
    failAll(BackendFailure::ConnectionClosed);
  }
}

bool BackendConnection::ensureConnected() {
  if (state_ != State::Closed) {
    return true;
  }
  const LinkSettings& settings = link_.settings();
  const auto& tls = settings.tls;
  tcp_ =
      net::TcpConnection::connect(link_.worker().loop(), link_.address(), this, settings.timeout_ms,
                                  /*keepalive=*/false, tls ? &*tls : nullptr);
  if (!tcp_) {
    stats::bump(link_.worker().counters().backend_connect_failures);
    link_.onFailure(BackendFailure::ConnectFailed);
    return false;
  }
  state_ = State::Connecting;
  timeout_armed_ = false;
  // Servers that require authentication get it ahead of every request (pipelined: memcached
  // reads it first). Its reply is checked in onReadable before any request's.
  auth_pending_ = !settings.auth.empty();
  if (auth_pending_) {
    tcp_->output().append(settings.auth);
  }
  // A server that missed writes is flushed before anything else reaches it on this connection.
  link_.startReturnFlush(*this);
  return true;
}

void BackendConnection::expect(BackendServer& server, PendingRequest* r, uint32_t fragment,
                               Delivery delivery, Expect e, uint64_t bytes) {
  ++r->refs;
  (holding() ? held_ : inflight_)
      .push_back(InFlight{r, nullptr, &server, monotonicMicros(), fragment, delivery, e});
  server.countSent();
  if (delivery == Delivery::Fragment && !r->key_server.empty()) {
    holdKeyServers(*r, r->fragments[fragment], server);
  }
  stats::bump(link_.worker().counters().backend_requests);
  stats::BackendStats& bs = server.stats();
  stats::bump(bs.requests);
  stats::bump(bs.bytes_sent, bytes);
  if (!timeout_armed_) {
    updateTimeout();
  }
}

void BackendConnection::expect(BackendServer& server, PendingRequest* r, ReplyHandler& handler,
                               uint32_t tag, Expect e, uint64_t bytes) {
  expect(server, r, tag, Delivery::Handler, e, bytes);
  (holding() ? held_ : inflight_).back().handler = &handler;
}

// A request timeout is a read timeout armed while replies are owed: no byte from the backend
// for `timeout` ms with requests in flight resets the connection (its replies can no longer be
// matched to requests). Not armed while connecting: the connect timeout covers that.
void BackendConnection::updateTimeout() {
  uint32_t ms = link_.settings().timeout_ms;
  if (ms == 0 || state_ != State::Connected || !tcp_) {
    return;
  }
  bool want = !inflight_.empty();
  if (want != timeout_armed_) {
    tcp_->setReadTimeout(want ? ms : 0);
    timeout_armed_ = want;
  }
}

void BackendConnection::onConnected() {
  state_ = State::Connected;
  stats::bump(link_.worker().counters().backend_connections);
  link_.countConnection(true);
  link_.onConnected();
  updateTimeout();
}

void BackendConnection::onReadable() {
  if (paused_) {
    return;  // the bytes wait in the input until the client being streamed to reads
  }
  net::Buffer& in = tcp_->input();
  if (auth_pending_ && !checkAuthReply()) {
    return;
  }
  while (!inflight_.empty()) {
    protocol::Reply rep;
    const protocol::ReplyFrame frame = framer_.next(in, rep);
    if (frame.kind == protocol::ReplyFrameKind::NeedMore) {
      break;  // a line or a data block still arriving
    }
    if (frame.kind == protocol::ReplyFrameKind::Invalid) {
      closeUnexpectedly(BackendFailure::ProtocolError);
      link_.worker().onBackendIdle();
      return;
    }
    // A copy: delivering may queue more requests on this connection (a client's next request,
    // a feature's second hop), and a RingQueue that grows moves its elements.
    const InFlight f = inflight_.front();
    if (mustWait(*f.req)) {
      wait_bytes_ = 0;
      pause();
      return;
    }
    const std::string_view line = frame.line;
    const uint64_t total = frame.length;
    current_ = f.server;
    Step step =
        f.expect == Expect::SharedLine ? deliverShared(f, rep, line) : deliver(f, rep, line);
    if (step == Step::Wait) {
      pause();
      return;
    }
    if (step == Step::Desync) {
      closeUnexpectedly(BackendFailure::ProtocolError);
      link_.worker().onBackendIdle();
      return;
    }
    if (step != Step::Pass) {  // a passed unit is counted when the next request takes it
      stats::bump(f.server->stats().bytes_received, total);
    }
    if (step == Step::Done || step == Step::Pass) {
      if (!rep.isError() || rep.kind != ReplyKind::ServerError) {
        f.server->onReplyOk();
      }
      InFlight done = f;
      inflight_.pop_front();
      if (done.req == paused_for_) {
        paused_for_ = nullptr;  // its stall time ends with it
      }
      uint64_t now = monotonicMicros();
      done.server->stats().latency.record(now > done.sent_us ? now - done.sent_us : 0);
      finish(done);
      if (replay_waits_for_ > 0 && --replay_waits_for_ == 0) {
        sendNextReplay();
      }
    }
  }
  if (inflight_.empty() && in.size() > 0) {
    // Bytes nobody asked for: the backend is not speaking our protocol.
    closeUnexpectedly(BackendFailure::ProtocolError);
    link_.worker().onBackendIdle();
    return;
  }
  updateTimeout();
  if (inflight_.empty()) {
    link_.worker().onBackendIdle();
  }
}

// The unit at the front is for `r`, whose reply streams to a client that has a full output:
// delivering it would pass the client's budget, so this connection waits for the client.
bool BackendConnection::changesInFlight() const {
  auto changes = [](const InFlight& f) {
    switch (f.delivery) {
      case Delivery::Direct:
      case Delivery::Fragment:
        return f.req->command != protocol::Command::Get &&
               f.req->command != protocol::Command::Gets;
      case Delivery::Stats:
        return false;
      case Delivery::Handler:
        return f.handler->changesItem(*f.req, f.fragment);
      default:
        return true;
    }
  };
  return std::any_of(inflight_.begin(), inflight_.end(), changes) ||
         std::any_of(replays_.begin(), replays_.end(), changes) ||
         std::any_of(held_.begin(), held_.end(), changes);
}

bool BackendConnection::mustWait(PendingRequest& r) {
  RequestOwner* s = r.session;
  if (multigetInKeyOrder(r) && !r.streaming) {
    return false;  // streams only once holding it would pass a limit (placeInOrder)
  }
  return s != nullptr && !r.refused && s->outputFull() && s->tryStream(r);
}

// Stops reading this connection until the client being streamed to has room. Other clients'
// requests behind it wait meanwhile, so that wait is bounded: the client is closed (its reply is
// then dropped) once it reads nothing for RequestOwner::stallLimitMs(), or once it has held the
// connection paused for that long in all while another client's request waits behind it and it
// drained less than kMinDrainBytesPerSec over those pauses. A client that reads fast (a large
// multi-get read at loopback speed pauses the connection most of the time, since memcached writes
// faster than most clients read) keeps its reply: the others wait for the transfer, not for it.
void BackendConnection::pause() {
  paused_ = true;
  tcp_->enableReading(false);
  const uint64_t now = common::monotonicNs();
  pause_progress_ns_ = now;
  pause_started_ns_ = now;
  pause_output_ = UINT64_MAX;
  const PendingRequest* head = inflight_.front().req;
  pause_start_output_ = head->session != nullptr ? head->session->outputSize() : 0;
  pause_stream_key_ = head->stream_key;
  if (paused_for_ != head) {
    paused_for_ = head;
    paused_for_total_ns_ = 0;
    paused_for_drained_ = 0;
  }
  if (!resume_timer_) {
    resume_timer_ = std::make_unique<net::Timer>(link_.worker().loop(), [this] { checkPaused(); });
  }
  resume_timer_->start(kPausePollMs, /*periodic=*/true);
}

void BackendConnection::checkPaused() {
  if (!paused_ || !tcp_ || inflight_.empty()) {
    resume();
    return;
  }
  PendingRequest* r = inflight_.front().req;
  RequestOwner* s = r->session;
  const uint64_t now = common::monotonicNs();
  const uint64_t out = s != nullptr ? s->outputSize() : 0;
  const uint64_t drained =
      paused_for_drained_ + (pause_start_output_ > out ? pause_start_output_ - out : 0);
  const uint64_t paused_ns = paused_for_total_ns_ + (now - pause_started_ns_);
  if (s == nullptr || r->refused || (wait_bytes_ == 0 ? !s->outputFull() : turnCame(*r, *s))) {
    paused_for_total_ns_ = paused_ns;
    paused_for_drained_ = drained;
    resume();
    return;
  }
  const uint64_t limit = uint64_t{s->stallLimitMs()} * 1000000;
  // Progress: the client read, or (waiting for a turn) its multi-get wrote a later key.
  if (out < pause_output_ || r->stream_key != pause_stream_key_) {
    pause_output_ = out;
    pause_stream_key_ = r->stream_key;
    pause_progress_ns_ = now;
  }
  // Both rules bound what this client costs the others: a client alone on the connection may
  // read as slowly as it likes (memcached's behaviour; the pause holds the rest of its reply in
  // the backend's socket), and one that reads nothing is closed only once another client's
  // request queues behind it, or while the pool is over its memory budget (its unsent output
  // counts there: six such clients with 15 MB replies unread made every other client's gets
  // answer out of memory until they were closed).
  const MemoryBudget& budget = s->pool().replies_budget;
  const bool pool_over_budget = budget.used() > budget.limit();
  const bool stuck = now - pause_progress_ns_ >= limit && (othersWaitBehind(s) || pool_over_budget);
  const bool slow = static_cast<double>(drained) < static_cast<double>(kMinDrainBytesPerSec) *
                                                       static_cast<double>(paused_ns) / 1e9;
  const bool hogging = paused_ns >= limit && slow && othersWaitBehind(s);
  if (wait_bytes_ != 0 && stuck) {
    giveUp(*r, *s);  // the client did read, or has nothing to read: its turn did not come
    resume();
  } else if (stuck || (hogging && (wait_bytes_ == 0 || out > 0))) {
    s->closeSlowReader();
    resume();
  }
}

// Waiting for a turn (placeInOrder): the unit may go on once it streams (its key's turn came) or
// fits, and the client's output has room.
bool BackendConnection::turnCame(const PendingRequest& r, RequestOwner& s) const {
  if (r.failed) {
    return true;  // its units are dropped
  }
  return !s.outputFull() && (r.stream_key == wait_key_ || s.canHold(r, wait_bytes_));
}

// A multi-get streaming in key order made no progress while this connection waited on it and
// others wait behind (or the pool is over its budget): its turn depends on another server, which
// may be held up by other clients. It is refused memory (its reply ends with memcached's error),
// which unblocks the connection.
void BackendConnection::giveUp(PendingRequest& r, RequestOwner& s) {
  MCRING_LOG_LIMITED(Info, "client multiget turn",
                     "client %llu: a multi-get waited %u ms for a later key's turn (holding %llu "
                     "bytes would pass a budget) while others waited: refused memory",
                     static_cast<unsigned long long>(s.id()), s.stallLimitMs(),
                     static_cast<unsigned long long>(r.held));
  refuse(r);
}

// Another client has a request in flight on this connection, behind the head.
bool BackendConnection::othersWaitBehind(const RequestOwner* head) const {
  for (size_t i = 1; i < inflight_.size(); ++i) {
    const RequestOwner* o = inflight_[i].req->session;
    if (o != nullptr && o != head) {
      return true;
    }
  }
  return false;
}

void BackendConnection::resume() {
  if (resume_timer_) {
    resume_timer_->stop();
  }
  if (!paused_) {
    return;
  }
  paused_ = false;
  wait_bytes_ = 0;
  if (tcp_) {
    tcp_->enableReading(true);
    onReadable();
  }
}

// n bytes at the front of the input are part of r's reply, bound for `sink` (its reply buffer or
// a fragment's values): to the client's socket if r streams, held under the client's budget
// otherwise, dropped if the client is gone or r was refused memory.
void BackendConnection::forward(PendingRequest& r, net::Buffer& sink, uint64_t n) {
  net::Buffer& in = tcp_->input();
  RequestOwner* s = r.session;
  if (s == nullptr || r.refused) {
    in.drain(n);
    return;
  }
  if (&sink == &r.reply && s->tryStream(r)) {
    s->streamReply(in, n);
    return;
  }
  if (!s->holdReply(r, n)) {
    refuse(r);
    in.drain(n);
    return;
  }
  in.moveTo(sink, n);
}

// Out of memory for r's reply: what it holds goes, and its reply will be memcached's error.
void BackendConnection::refuse(PendingRequest& r) {
  stats::bump(link_.worker().counters().client_oom_replies);
  if (r.session != nullptr) {
    MCRING_LOG_LIMITED(Info, "client oom reply",
                       "client %llu: a reply refused memory (client_buffer_limit or buffer_limit): "
                       "answered SERVER_ERROR out of memory (holds %llu bytes, %llu unsent)",
                       static_cast<unsigned long long>(r.session->id()),
                       static_cast<unsigned long long>(r.held),
                       static_cast<unsigned long long>(r.session->outputSize()));
  }
  r.refused = true;
  r.reply.drain(r.reply.size());
  for (uint32_t i = 0; i < r.fragment_count; ++i) {
    r.fragments[i].values.drain(r.fragments[i].values.size());
  }
  if (r.session != nullptr) {
    r.session->releaseHeld(r);
  }
  if (!r.failed) {
    r.failed = true;
    r.error_line.assign(protocol::kOutOfMemoryLine);
  }
}

void BackendConnection::sendSharedKeys(BackendServer& server, PendingRequest* r, uint32_t fragment,
                                       std::string_view command) {
  const Fragment& frag = r->fragments[fragment];
  size_t add = 0;
  for (uint32_t idx : frag.key_indices) {
    add += 1 + multigetKey(*r, idx).size();
  }
  if (!shared_command_.empty() &&
      (shared_command_ != command || shared_length_ + add + 2 > kMaxSharedLine)) {
    endSharedLine();
  }
  protocol::RequestWriter line(wire());  // one line over several calls: ended by endSharedLine
  if (shared_command_.empty()) {
    line.verb(command);
    shared_command_ = command;
    shared_length_ = command.size();
  }
  line.args(frag.key_indices, [r](uint32_t idx) { return multigetKey(*r, idx); });
  shared_length_ += add;
  expect(server, r, fragment, Delivery::Fragment, Expect::SharedLine, add);
}

void BackendConnection::endSharedLine() {
  if (shared_command_.empty()) {
    return;
  }
  shared_command_ = {};
  shared_length_ = 0;
  protocol::RequestWriter(wire()).end();
  stats::bump(link_.worker().counters().backend_get_lines);
  // Every other expectation follows a write through output(), which ended the line first. A
  // line begun while replays waited is held with its expectations, or was flushed with them.
  (holding() ? held_ : inflight_).back().line_end = true;
}

// A VALUE unit (n bytes at the front of the input) for `key`: the fragment's next expected key
// equal to it takes it (keys before it, in order, missed). False if none of the remaining keys
// is `key`; then they have all missed.
BackendConnection::Take BackendConnection::takeValue(PendingRequest& r, Fragment& fr,
                                                     std::string_view key, uint64_t n) {
  uint32_t p = fr.next_match;
  while (p < fr.key_indices.size() && multigetKey(r, fr.key_indices[p]) != key) {
    ++p;
  }
  if (p == fr.key_indices.size()) {
    fr.next_match = p;
    return Take::NoMatch;
  }
  const uint32_t idx = fr.key_indices[p];
  if (p > fr.next_match) {
    // The keys before it missed, whether or not the unit can be taken now: their turns pass.
    fr.next_match = p;
    if (r.session != nullptr && r.streaming) {
      r.session->advanceStream(r);
    }
  }
  net::Buffer& sink = multigetValueSink(r, fr);
  const Place place = &sink == &r.reply ? Place::Drop : placeInOrder(r, idx, n);
  if (place == Place::Wait) {
    wait_bytes_ = n;
    wait_key_ = idx;
    return Take::Wait;
  }
  fr.next_match = p + 1;
  r.key_hit_length[idx] = n;
  ++fr.hits;
  stats::bump(link_.worker().counters().get_hits);
  BackendServer& owner = r.key_server.empty() ? *current_ : *r.key_server[idx];
  stats::bump(owner.stats().get_hits);
  if (PoolRuntime& pool = owner.pool(); pool.detailOn()) {
    pool.countDetail(multigetKey(r, idx), stats::PrefixOp::Hit);
  }
  net::Buffer& in = tcp_->input();
  if (&sink == &r.reply) {
    forward(r, sink, n);
  } else if (place == Place::Stream) {
    r.session->streamReply(in, n);
    r.stream_key = idx + 1;
    r.session->advanceStream(r);
  } else if (place == Place::Hold) {
    in.moveTo(sink, n);
  } else {
    if (place == Place::Refuse) {
      refuse(r);
    }
    in.drain(n);
  }
  return Take::Taken;
}

// The fragment's keys not hit, when its reply ended: misses of their servers.
void BackendConnection::countMisses(const PendingRequest& r, const Fragment& fr) {
  if (r.key_server.empty()) {
    stats::bump(current_->stats().get_misses, fr.key_indices.size() - fr.hits);
    return;
  }
  for (const uint32_t idx : fr.key_indices) {  // keys of several pools (across routes)
    if (r.key_hit_length[idx] == 0) {
      stats::bump(r.key_server[idx]->stats().get_misses);
    }
  }
}

// The unit of key idx of r (n bytes), a multi-get over several fragments whose units must reach
// the client in key order. It is held while that fits (the reply is then assembled whole, as
// before). Past a limit, at the FIFO head, the reply streams: a unit is written if its key's turn
// has come (the earlier units go first), held if that fits, and otherwise waits: the connection
// stops reading until it fits or its turn comes (turnCame), as a streamed reply waits for its
// client to read. Behind the head, past a limit, the request is refused memory, as any queued
// reply.
BackendConnection::Place BackendConnection::placeInOrder(PendingRequest& r, uint32_t idx,
                                                         uint64_t n) {
  RequestOwner* s = r.session;
  if (s == nullptr || r.refused || r.failed) {
    return Place::Drop;  // a failed multi-get's reply is the failure (assembleMultiget)
  }
  if (!r.streaming && s->holdReply(r, n)) {
    return Place::Hold;  // assembled whole while it fits: a failure answers only the error
  }
  if (s->tryStream(r)) {
    if (r.stream_key == idx) {
      return Place::Stream;
    }
    return s->holdReply(r, n) ? Place::Hold : Place::Wait;
  }
  return s->holdReply(r, n) ? Place::Hold : Place::Refuse;
}

// A request's keys within a shared get line: memcached answers the line's keys in order, hits
// only, then one END; a unit that matches none of the head request's remaining keys means
// they missed, and the unit is the next request's.
BackendConnection::Step BackendConnection::deliverShared(const InFlight& f,
                                                         const protocol::Reply& rep,
                                                         std::string_view line) {
  PendingRequest* r = f.req;
  Fragment& fr = r->fragments[f.fragment];
  net::Buffer& in = tcp_->input();
  if (rep.kind == ReplyKind::Value) {
    const Take take = takeValue(*r, fr, rep.key.in(line), rep.totalLength());
    if (take != Take::NoMatch) {
      return take == Take::Wait ? Step::Wait : Step::More;
    }
  } else if (rep.kind == ReplyKind::End) {
    // fall through to the end of this request
  } else if (rep.isError()) {
    // One error answers the whole line (memcached stops there): every request of it fails (or
    // is marked, where its keys may go on elsewhere: failFragment).
    failFragment(*r, fr, BackendFailure::ProtocolError, line.substr(0, rep.line_length));
    if (rep.data_length > 0) {
      return Step::Desync;
    }
  } else {
    return Step::Desync;
  }
  if (!rep.isError()) {
    countMisses(*r, fr);
  }
  if (!f.line_end) {
    return Step::Pass;
  }
  if (rep.kind == ReplyKind::Value) {
    return Step::Desync;  // a VALUE for no key of the line
  }
  in.drain(rep.totalLength());
  return Step::Done;
}

BackendConnection::Step BackendConnection::deliver(const InFlight& f, const protocol::Reply& rep,
                                                   std::string_view line) {
  PendingRequest* r = f.req;
  net::Buffer& in = tcp_->input();
  uint64_t n = rep.totalLength();
  switch (f.delivery) {
    case Delivery::Direct:
      if (f.expect == Expect::UntilNoop) {
        // The backend applied the q flag itself; the `mn` we added marks the end.
        if (rep.kind == ReplyKind::MetaNoop) {
          if (hits_in_reply_ == 0) {
            if (r->observer != nullptr) {
              r->observer->onUnit(*this, *r, DirectUnit::QuietEmpty, rep, line);
            }
            if (r->command == protocol::Command::MetaGet) {
              stats::bump(current_->stats().get_misses);
            }
          }
          hits_in_reply_ = 0;
          in.drain(n);
          return Step::Done;
        }
        if (rep.isListItem()) {
          return Step::Desync;
        }
        if (r->observer != nullptr) {
          r->observer->onUnit(*this, *r, DirectUnit::Quiet, rep, line);
        }
        if (r->command == protocol::Command::MetaGet &&
            (rep.kind == ReplyKind::MetaValue || rep.kind == ReplyKind::MetaHit)) {
          stats::bump(current_->stats().get_hits);
        }
        ++hits_in_reply_;
        ++r->units_received;
        forward(*r, r->reply, n);
        return Step::More;
      }
      if (f.expect == Expect::OneUnit) {
        if (rep.isListItem()) {
          return Step::Desync;
        }
        if (r->observer != nullptr) {
          r->observer->onUnit(*this, *r, DirectUnit::Whole, rep, line);
        }
        if (r->command == protocol::Command::MetaGet) {
          bool hit = rep.kind == ReplyKind::MetaValue || rep.kind == ReplyKind::MetaHit;
          stats::bump(hit ? current_->stats().get_hits : current_->stats().get_misses);
        }
        // Classic noreply: memcached silences every reply but SERVER_ERROR (sent through its
        // out_errstring(), which ignores noreply); the proxy does the same with the backend's.
        // "object too large for cache" is the exception: memcached sends it with out_string(),
        // which obeys noreply (a value under item_size_max that memcached's item header makes
        // too large).
        if (r->noreply && (rep.kind != ReplyKind::ServerError ||
                           line.substr(0, rep.line_length) == protocol::kTooLargeLine)) {
          in.drain(n);
        } else {
          forward(*r, r->reply, n);
        }
        return Step::Done;
      }
      if (rep.kind == ReplyKind::Value) {
        ++hits_in_reply_;
        ++r->units_received;
        if (PoolRuntime& pool = current_->pool(); pool.detailOn()) {
          pool.countDetail(rep.key.in(line), stats::PrefixOp::Hit);
        }
        forward(*r, r->reply, n);
        return Step::More;
      }
      if (rep.kind == ReplyKind::End || rep.isError()) {
        forward(*r, r->reply, n);
        auto& c = link_.worker().counters();
        uint64_t misses = r->key_count > hits_in_reply_ ? r->key_count - hits_in_reply_ : 0;
        stats::bump(c.get_hits, hits_in_reply_);
        stats::bump(c.get_misses, misses);
        stats::bump(current_->stats().get_hits, hits_in_reply_);
        stats::bump(current_->stats().get_misses, misses);
        hits_in_reply_ = 0;
        return Step::Done;
      }
      return Step::Desync;
    case Delivery::Fragment: {
      Fragment& fr = r->fragments[f.fragment];
      if (rep.kind == ReplyKind::Value) {
        // Not one of the keys still expected: a VALUE for a key we did not ask this backend for.
        switch (takeValue(*r, fr, rep.key.in(line), n)) {
          case Take::Taken:
            return Step::More;
          case Take::Wait:
            return Step::Wait;
          case Take::NoMatch:
            return Step::Desync;
        }
        return Step::Desync;
      }
      if (rep.kind == ReplyKind::End) {
        in.drain(n);
        countMisses(*r, fr);
        return Step::Done;
      }
      if (rep.isError()) {
        failFragment(*r, fr, BackendFailure::ProtocolError, line.substr(0, rep.line_length));
        in.drain(n);
        return Step::Done;
      }
      return Step::Desync;
    }
    case Delivery::Broadcast:
      if (rep.kind != ReplyKind::Ok && !r->failed) {
        r->failed = true;
        r->error_line.assign(line.substr(0, rep.line_length));
      }
      in.drain(n);
      return rep.data_length == 0 ? Step::Done : Step::Desync;
    case Delivery::Handler: {
      const UnitVerdict v = f.handler->onUnit(*this, *r, f.fragment, rep, in.contiguous(n));
      if (v == UnitVerdict::Desync) {
        return Step::Desync;
      }
      in.drain(n);
      return v == UnitVerdict::Done ? Step::Done : Step::More;
    }
    case Delivery::Stats: {
      Fragment& fr = r->fragments[f.fragment];
      if (rep.data_length > 0) {
        return Step::Desync;
      }
      forward(*r, fr.values, n);
      if (rep.isListItem()) {  // STAT or ITEM: a VALUE has a data block, refused above
        return Step::More;
      }
      fr.done = rep.kind == ReplyKind::End || rep.kind == ReplyKind::Version || rep.isError();
      return fr.done ? Step::Done : Step::Desync;
    }
  }
  return Step::Desync;
}

// A multi-get's part that this server could not serve: in a request that defers its parts'
// failures (defersFragmentFailures: its keys may go on to other servers) it is marked, and the
// request's completion sends its keys on (or fails it as before); any other fails the request.
void BackendConnection::failFragment(PendingRequest& r, Fragment& fr, BackendFailure why,
                                     std::string_view error_line) {
  if (defersFragmentFailures(r)) {
    fr.failed = true;
    fr.failure = why;
    if (!error_line.empty() && r.error_line.empty()) {
      r.error_line.assign(error_line);
    }
    return;
  }
  if (!r.failed) {
    r.failed = true;
    r.error_line.assign(error_line.empty() ? backendFailureReply(why) : error_line);
  }
}

// The expectation `f` is over (answered or failed): complete its request if it was the last
// part, and drop this connection's reference.
void BackendConnection::finish(InFlight& f) {
  PendingRequest* r = f.req;
  WorkerContext& w = link_.worker();
  BackendServer& server = *f.server;
  current_ = &server;
  server.countFinished();
  if (server.draining() && server.idle()) {
    w.onBackendIdle();  // a reload removed it: it may go now (after this call, see reapDraining)
  }
  if (f.delivery == Delivery::Fragment && !r->key_server.empty()) {
    releaseKeyServers(*r, r->fragments[f.fragment], server, w);
  }
  if (f.delivery == Delivery::Handler) {
    f.handler->onFinished(*this, *r, f.fragment);
  }
  if (f.delivery == Delivery::Fragment) {
    // Its keys not hit missed: a multi-get streaming in key order may write what follows them.
    r->fragments[f.fragment].done = true;
    if (r->session != nullptr && r->streaming) {
      r->session->advanceStream(*r);
    }
  }
  if (--r->fragments_left == 0) {
    if (r->complete) {
      // Completed before every part answered (by a ReplyHandler's onFinished); the other parts'
      // replies were read in the background.
      w.requests().release(r);
      return;
    }
    if (!w.steps().complete(*r, w)) {
      w.requests().release(r);  // a second hop's expectations hold it now
      return;
    }
    r->complete = true;
    if (r->session != nullptr) {
      r->session->onRequestComplete(r);
    }
  }
  w.requests().release(r);
}

void BackendConnection::failAll(BackendFailure why) {
  common::RingQueue<InFlight> failed;
  failed.swap(inflight_);
  failed.append(replays_.begin(), replays_.end());
  replays_.clear();
  replay_waits_for_ = 0;
  failed.append(held_.begin(), held_.end());  // never sent: they fail the same
  held_.clear();
  held_output_.drain(held_output_.size());
  shared_command_ = {};  // its bytes went with the connection
  shared_length_ = 0;
  hits_in_reply_ = 0;
  failEach(failed, why);
}

void BackendConnection::failEach(common::RingQueue<InFlight>& failed, BackendFailure why) {
  std::string_view reply = backendFailureReply(why);
  auto& c = link_.worker().counters();
  if (!failed.empty()) {
    for (const InFlight& f : failed) {
      if (f.delivery == Delivery::Fragment) {
        countFragmentFailure(*f.server, *f.req, f.req->fragments[f.fragment], why);
      } else {
        f.server->countFailure(why);
      }
    }
  }
  const DispatchSteps& steps = link_.worker().steps();
  for (InFlight& f : failed) {
    PendingRequest* r = f.req;
    current_ = f.server;
    switch (f.delivery) {
      case Delivery::Direct: {
        r->backend_failed = true;
        // Settled on completion by the request's features (direct_reply_observer.h: a next server
        // may serve it), or answered by unavailable_reads / unavailable_writes, or its reply is the
        // failure.
        const bool deferred = r->observer != nullptr && r->observer->onFailure(*this, *r, why);
        if (!deferred && steps.answerUnavailable(*r, f.fragment, *f.server, why, link_.worker())) {
          break;
        }
        if (r->session != nullptr) {
          r->session->releaseHeld(*r);
        }
        r->reply.drain(r->reply.size());
        // Classic noreply gets nothing back even on failure (the client reads no reply); meta
        // q always returns errors (memcached's rule).
        if (!r->noreply) {
          r->reply.append(reply);
        }
        if (!deferred) {
          stats::bump(c.server_errors);  // a deferred one: counted if it stands when settled
        }
        break;
      }
      case Delivery::Fragment:
        if (defersFragmentFailures(*r)) {
          failFragment(*r, r->fragments[f.fragment], why, {});
          break;
        }
        if (steps.answerUnavailable(*r, f.fragment, *f.server, why, link_.worker())) {
          break;  // its keys not hit yet are misses (unavailable_reads)
        }
        [[fallthrough]];
      case Delivery::Broadcast:
        if (!r->failed) {
          r->failed = true;
          r->error_line.assign(reply);
          stats::bump(c.server_errors);
        }
        break;
      case Delivery::Stats:  // a fragment not done is a server skipped by the merge
        break;
      case Delivery::Handler:
        f.handler->onFailure(*this, *r, f.fragment, why);
        break;
    }
    finish(f);
  }
}

void BackendConnection::closeSocket() {
  if (state_ == State::Connected) {
    stats::drop(link_.worker().counters().backend_connections);
    link_.countConnection(false);
  }
  state_ = State::Closed;
  timeout_armed_ = false;
  paused_ = false;
  wait_bytes_ = 0;
  paused_for_ = nullptr;
  framer_ = protocol::ReplyFramer();  // a line it had half read went with the socket
  if (resume_timer_) {
    resume_timer_->stop();
  }
  if (tcp_) {
    tcp_->close();
    tcp_.reset();
  }
}

void BackendConnection::abort(BackendFailure why) {
  if (why == BackendFailure::ProtocolError) {
    stats::bump(link_.worker().counters().backend_protocol_errors);
    link_.logFailure(why, 0);
  }
  closeSocket();
  link_.onFailure(why);
  failAll(why);
}

// memcached closes a connection it accepted, or answers out of turn, because of what it was sent
// (a line it will not buffer, a command that ends the connection, bytes it reads differently from
// mcring) or because it is going away. The first must not cost the other clients whose requests
// share the connection, nor the server its place in the pool; the second shows at the next
// connect, which fails. So a close or a desync of a connected connection is not counted towards
// server_failure_limit or backoff (a failed connect or a timeout is); the requests in flight that
// are safe to send twice and got nothing yet are sent again on a fresh connection, one at a time
// in their order (sendNextReplay), the first before anything else can reach the connection
// (finishing a failed request may dispatch its client's next one); the others fail as before
// (mcring cannot know whether memcached executed them). docs/design.md has the rule's limits.
void BackendConnection::closeUnexpectedly(BackendFailure why) {
  auto& c = link_.worker().counters();
  if (why == BackendFailure::ProtocolError) {
    stats::bump(c.backend_protocol_errors);
    link_.logFailure(why, 0);
  }
  common::RingQueue<InFlight> owed;
  owed.swap(inflight_);
  // Replays of an earlier close not sent yet had no part in this one: they keep their turn.
  // While replays waited, later requests were held, shared get line included (flushHeld).
  const bool was_holding = holding();
  common::RingQueue<InFlight> again;
  again.swap(replays_);
  replay_waits_for_ = 0;
  common::RingQueue<InFlight> failed;
  for (size_t i = 0; i < owed.size(); ++i) {
    (replayable(owed[i], i == 0, owed.size() == 1) ? again : failed).push_back(owed[i]);
  }
  if (!was_holding) {
    shared_command_ = {};  // its bytes went with the connection
    shared_length_ = 0;
  }
  hits_in_reply_ = 0;
  closeSocket();
  if (!again.empty()) {  // always so when was_holding: the replays not sent yet are in it
    if (ensureConnected()) {
      replays_.swap(again);
      sendNextReplay();
    } else {
      failed.append(again.begin(), again.end());  // the connect failure counted
      failed.append(held_.begin(), held_.end());
      held_.clear();
      held_output_.drain(held_output_.size());
      shared_command_ = {};
      shared_length_ = 0;
    }
  }
  if (!failed.empty()) {
    if (why == BackendFailure::ConnectionClosed) {
      // Their handlers may repair what memcached may or may not have applied, on a fresh
      // connection, which memcached reads after this one (ReplyHandler::onConnectionLost).
      for (InFlight& f : failed) {
        current_ = f.server;
        if (f.delivery == Delivery::Handler &&
            !f.handler->onConnectionLost(*this, *f.req, f.fragment)) {
          break;
        }
      }
    }
    failEach(failed, why);
  }
}

// Everything up to the previous replay is answered: send the next one (behind whatever was
// queued meanwhile), and wait for it.
void BackendConnection::sendNextReplay() {
  while (!replays_.empty()) {
    InFlight f = replays_.front();
    replays_.pop_front();
    if (f.req->session == nullptr) {
      finish(f);  // its client left: nothing to ask
      continue;
    }
    ++f.replays;
    resend(f);
    inflight_.push_back(f);
    replay_waits_for_ = inflight_.size();
    updateTimeout();
    break;
  }
  if (!holding()) {
    flushHeld();  // the last replay is on its way: what was held goes behind it
  }
}

void BackendConnection::flushHeld() {
  if (held_.empty() && held_output_.empty()) {
    return;
  }
  held_output_.moveAllTo(tcp_->output());
  inflight_.append(held_.begin(), held_.end());
  held_.clear();
  updateTimeout();
}

// Safe to send again: a retrieval with no side effect beyond what repeating it repeats (get,
// gets; gat, gats and touch set the same TTL again; an mg the dispatcher marked, without N, R or
// q), that got no byte of its reply yet, for a client still there, and that its features'
// observer does not keep from it (DirectReplyObserver::replayable: state tied to what was sent).
// `head`: first in line (a part of its reply may have arrived). `alone`: the only request in
// flight when the connection closed, so certainly the one memcached gave up on: once it was sent
// again, it is not sent a third time. Any other may go up to kMaxReplays times: memcached reads in
// order, so a request behind the line it gave up on was never read, and a replay that is first in
// line when another client's line closes the connection behind it is not the culprit (under load a
// replay's answer can still be on its way when that line arrives). A culprit with others in
// flight behind it is alone, or out of replays, within kMaxReplays closes.
bool BackendConnection::replayable(const InFlight& f, bool head, bool alone) const {
  const PendingRequest& r = *f.req;
  if (f.replays >= (alone ? 1 : kMaxReplays) || r.session == nullptr || r.refused ||
      (r.observer != nullptr && !r.observer->replayable(r))) {
    return false;
  }
  switch (f.delivery) {
    case Delivery::Fragment: {
      const Fragment& fr = r.fragments[f.fragment];
      return fr.next_match == 0 && fr.hits == 0;
    }
    case Delivery::Direct:
      if (r.resend.empty() || f.expect == Expect::UntilNoop || r.reply.size() > 0 || r.streaming) {
        return false;
      }
      return !(head && hits_in_reply_ > 0);
    default:
      return false;
  }
}

// Writes f's request again. A fragment's keys go on a line of their own (a shared line's other
// requests may not be replayed), so it now expects a retrieval reply of its own.
void BackendConnection::resend(InFlight& f) {
  PendingRequest& r = *f.req;
  f.sent_us = monotonicMicros();
  stats::bump(link_.worker().counters().replayed_requests);
  // Straight to the socket: a shared get line being built while replays wait is held, and must
  // stay open (and behind this replay).
  net::Buffer& out = tcp_->output();
  if (f.delivery == Delivery::Direct) {
    out.append(r.resend);
    return;
  }
  writeFragmentLine(out, r, r.fragments[f.fragment]);
  f.expect = Expect::Retrieval;
  f.line_end = false;
}

bool BackendConnection::checkAuthReply() {
  net::Buffer& in = tcp_->input();
  static constexpr size_t kMaxLine = 1024;
  const size_t nl = in.findNewline(0, kMaxLine);
  if (nl == net::Buffer::npos) {
    if (in.size() < kMaxLine) {
      return false;  // not all of it yet
    }
  } else if (in.contiguous(nl + 1) == "STORED\r\n") {
    in.drain(nl + 1);
    auth_pending_ = false;
    return true;
  }
  // memcached's "CLIENT_ERROR authentication failure" (or "bad authentication token format");
  // the line says nothing of the credentials.
  std::string line(in.contiguous(std::min(in.size(), nl == net::Buffer::npos ? kMaxLine : nl)));
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
    line.pop_back();
  }
  link_.logFailure(BackendFailure::ConnectFailed, 0,
                   "refused mcring's server_auth_file credentials: " + line);
  stats::bump(link_.worker().counters().backend_connect_failures);
  abort(BackendFailure::ConnectFailed);
  link_.worker().onBackendIdle();
  return false;
}

void BackendConnection::onClosed(net::CloseReason reason, int error) {
  BackendFailure why = BackendFailure::ConnectionClosed;
  if (reason == net::CloseReason::Timeout) {
    why = BackendFailure::Timeout;
    stats::bump(link_.worker().counters().backend_timeouts);
    link_.countTimeout();
  } else if (state_ == State::Connecting) {
    why = BackendFailure::ConnectFailed;
    stats::bump(link_.worker().counters().backend_connect_failures);
  }
  link_.logFailure(why, error, tcp_ ? tcp_->tlsError() : std::string());
  if (why == BackendFailure::ConnectionClosed) {
    closeUnexpectedly(why);
  } else {
    abort(why);
  }
  link_.worker().onBackendIdle();
}

}  // namespace mcring::core
