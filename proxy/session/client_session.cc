// ClientSession: framing, the in-order reply FIFO, back-pressure and the memory budget.
#include "proxy/session/client_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <iterator>

#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/session/client_auth.h"

namespace mcring::core {

using protocol::Command;

ClientSession::ClientSession(SessionContext& worker, PoolRuntime& pool, uint64_t id,
                             std::shared_ptr<std::atomic<uint32_t>> open_count)
    : worker_(worker),
      pool_(&pool),
      id_(id),
      open_count_(std::move(open_count)),
      framer_(pool.parser),
      binary_framer_(pool.parser),
      dispatcher_(worker, worker.statsViews(), worker.metadumps(), worker.shadows()) {}

namespace {

// The client's address without its port, for top clients: its connections count together.
std::string peerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return "unknown";
  }
  char text[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, text, sizeof text);
  } else if (ss.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, text, sizeof text);
  } else {
    return "unix";
  }
  return text;
}

}  // namespace

ClientSession::~ClientSession() {
  endWatch();
  worker_.clients().release(client_);
  releaseSlot();
  // Requests still owed by backends lose their session; they are recycled when answered.
  dropFifo();
  releaseInput();
}

bool ClientSession::attach(int fd, const net::TlsSetup* tls) {
  tcp_ = net::TcpConnection::adopt(worker_.loop(), fd, this, pool_->config().tcpkeepalive, tls);
  if (!tcp_) {
    return false;
  }
  // A request larger than this needs a reservation first (wantInput).
  tcp_->setReadHighWatermark(kInputAllowance);
  client_address_ = peerAddress(fd);
  client_ = worker_.clients().acquire(client_address_);
  return true;
}

void ClientSession::onReadable() {
  if (closed_) {
    return;
  }
  processInput();
}

bool ClientSession::throttled() const {
  if (fifo_.size() >= kMaxPending) {
    return true;
  }
  if (!tcp_) {
    return false;
  }
  uint64_t buffered = tcp_->output().size() + held_;
  peak_buffered_ = std::max(peak_buffered_, buffered);
  return buffered >= clientLimit() / 2;
}

void ClientSession::updateReading() {
  if (closed_ || !tcp_) {
    return;
  }
  bool want = !read_eof_ && !draining_ && !closing_ && !throttled();
  if (want != reading_) {
    reading_ = want;
    tcp_->enableReading(want);
    // Write-done callbacks tell us when a stalled reader has caught up.
    tcp_->setWriteLowWatermark(want ? 0 : clientLimit() / 4);
  }
}

void ClientSession::processInput() {
  if (in_process_) {
    return;
  }
  in_process_ = true;
  net::Buffer& in = tcp_->input();
  if (watcher_) [[unlikely]] {
    in.drain(in.size());  // a watcher's input is ignored, as memcached does
  }
  if (wire_ == Wire::Unknown && in.size() > 0) {
    wire_ = static_cast<uint8_t>(in.byteAt(0)) == protocol::kBinaryRequestMagic ? Wire::Binary
                                                                                : Wire::Text;
  }
  while (!closed_ && !closing_ && !draining_ && !throttled()) {
    if (wire_ == Wire::Binary && mustAuthenticate()) {
      // Binary clients cannot authenticate (no SASL). memcached -Y answers a binary
      // connection's first whole header, and every read after it, with the text error and
      // drops what it read, keeping the connection: so does mcring.
      if (!binary_refused_ && in.size() < protocol::kBinaryHeaderSize) {
        wantInput(protocol::kBinaryHeaderSize);
        break;
      }
      binary_refused_ = true;
      in.drain(in.size());
      stats::bump(worker_.counters().client_unauthenticated);
      completeWith(newRequest(Command::Set), kUnauthenticated);
      break;
    }
    if (wire_ == Wire::Binary) {
      if (!processBinaryPacket(in)) {
        break;
      }
      continue;
    }
    const protocol::RequestFrame frame = framer_.next(in, req_);
    if (frame.kind == protocol::RequestFrameKind::NeedMore) {
      wantInput(frame.length);
      break;
    }
    if (mustAuthenticate()) {
      authenticate(frame);
      continue;
    }
    if (frame.kind == protocol::RequestFrameKind::Discard) {
      in.drain(frame.length);
      continue;
    }
    if (frame.kind == protocol::RequestFrameKind::Rejected && req_.command == Command::FlushAll &&
        req_.error == protocol::RequestError::InvalidExptime && !pool_->config().allow_flush_all) {
      in.drain(frame.length);
      dispatcher_.refuseFlushAll(*this, *pool_, req_);
      continue;
    }
    if (frame.kind == protocol::RequestFrameKind::Rejected) {
      if (req_.error == protocol::RequestError::TooLarge &&
          (req_.command == Command::Set || req_.command == Command::MetaSet) &&
          !req_.keys.empty()) {
        // memcached unlinks the old value when a set is too large (so no stale value
        // survives a write the client believes failed); do the same on the key's backend.
        dispatcher_.invalidateTooLarge(*this, *pool_, req_, frame.line);
      }
      in.drain(frame.length);
      rejectRequest(req_);
      continue;
    }
    stats::bump(worker_.counters().bytes_read, frame.length);
    countClientRequest(frame.length);
    dispatcher_.dispatch(*this, *pool_, req_, frame.line);  // takes exactly frame.length bytes
    if (input_reserved_ > 0) {
      releaseInput();
    }
  }
  in_process_ = false;
  if (closed_) {
    return;
  }
  updateReading();
  if (read_eof_ && fifo_.empty() && tcp_->output().empty()) {
    close();
  }
}

