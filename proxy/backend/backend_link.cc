// BackendLink: a memcached's connections shared by the pools that name it; BackendLinks: the
// worker's table of them.
#include "proxy/backend/backend_link.h"

#include <algorithm>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/worker_context.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"

namespace mcring::core {
namespace {

// Reconnect backoff: 50 ms doubling to 1 s. Short, because until ejection (auto_eject_hosts)
// the server keeps its keys and every retry is a chance to serve them again.
constexpr uint32_t kBackoffMinMs = 50;
constexpr uint32_t kBackoffMaxMs = 1000;

}  // namespace

BackendLink::BackendLink(WorkerContext& worker, std::string identity, common::SocketAddress address,
                         LinkSettings settings)
    : worker_(worker),
      identity_(std::move(identity)),
      address_(address),
      settings_(std::move(settings)) {
  const uint32_t n = std::max<uint32_t>(1, settings_.connections);
  connections_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    connections_.push_back(std::make_unique<BackendConnection>(*this));
  }
}

BackendLink::~BackendLink() {
  // Its last server went idle (or the worker aborted it): this only closes the sockets, so the
  // worker's connection gauge comes down.
  servers_.clear();
  abortAll(BackendFailure::ConnectionClosed);
}

BackendConnection* BackendLink::connectionFor(uint64_t session_id) {
  BackendConnection* c = connections_[session_id % connections_.size()].get();
  if (c->state() == BackendConnection::State::Closed) {
    if (retry_at_ns_ != 0 && common::coarseMonotonicNs() < retry_at_ns_) {
      return nullptr;
    }
    if (!c->ensureConnected()) {
      return nullptr;
    }
  }
  return c;
}

bool BackendLink::backingOff(uint64_t session_id) const {
  const BackendConnection* c = connections_[session_id % connections_.size()].get();
  return c->state() == BackendConnection::State::Closed && retry_at_ns_ != 0 &&
         common::coarseMonotonicNs() < retry_at_ns_;
}

BackendConnection* BackendLink::anyConnected() const {
  for (const auto& c : connections_) {
    if (c->state() == BackendConnection::State::Connected) {
      return c.get();
    }
  }
  return nullptr;
}

bool BackendLink::changesInFlight() const {
  return std::any_of(connections_.begin(), connections_.end(),
                     [](const auto& c) { return c->changesInFlight(); });
}

void BackendLink::attach(BackendServer& server) {
  servers_.push_back(&server);
  // Its gauge counts the connections already open, as the others' do.
  for (const auto& c : connections_) {
    if (c->state() == BackendConnection::State::Connected) {
      stats::bump(server.stats().connections);
    }
  }
}

void BackendLink::detach(BackendServer& server) {
  servers_.erase(std::remove(servers_.begin(), servers_.end(), &server), servers_.end());
}

void BackendLink::onConnected() {
  if (backoff_ms_ != 0) {
    MCRING_LOG(Notice, "backend %s: reconnected", identity_.c_str());
  }
  backoff_ms_ = 0;
  retry_at_ns_ = 0;
}

void BackendLink::onFailure(BackendFailure why) {
  for (BackendServer* s : servers_) {
    s->onFailure(why);
  }
  backoff_ms_ = backoff_ms_ == 0 ? kBackoffMinMs : std::min(backoff_ms_ * 2, kBackoffMaxMs);
  retry_at_ns_ = common::coarseMonotonicNs() + static_cast<uint64_t>(backoff_ms_) * 1000000ULL;
}

void BackendLink::logFailure(BackendFailure why, int error, const std::string& detail) {
  for (BackendServer* s : servers_) {
    s->logFailure(why, error, detail);
  }
}

void BackendLink::countConnection(bool opened) {
  for (BackendServer* s : servers_) {
    if (opened) {
      stats::bump(s->stats().connections);
    } else {
      stats::drop(s->stats().connections);
    }
  }
}

void BackendLink::countTimeout() {
  for (BackendServer* s : servers_) {
    stats::bump(s->stats().timeouts);
  }
}

void BackendLink::startReturnFlush(BackendConnection& conn) {
  for (BackendServer* s : servers_) {
    s->startReturnFlush(conn);
  }
}

void BackendLink::abortAll(BackendFailure why) {
  for (auto& c : connections_) {
    if (c->state() != BackendConnection::State::Closed || !c->idle()) {
      c->abort(why);
    }
  }
}

std::shared_ptr<BackendLink> BackendLinks::get(WorkerContext& worker, const std::string& pool,
                                               const std::string& identity,
                                               const common::SocketAddress& address,
                                               LinkSettings settings) {
  std::string key = identity;
  key += '\n';
  key += address.toString();  // a name resolved again may now be another address
  key += '\n';
  key += std::to_string(settings.timeout_ms);
  key += '\n';
  key += std::to_string(settings.connections);
  key += '\n';
  if (settings.tls) {
    key += "tls ";
    key += pool;
  }
  key += '\n';
  key += settings.auth;
  auto& slot = links_[key];
  if (auto live = slot.lock()) {
    return live;
  }
  // Forget the links that went (a reload's removed servers), so the table stays the size of
  // what the config names.
  for (auto it = links_.begin(); it != links_.end();) {
    it = it->second.expired() && &it->second != &slot ? links_.erase(it) : std::next(it);
  }
  auto link = std::make_shared<BackendLink>(worker, identity, address, std::move(settings));
  links_[key] = link;
  return link;
}

void BackendLinks::abortAll(BackendFailure why) {
  for (auto& [key, weak] : links_) {
    if (auto link = weak.lock()) {
      link->abortAll(why);
    }
  }
}

}  // namespace mcring::core
