// AcceptBackoff over evconnlistener's error callback.
#include "proxy/net/accept_backoff.h"

#include <event2/listener.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "proxy/common/log.h"
#include "proxy/net/event_loop.h"

namespace mcring::net {
namespace {

std::mutex g_registry_mutex;
std::map<evconnlistener*, AcceptBackoff*>& registry() {
  static std::map<evconnlistener*, AcceptBackoff*> r;
  return r;
}

}  // namespace

AcceptBackoff::AcceptBackoff(EventLoop& loop, evconnlistener* listener, std::string label)
    : listener_(listener), label_(std::move(label)) {
  timer_ = std::make_unique<Timer>(loop, [this] { retry(); });
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    registry()[listener_] = this;
  }
  evconnlistener_set_error_cb(listener_, &AcceptBackoff::onError);
}

AcceptBackoff::~AcceptBackoff() {
  evconnlistener_set_error_cb(listener_, nullptr);
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  registry().erase(listener_);
}

void AcceptBackoff::onError(evconnlistener* listener, void*) {
  const int err = errno;  // accept()'s, before anything else can change it
  AcceptBackoff* self = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    auto it = registry().find(listener);
    self = it != registry().end() ? it->second : nullptr;
  }
  if (self != nullptr) {
    self->failed(err);
  } else {
    // Not ours (cannot happen): still never spin on it.
    evconnlistener_disable(listener);
  }
}

void AcceptBackoff::failed(int err) {
  evconnlistener_disable(listener_);
  pause_ms_ = pause_ms_ == 0 ? kFirstPauseMs : std::min(pause_ms_ * 2, kMaxPauseMs);
  backing_off_ = true;
  timer_->start(pause_ms_);
  MCRING_LOG_LIMITED(Warn, "accept failed", "%s: accept failed: %s; not accepting for %u ms",
                     label_.c_str(), std::strerror(err), pause_ms_);
  if (on_error_) {
    on_error_(err);
  }
}

void AcceptBackoff::retry() {
  backing_off_ = false;
  if (!owner_paused_) {
    evconnlistener_enable(listener_);
  }
}

void AcceptBackoff::pause() {
  owner_paused_ = true;
  evconnlistener_disable(listener_);
}

void AcceptBackoff::resume() {
  owner_paused_ = false;
  if (!backing_off_) {
    evconnlistener_enable(listener_);
  }
}

}  // namespace mcring::net