void ClientSession::wantInput(uint64_t need) {
  net::Buffer& in = tcp_->input();
  peak_buffered_ = std::max<uint64_t>(peak_buffered_, in.size());
  if (need == 0 && in.size() >= kInputAllowance) {
    // A get/gets line still arriving past the allowance: it may grow to the line limit.
    const auto& limits = pool_->parser.limits();
    need = std::max(limits.max_line, limits.max_retrieval_line) + 1;
  }
  if (need <= kInputAllowance) {
    return;
  }
  input_need_ = need;
  if (in.size() != input_seen_) {
    input_seen_ = in.size();
    input_progress_ns_ = common::coarseMonotonicNs();
  }
  if (need > input_reserved_) {
    if (!pool_->inputs_budget.tryCharge(need - input_reserved_)) {
      // No memory for it now: read no more of this client until a reservation frees.
      if (!waiting_input_) {
        waiting_input_ = true;
        pool_->input_waiters.push_back(this);
        stats::bump(worker_.counters().client_input_waits);
        worker_.onInputWaiting();
      }
      return;
    }
    if (input_reserved_ == 0) {
      pool_->input_holders.push_back(this);
    }
    input_reserved_ = need;
  }
  tcp_->setReadHighWatermark(need);
}

void ClientSession::releaseInput() {
  if (waiting_input_) {
    auto& w = pool_->input_waiters;
    w.erase(std::remove(w.begin(), w.end(), this), w.end());
    waiting_input_ = false;
  }
  if (input_reserved_ == 0) {
    return;
  }
  auto& h = pool_->input_holders;
  h.erase(std::remove(h.begin(), h.end(), this), h.end());
  pool_->inputs_budget.release(input_reserved_);
  input_reserved_ = 0;
  input_seen_ = 0;
  if (tcp_) {
    tcp_->setReadHighWatermark(kInputAllowance);
  }
  if (!pool_->input_waiters.empty()) {
    worker_.scheduleInputWake();
  }
}

// A waiting session reads nothing, so it would not see its client leave; while it waits, the
// request it holds part of can only complete if the rest is already in the socket.
bool ClientSession::abandonIfPeerGone() {
  uint64_t unread = 0;
  if (closed_ || !tcp_ || !tcp_->peerFinished(&unread) ||
      tcp_->input().size() + unread >= input_need_) {
    return false;
  }
  MCRING_LOG(Info, "client %llu: closed its side with a request of %llu bytes unfinished",
             static_cast<unsigned long long>(id_), static_cast<unsigned long long>(input_need_));
  close();
  return true;
}

// Holding a reservation for a request whose bytes stopped coming, while other clients wait for
// that memory: the reservation is not being used, so the client is closed (a slowloris with a
// large set would otherwise hold the budget forever).
bool ClientSession::abandonIfInputStalled(uint64_t now_ns) {
  if (closed_ || input_reserved_ == 0 || now_ns - input_progress_ns_ < kInputStallNs) {
    return false;
  }
  stats::bump(worker_.counters().client_input_stalled);
  MCRING_LOG(Info,
             "client %llu: closed: sent nothing of its %llu-byte request for %llu ms "
             "while other clients waited for its memory",
             static_cast<unsigned long long>(id_), static_cast<unsigned long long>(input_need_),
             static_cast<unsigned long long>(kInputStallNs / 1000000));
  close();
  return true;
}

