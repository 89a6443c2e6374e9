// ClientSession: the watch stream (a connection that sent `watch`) and traced requests leaving
// the FIFO (to the watchers and the slow-request log). See stats/request_watch.h.
#include <sys/socket.h>

#include <algorithm>

#include "proxy/common/clock.h"
#include "proxy/common/socket_address.h"
#include "proxy/session/client_session.h"
#include "proxy/stats/slow_requests.h"

namespace mcring::core {

namespace {

stats::KeyShown keyShown(config::LogKeys k) {
  switch (k) {
    case config::LogKeys::Plain:
      return stats::KeyShown::Plain;
    case config::LogKeys::Hash:
      return stats::KeyShown::Hash;
    case config::LogKeys::None:
      return stats::KeyShown::None;
  }
  return stats::KeyShown::Hash;
}

}  // namespace

bool ClientSession::beginWatch() {
  if (watcher_ || closed_) {
    return true;
  }
  auto slot = std::make_shared<ClientSession*>(this);
  net::EventLoop& loop = worker_.loop();
  // Runs on any worker, under the hub's mutex: only posts to this session's worker, where the
  // slot tells whether the session is still there.
  watcher_ = stats::RequestWatch::instance().attach(pool_->name, [&loop, slot] {
    loop.post([slot] {
      if (*slot != nullptr) {
        (*slot)->pumpWatch();
      }
    });
  });
  if (!watcher_) {
    return false;  // too many watchers: the connection stays an ordinary one
  }
  watch_slot_ = std::move(slot);
  // What the client sent after `watch` is ignored, as in memcached (processInput drops the rest).
  tcp_->input().drain(tcp_->input().size());
  return true;
}

void ClientSession::endWatch() {
  if (!watcher_) {
    return;
  }
  stats::RequestWatch::instance().detach(watcher_);
  watcher_.reset();
  *watch_slot_ = nullptr;
  watch_slot_.reset();
}

void ClientSession::pumpWatch() {
  // The stream starts after the OK (and anything before it) is written.
  if (closed_ || !watcher_ || !fifo_.empty()) {
    return;
  }
  net::Buffer& out = tcp_->output();
  while (out.size() < kWatchOutput) {
    watch_lines_.clear();
    watcher_->take(watch_lines_);
    if (watch_lines_.empty()) {
      break;
    }
    out.append(watch_lines_);
  }
  if (out.size() >= kWatchOutput) {
    // A slow reader: its lines wait in the watcher's buffer (lost past it) until this drains.
    tcp_->setWriteLowWatermark(kWatchOutput / 2);
  }
  syncOutput();
}

const std::string& ClientSession::clientAddress() {
  if (trace_address_.empty() && tcp_) {
    common::SocketAddress peer;
    peer.length = sizeof(peer.storage);
    if (::getpeername(tcp_->fd(), reinterpret_cast<sockaddr*>(&peer.storage), &peer.length) == 0) {
      trace_address_ = peer.toString();
    }
    if (trace_address_.empty()) {
      trace_address_.push_back('?');
    }
  }
  return trace_address_;
}

void ClientSession::noteStatus(PendingRequest& r, net::Buffer& from, uint64_t n) {
  if (r.trace_status_length != 0 || n == 0) {
    return;
  }
  char head[stats::kStatusMax];
  const size_t take = std::min<uint64_t>({n, from.size(), sizeof(head)});
  from.copyOut(0, take, head);
  const std::string_view status = stats::replyStatus(std::string_view(head, take));
  std::copy(status.begin(), status.end(), r.trace_status.begin());
  r.trace_status_length = static_cast<uint8_t>(status.size());
}

void ClientSession::traceDone(PendingRequest& r) {
  const config::PoolConfig& cfg = pool_->config();
  const bool watch = cfg.allow_watch && stats::watching();
  const uint64_t elapsed_us = (common::monotonicNs() - r.start_ns) / 1000;
  const bool slow = cfg.slow_request_ms != 0 && elapsed_us > uint64_t{cfg.slow_request_ms} * 1000;
  if (!watch && !slow) {
    return;
  }
  noteStatus(r, r.reply, r.reply.size());
  stats::RequestRecord rec;
  rec.verb = protocol::commandName(r.command);
  rec.key = r.trace_key;
  rec.keys = r.trace_keys;
  rec.status = std::string_view(r.trace_status.data(), r.trace_status_length);
  rec.backend = r.trace_backend;
  rec.client = clientAddress();
  rec.route = r.trace_route;
  rec.elapsed_us = elapsed_us;
  const stats::KeyShown shown = keyShown(cfg.log_keys);
  if (watch) {
    stats::RequestWatch::instance().publish(pool_->name, rec, shown);
  }
  if (slow) {
    stats::SlowRequests::instance().record(pool_->name, cfg.slow_request_ms, rec, shown);
  }
}

}  // namespace mcring::core
