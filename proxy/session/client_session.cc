// ClientSession: request parsing, dispatch, in-order reply flushing and back-pressure.
#include "proxy/session/client_session.h"

#include <algorithm>
#include <iterator>

#include "mcring_version.h"
#include "proxy/backend/backend_server.h"
#include "proxy/common/log.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/warmup.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_parser.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;
using protocol::CommandEffect;
using protocol::ParseStatus;
using protocol::ReplyKind;

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

ClientSession::ClientSession(SessionContext& worker, PoolRuntime& pool, uint64_t id,
                             std::shared_ptr<std::atomic<uint32_t>> open_count)
    : worker_(worker),
      pool_(&pool),
      id_(id),
      open_count_(std::move(open_count)),
      framer_(pool.parser) {}

ClientSession::~ClientSession() {
  releaseSlot();
  // Requests still owed by backends lose their session; they are recycled when answered.
  dropFifo();
  releaseInput();
}

bool ClientSession::attach(int fd) {
  tcp_ = net::TcpConnection::adopt(worker_.loop(), fd, this, pool_->config().tcpkeepalive);
  if (!tcp_) {
    return false;
  }
  // A request larger than this needs a reservation first (wantInput).
  tcp_->setReadHighWatermark(kInputAllowance);
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

size_t ClientSession::consumedLength() const {
  return req_.line_length + (req_.has_data ? req_.value_length + 2 : 0);
}

void ClientSession::processInput() {
  if (in_process_) {
    return;
  }
  in_process_ = true;
  net::Buffer& in = tcp_->input();
  while (!closed_ && !closing_ && !draining_ && !throttled()) {
    const protocol::RequestFrame frame = framer_.next(in, req_);
    if (frame.kind == protocol::RequestFrameKind::NeedMore) {
      wantInput(frame.length);
      break;
    }
    if (frame.kind == protocol::RequestFrameKind::Discard) {
      in.drain(frame.length);
      continue;
    }
    if (frame.kind == protocol::RequestFrameKind::Rejected) {
      if (req_.error == protocol::RequestError::TooLarge &&
          (req_.command == Command::Set || req_.command == Command::MetaSet) &&
          !req_.keys.empty()) {
        // memcached unlinks the old value when a set is too large (so no stale value
        // survives a write the client believes failed); do the same on the key's backend.
        invalidateKey(frame.line);
      }
      in.drain(frame.length);
      rejectRequest(req_);
      continue;
    }
    stats::bump(worker_.counters().bytes_read, frame.length);
    dispatch(frame.line);  // forwards or drops exactly frame.length bytes
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
  if (need > input_reserved_) {
    if (!pool_->inputs_budget.tryCharge(need - input_reserved_)) {
      // No memory for it now: read no more of this client until a reservation frees.
      if (!waiting_input_) {
        waiting_input_ = true;
        pool_->input_waiters.push_back(this);
        stats::bump(worker_.counters().client_input_waits);
      }
      return;
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
  pool_->inputs_budget.release(input_reserved_);
  input_reserved_ = 0;
  if (tcp_) {
    tcp_->setReadHighWatermark(kInputAllowance);
  }
  if (!pool_->input_waiters.empty()) {
    worker_.scheduleInputWake();
  }
}

void ClientSession::onInputBudget() {
  waiting_input_ = false;
  if (!closed_ && !in_process_) {
    processInput();
  }
}

PendingRequest* ClientSession::newRequest() {
  PendingRequest* r = worker_.requests().acquire();
  r->session = this;
  r->refs = 1;
  r->fragments_left = 1;
  r->command = req_.command;
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
  PendingRequest* r = newRequest();
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

void ClientSession::invalidateKey(std::string_view line) {
  BackendServer* server = pool_->by_index[pool_->route(req_.routingKey(line, 0))];
  BackendConnection* conn = server->connectionFor(id_);
  if (conn == nullptr) {
    return;
  }
  // Its reply (HD or NF) is nobody's business: a noreply request with no FIFO slot of its own
  // would break ordering, so it rides in a detached request that is never flushed.
  PendingRequest* r = worker_.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->noreply = true;
  net::Buffer& out = conn->output();
  out.append("md ");
  out.append(req_.keys[0].in(line));
  out.append(req_.key_base64 ? " b\r\n" : "\r\n");
  conn->expect(r, 0, Delivery::Direct, Expect::OneUnit, req_.keys[0].length + 5);
  worker_.requests().release(r);  // the backend's reference keeps it until the reply
}

void ClientSession::dispatch(std::string_view line) {
  switch (protocol::commandClass(req_.command)) {
    case CommandClass::Retrieval:
      dispatchRetrieval(line);
      return;
    case CommandClass::Storage:
    case CommandClass::Keyed:
    case CommandClass::Meta:
      dispatchKeyed(line);
      return;
    case CommandClass::MetaNoop: {
      PendingRequest* r = newRequest();
      tcp_->input().drain(req_.line_length);
      completeWith(r, protocol::kMetaNoopLine);
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

void ClientSession::dispatchKeyed(std::string_view line) {
  auto& counters = worker_.counters();
  stats::bump(counters.*kWorkerCounterOf[effectIndex(req_.command)]);
  bool meta = protocol::commandClass(req_.command) == CommandClass::Meta;
  if (meta) {
    stats::bump(counters.cmd_meta);
  }
  PendingRequest* r = newRequest();
  // Meta q is left for the backend to apply (which replies it hides depends on the item: an
  // autovivified `ma` still answers HD); an `mn` after it tells where its reply ends.
  bool quiet_meta = meta && req_.noreply;
  if (!meta) {
    r->noreply = req_.noreply;
  }
  net::Buffer& in = tcp_->input();
  std::string_view key = req_.routingKey(line, 0);
  BackendServer* server = pool_->by_index[pool_->route(key)];
  countForBackend(*server, key);
  BackendConnection* conn = server->connectionFor(id_);
  if (conn == nullptr) {
    failUnavailable(r, *server, consumedLength());
    return;
  }
  if (pool_->warmup) {
    if (BackendServer* prev = pool_->warmup->previousOwner(key, server)) {
      if (req_.command == Command::MetaGet) {
        // A miss may take a second hop (BackendConnection asks launchMetaWarmup on EN).
        std::string_view args = req_.args.in(line);
        size_t key_end = req_.keys[0].offset + req_.keys[0].length - req_.args.offset;
        std::string_view flags = args.substr(std::min(key_end, args.size()));
        if (!quiet_meta && !req_.key_base64 && metaFlagsWarmable(flags)) {
          r->warm = true;
          r->line.assign(key);
          r->key_offsets.assign({0, static_cast<uint32_t>(key.size())});
          r->key_count = 1;
          r->meta_flags.assign(flags);
        }
      } else if (protocol::commandClass(req_.command) == CommandClass::Storage ||
                 req_.command == Command::Delete || req_.command == Command::MetaDelete ||
                 req_.command == Command::MetaSet || req_.command == Command::MetaArithmetic ||
                 req_.command == Command::Incr || req_.command == Command::Decr) {
        invalidatePrevious(r, *prev, line);
      }
    }
  }
  net::Buffer& out = conn->output();
  uint64_t sent = consumedLength();
  if (quiet_meta) {
    in.moveTo(out, consumedLength());
    out.append("mn\r\n");
    conn->expect(r, 0, Delivery::Direct, Expect::UntilNoop, sent + 4);
    return;
  }
  if (req_.noreply_token.empty()) {
    in.moveTo(out, consumedLength());
  } else {
    sent -= req_.noreply_token.length;
    // The proxy always reads the backend's reply (to stay in sync) and drops it itself.
    const protocol::Span& t = req_.noreply_token;
    out.append(line.substr(0, t.offset));
    out.append(line.substr(t.offset + t.length));
    in.drain(req_.line_length);
    if (req_.has_data) {
      in.moveTo(out, req_.value_length + 2);
    }
  }
  conn->expect(r, 0, Delivery::Direct, Expect::OneUnit, sent);
}

// Warm migration: a write or delete of a moved key also deletes the previous server's copy
// (so that neither a later warm-up fetch nor a rollback of the change brings the old value
// back), and cancels copies of fetches of it in flight. The request's reply waits for it.
void ClientSession::invalidatePrevious(PendingRequest* r, BackendServer& prev,
                                       std::string_view line) {
  worker_.warmup().cancelCopies(req_.routingKey(line, 0));
  r->rewrites = true;  // a delete's NOT_FOUND may become DELETED (BackendConnection::finish)
  BackendConnection* conn = prev.connectionFor(id_);
  if (conn == nullptr) {
    return;  // unreachable: it serves nobody, and a fetch from it fails too
  }
  net::Buffer& out = conn->output();
  out.append("md ");
  out.append(req_.keys[0].in(line));
  out.append(req_.key_base64 ? " b\r\n" : "\r\n");
  ++r->fragments_left;
  stats::bump(worker_.counters().warmup_invalidations);
  conn->expect(r, 0, Delivery::Invalidate, Expect::OneUnit, req_.keys[0].length + 5);
}

// Per-backend accounting of one keyed request: command kind and the key's distinct-key sketch.
void ClientSession::countForBackend(BackendServer& server, std::string_view key) {
  stats::BackendStats& bs = server.stats();
  stats::bump(bs.*kBackendCounterOf[effectIndex(req_.command)]);
  bs.keys.addKey(key);
}

// The key's server is backing off after a failure: discard the request's `bytes` and answer
// with that failure at once (nothing for classic noreply), without a connect attempt.
void ClientSession::failUnavailable(PendingRequest* r, BackendServer& server, uint64_t bytes) {
  tcp_->input().drain(bytes);
  stats::bump(worker_.counters().server_errors);
  server.countFailure(server.lastFailure());
  completeWith(r, r->noreply ? std::string_view() : backendFailureReply(server.lastFailure()));
}

void ClientSession::dispatchRetrieval(std::string_view line) {
  auto& counters = worker_.counters();
  size_t n = req_.keys.size();
  stats::bump(counters.cmd_get, n);
  if (req_.command == Command::Gat || req_.command == Command::Gats) {
    stats::bump(counters.cmd_touch);
  }
  routes_.resize(n);
  bool single = true;
  for (size_t i = 0; i < n; ++i) {
    routes_[i] = pool_->route(req_.keys[i].in(line));
    single = single && routes_[i] == routes_[0];
  }
  bool warm = false;
  if (pool_->warmup) {
    for (size_t i = 0; i < n && !warm; ++i) {
      warm = pool_->warmup->previousOwner(req_.keys[i].in(line), pool_->by_index[routes_[i]]) !=
             nullptr;
    }
  }
  if (!single || warm || coalescing()) {
    // A moved key's miss takes a second hop: that needs the per-key bookkeeping of a split get,
    // and so does a get whose keys share a line with other requests' (coalesce_gets).
    dispatchMultiget(line, warm);
    return;
  }
  // Every key lives on one backend: forward the line as-is and pass the reply through.
  PendingRequest* r = newRequest();
  r->key_count = static_cast<uint32_t>(n);
  BackendServer* server = pool_->by_index[routes_[0]];
  for (size_t i = 0; i < n; ++i) {
    countForBackend(*server, req_.keys[i].in(line));
  }
  BackendConnection* conn = server->connectionFor(id_);
  if (conn == nullptr) {
    failUnavailable(r, *server, req_.line_length);
    return;
  }
  tcp_->input().moveTo(conn->output(), req_.line_length);
  conn->expect(r, 0, Delivery::Direct, Expect::Retrieval, req_.line_length);
}

void ClientSession::dispatchMultiget(std::string_view line, bool warm) {
  auto& counters = worker_.counters();
  PendingRequest* r = newRequest();
  r->shape = Shape::Multiget;
  r->warm = warm;
  r->exptime = req_.exptime;
  size_t n = req_.keys.size();
  r->key_count = static_cast<uint32_t>(n);
  r->line.assign(line);
  r->key_offsets.resize(2 * n);
  r->key_fragment.resize(n);
  r->key_hit_length.assign(n, 0);
  size_t servers = pool_->by_index.size();
  fragment_of_.assign(servers, -1);
  uint32_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    r->key_offsets[2 * i] = req_.keys[i].offset;
    r->key_offsets[2 * i + 1] = req_.keys[i].length;
    uint32_t s = routes_[i];
    if (fragment_of_[s] < 0) {
      fragment_of_[s] = static_cast<int32_t>(count);
      if (r->fragments.size() <= count) {
        r->fragments.emplace_back();
      }
      r->fragments[count].server = s;
      ++count;
    }
    uint32_t f = static_cast<uint32_t>(fragment_of_[s]);
    countForBackend(*pool_->by_index[s], req_.keys[i].in(line));
    r->key_fragment[i] = f;
    r->fragments[f].key_indices.push_back(static_cast<uint32_t>(i));
  }
  r->fragment_count = count;
  r->fragments_left = count;
  tcp_->input().drain(req_.line_length);

  std::string_view name = protocol::commandName(req_.command);
  std::string_view exptime = req_.exptime.in(r->line);
  // Send every fragment first, then account for immediate failures, so that a request that
  // completes synchronously is never touched again here.
  uint32_t failed_now = 0;
  for (uint32_t f = 0; f < count; ++f) {
    Fragment& frag = r->fragments[f];
    BackendServer* server = pool_->by_index[frag.server];
    BackendConnection* conn = server->connectionFor(id_);
    if (conn == nullptr) {
      frag.done = true;
      server->countFailure(server->lastFailure());
      if (!r->failed) {
        r->failed = true;
        r->error_line.assign(backendFailureReply(server->lastFailure()));
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
    stats::bump(counters.server_errors);
    r->fragments_left -= failed_now;
    if (r->fragments_left == 0) {
      assembleMultiget(*r, counters);
      r->complete = true;
      onRequestComplete(r);
    }
  }
}

void ClientSession::dispatchFlushAll(std::string_view line) {
  stats::bump(worker_.counters().cmd_flush);
  PendingRequest* r = newRequest();
  r->shape = Shape::Broadcast;
  r->noreply = req_.noreply;
  net::Buffer& in = tcp_->input();
  if (!pool_->config().allow_flush_all) {
    in.drain(req_.line_length);
    completeWith(r, protocol::kFlushAllRefusedLine);
    return;
  }
  const protocol::Span& t = req_.noreply_token;
  std::string forward(line.substr(0, t.empty() ? line.size() : t.offset));
  if (!t.empty()) {
    forward.append(line.substr(t.offset + t.length));
  }
  in.drain(req_.line_length);
  uint32_t count = static_cast<uint32_t>(pool_->by_index.size());
  r->fragments_left = count;
  uint32_t failed_now = 0;
  for (uint32_t s = 0; s < count; ++s) {
    BackendServer* server = pool_->by_index[s];
    BackendConnection* conn = server->connectionFor(id_);
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
      completeWith(r, r->error_line);
    }
  }
}

void ClientSession::answerLocal(std::string_view line) {
  PendingRequest* r = newRequest();
  // Build the reply while `line` (a view into the input buffer) is still valid.
  std::string out;
  switch (req_.command) {
    case Command::Version:
      out = "VERSION " MCRING_PROTOCOL_VERSION "\r\n";
      break;
    case Command::Verbosity:
      out = req_.noreply ? "" : protocol::kOkLine;
      break;
    case Command::Quit:
      r->close_after = true;
      closing_ = true;
      break;
    case Command::Stats:
      if (!worker_.reporter().render(req_.args.in(line), &out)) {
        stats::bump(worker_.counters().client_errors);
      }
      break;
    default:
      out = "ERROR\r\n";
      break;
  }
  tcp_->input().drain(req_.line_length);
  completeWith(r, out);
}

void ClientSession::onRequestComplete(PendingRequest* r) {
  if (!fifo_.empty() && fifo_.front() == r) {
    flush();
  }
}

bool ClientSession::streamable(const PendingRequest& r) const {
  switch (r.shape) {
    case Shape::Direct:
      return !r.warm && !r.rewrites;
    case Shape::Multiget:
      // A lone fragment's units are the reply in key order (multigetValueSink).
      return r.fragment_count == 1 && !r.warm;
    case Shape::Broadcast:
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
  releaseHeld(r);
  if (!r.reply.empty()) {
    stats::bump(worker_.counters().bytes_written, r.reply.size());
    r.reply.moveAllTo(tcp_->output());
  }
  r.streaming = true;
  syncOutput();
  return true;
}

void ClientSession::streamReply(net::Buffer& from, uint64_t n) {
  stats::bump(worker_.counters().bytes_written, n);
  from.moveTo(tcp_->output(), n);
  syncOutput();
}

bool ClientSession::holdReply(PendingRequest& r, uint64_t n) {
  if (held_ + outputSize() + n > clientLimit() || !pool_->replies_budget.tryCharge(n)) {
    stats::bump(worker_.counters().client_oom_replies);
    return false;
  }
  held_ += n;
  r.held += n;
  peak_buffered_ = std::max(peak_buffered_, held_ + outputSize());
  return true;
}

void ClientSession::releaseHeld(PendingRequest& r) {
  if (r.held == 0) {
    return;
  }
  held_ -= std::min(held_, r.held);
  pool_->replies_budget.release(r.held);
  r.held = 0;
}

uint64_t ClientSession::outputSize() const {
  return tcp_ ? tcp_->output().size() : 0;
}

bool ClientSession::outputFull() const {
  return outputSize() >= clientLimit();
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

void ClientSession::closeSlowReader() {
  if (closed_) {
    return;
  }
  stats::bump(worker_.counters().client_slow_closed);
  MCRING_LOG(Info, "client %llu: closed: read nothing of %llu bytes of replies for %u ms while a "
             "backend connection waited on it",
             static_cast<unsigned long long>(id_), static_cast<unsigned long long>(outputSize()),
             kSlowReaderMs);
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
    size_t n = r->reply.size();
    stats::bump(worker_.counters().bytes_written, n);
    r->reply.moveAllTo(out);
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
  } else if ((read_eof_ || draining_) && fifo_.empty()) {
    tcp_->setWriteLowWatermark(0);  // onWritable fires when everything is written
  }
}

void ClientSession::onWritable() {
  if (closed_) {
    return;
  }
  syncOutput();
  if ((read_eof_ || draining_) && fifo_.empty() && tcp_->output().empty()) {
    close();
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
  const bool busy =
      !fifo_.empty() || tcp_->output().size() != 0 || requests_ != idle_requests_;
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

void ClientSession::close() {
  if (closed_) {
    return;
  }
  closed_ = true;
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