void ClientSession::onInputBudget() {
  waiting_input_ = false;
  if (!closed_ && !in_process_) {
    processInput();
  }
}

PendingRequest* ClientSession::newRequest(protocol::Command command) {
  PendingRequest* r = worker_.requests().acquire();
  r->session = this;
  r->refs = 1;
  r->fragments_left = 1;
  r->command = command;
  if (binary_pending_.active) {
    r->binary = binary_pending_;
  }
  fifo_.push_back(r);
  ++requests_;
  return r;
}

void ClientSession::completeWith(PendingRequest* r, std::string_view reply) {
  r->reply.append(reply);
  r->complete = true;
  onRequestComplete(r);
}

void ClientSession::rejectRequest(const protocol::Request& req) {
  stats::bump(worker_.counters().client_errors);
  PendingRequest* r = newRequest(req.command);
  std::string reply(protocol::requestErrorText(req.error));
  reply += "\r\n";
  // The parser sets noreply on a rejected request exactly when memcached stays silent (classic
  // commands once "noreply" was read; never for meta commands).
  if (req.noreply) {
    reply.clear();
  }
  r->close_after = req.close;
  if (req.close) {
    closing_ = true;
    MCRING_LOG(Info, "client %llu: %s, closing", static_cast<unsigned long long>(id_),
               std::string(protocol::requestErrorName(req.error)).c_str());
  }
  completeWith(r, reply);
}

void ClientSession::authenticate(const protocol::RequestFrame& frame) {
  net::Buffer& in = tcp_->input();
  const bool set = req_.command == Command::Set;
  std::string_view reply;
  if (set && frame.kind == protocol::RequestFrameKind::Request) {
    std::string_view data = in.contiguous(frame.length).substr(req_.line_length, req_.value_length);
    switch (checkAuthToken(data, *pool_->topology->client_credentials)) {
      case AuthResult::Accepted:
        authenticated_ = true;
        reply = kAuthStored;
        break;
      case AuthResult::Failed:
        reply = kAuthFailure;
        break;
      case AuthResult::BadFormat:
        reply = kAuthBadFormat;
        break;
    }
    in.drain(frame.length);
  } else {
    // Anything else first (a malformed set line too) is refused, and like memcached the rest of
    // what the client sent meanwhile is dropped unread.
    reply = set && frame.kind == protocol::RequestFrameKind::Rejected &&
                    req_.error == protocol::RequestError::BadDataChunk
                ? kAuthBadTermination
                : kUnauthenticated;
    in.drain(in.size());
    framer_ = protocol::RequestFramer(pool_->parser);  // nothing left to discard
  }
  if (!authenticated_) {
    stats::bump(reply == kUnauthenticated ? worker_.counters().client_unauthenticated
                                          : worker_.counters().client_auth_failures);
  }
  completeWith(newRequest(Command::Set), reply);
}

void ClientSession::onRequestComplete(PendingRequest* r) {
  if (!fifo_.empty() && fifo_.front() == r) {
    flush();
  }
}

bool ClientSession::streamable(const PendingRequest& r) const {
  if (r.binary.active && (r.binary.opcode == static_cast<uint8_t>(protocol::BinaryOpcode::Stat) ||
                          r.shape != Shape::Direct)) {
    return false;  // translated as a whole when written
  }
  switch (r.shape) {
    case Shape::Direct:
      return !warmHops(r) && !r.rewrites;
    case Shape::Multiget:
      // A lone fragment's units are the reply in key order (multigetValueSink); several
      // fragments' units are written in key order as their turn comes (advanceStream).
      return !warmHops(r) && !r.rewrites;
    case Shape::Broadcast:
    case Shape::Stats:
      return false;
  }
  return false;
}

