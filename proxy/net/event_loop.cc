// EventLoop, Timer, SignalWatcher over libevent.
#include "proxy/net/event_loop.h"

#include <event2/event.h>
#include <event2/thread.h>

#include <cstdlib>

namespace mcring::net {

void initThreading() { evthread_use_pthreads(); }

EventLoop::EventLoop() {
  base_ = event_base_new();
  if (base_ == nullptr) {
    std::abort();
  }
  // Never added: event_active() from another thread runs it (libevent's locking is on).
  wakeup_ = event_new(base_, -1, EV_PERSIST, &EventLoop::onPosted, this);
}

EventLoop::~EventLoop() {
  event_free(wakeup_);
  event_base_free(base_);
}

// A worker with no connections must keep waiting for posted work.
void EventLoop::run() { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); }
void EventLoop::stop() { event_base_loopbreak(base_); }

void EventLoop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    posted_.push_back(std::move(fn));
  }
  event_active(wakeup_, EV_READ, 0);
}

void EventLoop::onPosted(int, short, void* arg) {
  auto* self = static_cast<EventLoop*>(arg);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    work.swap(self->posted_);
  }
  for (auto& fn : work) {
    fn();
  }
}

Timer::Timer(EventLoop& loop, std::function<void()> fn) : fn_(std::move(fn)) {
  ev_ = event_new(loop.raw(), -1, 0, &Timer::onFire, this);
}
Timer::~Timer() { event_free(ev_); }

void Timer::start(uint64_t ms, bool periodic) {
  event_del(ev_);
  event_assign(ev_, event_get_base(ev_), -1, periodic ? EV_PERSIST : 0, &Timer::onFire, this);
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  event_add(ev_, &tv);
}
void Timer::stop() { event_del(ev_); }
bool Timer::pending() const { return event_pending(ev_, EV_TIMEOUT, nullptr) != 0; }
void Timer::onFire(int, short, void* arg) { static_cast<Timer*>(arg)->fn_(); }

SignalWatcher::SignalWatcher(EventLoop& loop, int signo, std::function<void()> fn)
    : fn_(std::move(fn)) {
  ev_ = evsignal_new(loop.raw(), signo, &SignalWatcher::onSignal, this);
  event_add(ev_, nullptr);
}
SignalWatcher::~SignalWatcher() { event_free(ev_); }
void SignalWatcher::onSignal(int, short, void* arg) { static_cast<SignalWatcher*>(arg)->fn_(); }

}  // namespace mcring::net

namespace mcring::net {

FdWatcher::FdWatcher(EventLoop& loop, int fd, std::function<void()> fn) : fn_(std::move(fn)) {
  ev_ = event_new(loop.raw(), fd, EV_READ | EV_PERSIST, &FdWatcher::onReady, this);
  event_add(ev_, nullptr);
}
FdWatcher::~FdWatcher() { event_free(ev_); }
void FdWatcher::onReady(int, short, void* arg) { static_cast<FdWatcher*>(arg)->fn_(); }

}  // namespace mcring::net