bool ClientSession::tryStream(PendingRequest& r) {
  if (r.streaming) {
    return true;
  }
  if (closed_ || fifo_.empty() || fifo_.front() != &r || r.complete || !streamable(r)) {
    return false;
  }
  if (multigetInKeyOrder(r)) {
    // Several fragments: the units held so far wait in them for their keys' turn.
    r.streaming = true;
    advanceStream(r);
    return true;
  }
  releaseHeld(r);
  if (r.start_ns != 0) [[unlikely]] {
    noteStatus(r, r.reply, r.reply.size());
  }
  if (!r.reply.empty()) {
    const size_t before = tcp_->output().size();
    writeReply(r, tcp_->output());
    countWritten(tcp_->output().size() - before);
  }
  r.streaming = true;
  syncOutput();
  return true;
}

void ClientSession::streamReply(net::Buffer& from, uint64_t n) {
  // Only the FIFO's head streams; a binary client's reply unit is whole, translated on its way.
  net::Buffer& out = tcp_->output();
  if (!fifo_.empty() && fifo_.front()->start_ns != 0) [[unlikely]] {
    noteStatus(*fifo_.front(), from, n);
  }
  if (!fifo_.empty() && fifo_.front()->binary.active) {
    const size_t before = out.size();
    writeBinaryUnit(fifo_.front()->binary, from, n, out);
    countWritten(out.size() - before);
  } else {
    countWritten(n);
    from.moveTo(out, n);
  }
  syncOutput();
}

// A client that holds almost nothing is never refused for what other clients hold: when the
// pool's budget is full, its bytes go to the pool's reserve, which only such clients use.
int ClientSession::holdFrom(uint64_t n) const {
  const uint64_t mine = held_ + outputSize() + n;
  if (mine > clientLimit()) {
    return 0;
  }
  if (pool_->replies_budget.fits(n)) {
    return 1;
  }
  return mine <= kSmallClient && pool_->replies_reserve.fits(n) ? 2 : 0;
}

bool ClientSession::canHold(const PendingRequest& r, uint64_t n) const {
  (void)r;
  return holdFrom(n) != 0;
}

bool ClientSession::holdReply(PendingRequest& r, uint64_t n) {
  const int from = holdFrom(n);
  if (from == 0) {
    return false;
  }
  if (from == 1) {
    pool_->replies_budget.charge(n);
  } else {
    pool_->replies_reserve.charge(n);
    r.held_reserve += n;
  }
  held_ += n;
  r.held += n;
  peak_buffered_ = std::max(peak_buffered_, held_ + outputSize());
  return true;
}

void ClientSession::releaseHeld(PendingRequest& r) {
  releasePart(r, r.held);
}

void ClientSession::releasePart(PendingRequest& r, uint64_t n) {
  n = std::min(n, r.held);
  if (n == 0) {
    return;
  }
  const uint64_t reserve = std::min(n, r.held_reserve);
  pool_->replies_reserve.release(reserve);
  pool_->replies_budget.release(n - reserve);
  r.held_reserve -= reserve;
  r.held -= n;
  held_ -= std::min(held_, n);
}

// The units of a multi-get over several fragments reach the socket in key order: key i's as
// soon as every earlier key's unit is written or known to have missed.
void ClientSession::advanceStream(PendingRequest& r) {
  // A failed one writes nothing more: its reply ends with the failure (assembleMultiget).
  if (closed_ || !r.streaming || r.refused || r.failed || !multigetInKeyOrder(r)) {
    return;
  }
  net::Buffer& out = tcp_->output();
  const size_t before = out.size();
  while (r.stream_key < r.key_count && multigetKeyAnswered(r, r.stream_key)) {
    const uint64_t n = r.key_hit_length[r.stream_key];
    if (n > 0) {
      releasePart(r, n);
      r.fragments[r.key_fragment[r.stream_key]].values.moveTo(out, n);
    }
    ++r.stream_key;
  }
  if (out.size() != before) {
    countWritten(out.size() - before);
    syncOutput();
  }
}

uint64_t ClientSession::outputSize() const {
  return tcp_ ? tcp_->output().size() : 0;
}

// Full at the client's own limit, or, while the pool is over its budget, past a small floor: so
// many clients that each stay under their limit cannot together pass the pool's.
bool ClientSession::outputFull() const {
  const uint64_t out = outputSize();
  return out >= clientLimit() ||
         (out >= kOutputFloor && pool_->replies_budget.used() > pool_->replies_budget.limit());
}

// The pool's budget counts this client's unsent output as of the last sync (socket writes drain
// it without telling us; syncs happen whenever the session touches its output).
void ClientSession::syncOutput() {
  const uint64_t now = outputSize();
  if (now > output_charged_) {
    pool_->replies_budget.charge(now - output_charged_);
  } else {
    pool_->replies_budget.release(output_charged_ - now);
  }
  output_charged_ = now;
  peak_buffered_ = std::max(peak_buffered_, now + held_);
}

uint32_t ClientSession::stallLimitMs() const {
  const MemoryBudget& b = pool_->replies_budget;
  return b.used() > b.limit() ? kStallLimitOverBudgetMs : kStallLimitMs;
}

void ClientSession::closeSlowReader() {
  if (closed_) {
    return;
  }
  stats::bump(worker_.counters().client_slow_closed);
  MCRING_LOG(Info,
             "client %llu: closed: read nothing of %llu bytes of replies for %u ms while a "
             "backend connection waited on it",
             static_cast<unsigned long long>(id_), static_cast<unsigned long long>(outputSize()),
             stallLimitMs());
  close();
}

void ClientSession::flush() {
  if (closed_) {
    return;
  }
  net::Buffer& out = tcp_->output();
  bool close_now = false;
  while (!fifo_.empty() && fifo_.front()->complete) {
    PendingRequest* r = fifo_.front();
    fifo_.pop_front();
    releaseHeld(*r);
    if (r->start_ns != 0) [[unlikely]] {
      traceDone(*r);
    }
    const size_t before = out.size();
    writeReply(*r, out);
    countWritten(out.size() - before);
    close_now = r->close_after;
    r->session = nullptr;
    worker_.requests().release(r);
    if (close_now) {
      break;
    }
  }
  if (close_now) {
    // quit, or framing lost: nothing after this is answered; close once the output is written.
    closing_ = true;
    read_eof_ = true;
    dropFifo();
  }
  syncOutput();
  if (watcher_) [[unlikely]] {
    pumpWatch();  // the lines that waited for the watch's OK
  }
  if (!in_process_) {
    bool was_throttled = !reading_;
    updateReading();
    if (was_throttled && reading_ && tcp_->input().size() > 0) {
      processInput();
      return;
    }
  }
  if ((read_eof_ || draining_) && fifo_.empty() && out.empty()) {
    close();
  } else if ((read_eof_ || draining_ || handing_over_) && fifo_.empty()) {
    tcp_->setWriteLowWatermark(0);  // onWritable fires when everything is written
  }
}

void ClientSession::onWritable() {
  if (closed_) {
    return;
  }
  if (watcher_) [[unlikely]] {
    pumpWatch();
  }
  syncOutput();
  if ((read_eof_ || draining_) && fifo_.empty() && tcp_->output().empty()) {
    close();
    return;
  }
  // Every reply written: the moment to close a client that is handing over, before it sends
  // more (it has not seen these replies yet).
  if (closeIfHandedOver()) {
    return;
  }
  if (!reading_) {
    updateReading();
    if (reading_ && tcp_->input().size() > 0) {
      processInput();
    }
  }
}

void ClientSession::beginDrain() {
  draining_ = true;
  updateReading();
  if (fifo_.empty() && tcp_ && tcp_->output().empty()) {
    close();
  }
}

void ClientSession::beginHandover() {
  handing_over_ = true;
  closeIfHandedOver();
}

bool ClientSession::closeIfHandedOver() {
  if (!handing_over_ || closed_ || in_process_ || !tcp_ || !fifo_.empty() ||
      !tcp_->output().empty() || tcp_->input().size() > 0 || tcp_->hasUnreadInput()) {
    return false;
  }
  close();
  return true;
}

void ClientSession::onClosed(net::CloseReason reason, int error) {
  if (closed_) {
    return;
  }
  if (reason == net::CloseReason::Eof) {
    // The client finished sending; answer what it already sent, then close.
    read_eof_ = true;
    reading_ = false;
    if (fifo_.empty() && tcp_->output().empty()) {
      close();
    }
    return;
  }
  if (tcp_ && tcp_->handshakeTimedOut()) {
    // Connected and sent part of a handshake, or nothing, and stopped: it would hold its
    // client_connections slot and OpenSSL's buffers for ever.
    stats::bump(worker_.counters().client_tls_handshake_timeouts);
    MCRING_LOG_LIMITED(Info, "client tls handshake",
                       "client %llu: TLS handshake not finished within %u ms "
                       "(tls_handshake_timeout), closing",
                       static_cast<unsigned long long>(id_),
                       pool_->config().tls_handshake_timeout_ms);
  } else if (tcp_ && tcp_->isTls() && !tcp_->tlsError().empty()) {
    // A plaintext client on a TLS listener, a refused certificate, a broken record: only this
    // connection ends.
    stats::bump(worker_.counters().client_tls_failures);
    MCRING_LOG_LIMITED(Info, "client tls", "client %llu: TLS: %s, closing",
                       static_cast<unsigned long long>(id_), tcp_->tlsError().c_str());
  }
  close();
}

// The pool's client_connections slot is free once the socket is closed, not when the session
// object is reaped later: a client that reconnects at once must not be refused.
void ClientSession::releaseSlot() {
  if (open_count_) {
    open_count_->fetch_sub(1, std::memory_order_relaxed);
    open_count_.reset();
  }
}

bool ClientSession::closeIfIdle(uint64_t now_ms) {
  const uint32_t timeout_ms = pool_->config().client_idle_timeout_ms;
  if (timeout_ms == 0 || closed_ || draining_ || closing_) {
    idle_since_ms_ = 0;
    return false;
  }
  // The clock restarts at each sweep that finds the client had something going since the last
  // one, so it is closed between timeout_ms and timeout_ms plus two sweep periods after it.
  const bool busy = !fifo_.empty() || tcp_->output().size() != 0 || requests_ != idle_requests_ ||
                    watcher_ != nullptr;
  idle_requests_ = requests_;
  if (busy || idle_since_ms_ == 0) {
    idle_since_ms_ = now_ms;
    return false;
  }
  if (now_ms - idle_since_ms_ < timeout_ms) {
    return false;
  }
  stats::bump(worker_.counters().client_idle_closed);
  MCRING_LOG(Info, "client %llu: closed after %u ms idle (client_idle_timeout)",
             static_cast<unsigned long long>(id_), timeout_ms);
  close();
  return true;
}

bool ClientSession::closeIfRequestStalled(uint64_t now_ms) {
  const uint32_t timeout_ms = pool_->config().client_request_timeout_ms;
  // Part of a request is here (its line without the newline, or its line and some of its data
  // block) or still to come (the rest of a refused data block being discarded), and mcring is
  // reading: only the client can finish it. After a loop pass, input left while reading is
  // always the front of one unfinished request.
  const bool partial = timeout_ms != 0 && !closed_ && !draining_ && !closing_ && !read_eof_ &&
                       reading_ && !waiting_input_ &&
                       (tcp_->input().size() != 0 || framer_.discardPending() != 0 ||
                        binary_framer_.discardPending() != 0);
  if (!partial) {
    partial_since_ms_ = 0;
    return false;
  }
  // A request read since the last sweep means the partial one now is another, started since.
  if (partial_since_ms_ == 0 || partial_requests_ != requests_) {
    partial_since_ms_ = now_ms;
    partial_requests_ = requests_;
    return false;
  }
  if (now_ms - partial_since_ms_ < timeout_ms) {
    return false;
  }
  stats::bump(worker_.counters().client_request_timeout_closed);
  MCRING_LOG(Info,
             "client %llu: closed: sent part of a request (%zu bytes) and not the rest "
             "within %u ms (client_request_timeout)",
             static_cast<unsigned long long>(id_), tcp_->input().size(), timeout_ms);
  close();
  return true;
}

void ClientSession::close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  endWatch();
  tcp_.reset();
  syncOutput();  // no output any more: gives its charge back
  releaseSlot();
  dropFifo();
  releaseInput();
  worker_.retire(this);
}

// Requests still owed by backends lose their session (their units are dropped as they arrive)
// and give back the memory they held now, not when recycled.
void ClientSession::dropFifo() {
  for (PendingRequest* r : fifo_) {
    releaseHeld(*r);
    r->reply.drain(r->reply.size());
    for (uint32_t f = 0; f < r->fragment_count; ++f) {
      r->fragments[f].values.drain(r->fragments[f].values.size());
    }
    r->session = nullptr;
    worker_.requests().release(r);
  }
  fifo_.clear();
}

}  // namespace mcring::core
