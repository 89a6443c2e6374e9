// EventLoop, Timer, SignalWatcher over libevent.
#include "proxy/net/event_loop.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "proxy/net/chunk_pool.h"
#include "proxy/net/io_batch.h"
#include "proxy/net/libevent_log.h"
#include "proxy/net/tcp_connection.h"

namespace mcring::net {

void initThreading() {
  routeLibeventLog();
  installChunkPool();
  evthread_use_pthreads();
}

void setAllocator(void* (*malloc_fn)(size_t), void* (*realloc_fn)(void*, size_t),
                  void (*free_fn)(void*)) {
  const UpstreamAllocator upstream{malloc_fn, realloc_fn, free_fn};
  installChunkPool(&upstream);
}

EventLoop::EventLoop() {
  // Each base is only ever touched by its own thread (post() crosses threads with an eventfd),
  // so it needs none of libevent's locks.
  event_config* cfg = event_config_new();
  if (cfg == nullptr) {
    std::abort();
  }
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (base_ == nullptr) {
    std::abort();
  }
  wakeup_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wakeup_fd_ < 0) {
    std::abort();
  }
  wakeup_ = event_new(base_, wakeup_fd_, EV_READ | EV_PERSIST, &EventLoop::onPosted, this);
  event_add(wakeup_, nullptr);
  // Never added: activated when a connection has output to write; it runs after the events
  // already active in this iteration (same priority, queued behind them).
  flush_ = event_new(base_, -1, 0, &EventLoop::onFlush, this);
  // Likewise, activated by the first plain socket found readable in a pass: it runs after the
  // pass's readiness callbacks, and before the flush its reads lead to.
  read_batch_ = event_new(base_, -1, 0, &EventLoop::onReadBatch, this);
}

EventLoop::~EventLoop() {
  event_free(read_batch_);
  event_free(flush_);
  event_free(wakeup_);
  ::close(wakeup_fd_);
  event_base_free(base_);
}

// A worker with no connections must keep waiting for posted work.
void EventLoop::run() {
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
}

void EventLoop::runPending() {
  event_base_loop(base_, EVLOOP_NONBLOCK);
}

void EventLoop::stop() {
  std::thread::id owner = owner_.load(std::memory_order_relaxed);
  if (owner == std::thread::id() || owner == std::this_thread::get_id()) {
    event_base_loopbreak(base_);
  } else {
    post([this] { event_base_loopbreak(base_); });
  }
}

void EventLoop::post(std::function<void()> fn) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake = posted_.empty();
    posted_.push_back(std::move(fn));
  }
  if (wake) {
    uint64_t one = 1;
    ssize_t n;
    do {
      n = ::write(wakeup_fd_, &one, sizeof(one));
    } while (n < 0 && errno == EINTR);
  }
}

void EventLoop::onPosted(int fd, short, void* arg) {
  auto* self = static_cast<EventLoop*>(arg);
  uint64_t count;
  ssize_t n;
  do {
    n = ::read(fd, &count, sizeof(count));
  } while (n < 0 && errno == EINTR);
  std::vector<std::function<void()>> work;
  {
    std::lock_guard<std::mutex> lock(self->mutex_);
    work.swap(self->posted_);
  }
  for (auto& fn : work) {
    fn();
  }
}

void EventLoop::scheduleFlush(TcpConnection* conn) {
  flush_queue_.push_back(conn);
  if (!flush_active_) {
    flush_active_ = true;
    event_active(flush_, EV_TIMEOUT, 0);
  }
}

void EventLoop::cancelFlush(TcpConnection* conn) {
  for (auto& c : flush_queue_) {
    if (c == conn) {
      c = nullptr;
      return;
    }
  }
}

bool EventLoop::enableIoBatching(std::string* why) {
  if (IoBatch::open(why) == nullptr) {
    return false;
  }
  batch_io_ = true;
  return true;
}

bool EventLoop::haveBatch() {
  if (batch_ == nullptr) {
    batch_ = IoBatch::open(nullptr);
    if (batch_ == nullptr) {
      batch_io_ = false;  // refused on this thread after all: a call per connection
      return false;
    }
  }
  return true;
}

void EventLoop::sendBatched(size_t from, size_t to) {
  if (!haveBatch()) {
    return;
  }
  IoBatch& batch = *batch_;
  for (size_t i = from; i < to && !batch.full(); ++i) {
    TcpConnection* c = flush_queue_[i];
    if (c != nullptr && c->prepareBatchedSend(batch)) {
      flush_queue_[i] = nullptr;
      batched_.push_back(c);
    }
  }
  batched_sends_ += batch.size();
  batch.run();
  // A result's handler may destroy connections later in the batch (they leave a null) or
  // queue more output (written in this pass, after the batch).
  for (size_t k = 0; k < batched_.size(); ++k) {
    TcpConnection* c = batched_[k];
    if (c != nullptr) {
      batched_[k] = nullptr;
      c->completeBatchedSend(batch.results()[k]);
    }
  }
  batched_.clear();
  dropBrokenBatch();
}

void EventLoop::dropBrokenBatch() {
  if (!batch_->usable()) {
    batch_.reset();
    batch_io_ = false;
  }
}

void EventLoop::queueRead(TcpConnection* conn) {
  conn->in_read_batch_ = true;
  read_queue_.push_back(conn);
  if (!read_batch_active_) {
    read_batch_active_ = true;
    event_active(read_batch_, EV_TIMEOUT, 0);
  }
}

void EventLoop::cancelBatched(TcpConnection* conn) {
  for (auto* list : {&read_queue_, &reading_, &batched_}) {
    for (auto& c : *list) {
      if (c == conn) {
        c = nullptr;
      }
    }
  }
}

void EventLoop::onReadBatch(int, short, void* arg) {
  static_cast<EventLoop*>(arg)->readBatched();
}

void EventLoop::readBatched() {
  read_batch_active_ = false;
  reading_.swap(read_queue_);
  // Three steps, so that no handler runs while a reservation in some input is open: receive
  // on every socket at once, put each one's bytes in its input, then let each go on (its
  // handler, EOF, more reads if its room was filled). One socket alone gains nothing from a
  // submission.
  if (reading_.size() >= 2 && haveBatch()) {
    IoBatch& batch = *batch_;
    for (auto& c : reading_) {
      if (c != nullptr && !batch.full() && c->prepareBatchedRead(batch)) {
        batched_.push_back(c);
        c = nullptr;
      }
    }
    batched_reads_ += batch.size();
    batch.run();
    for (size_t k = 0; k < batched_.size(); ++k) {
      batched_[k]->commitBatchedRead(batch.results()[k]);
    }
    for (size_t k = 0; k < batched_.size(); ++k) {
      TcpConnection* c = batched_[k];
      if (c != nullptr) {
        batched_[k] = nullptr;
        c->finishBatchedRead();
      }
    }
    batched_.clear();
    dropBrokenBatch();
  }
  // The rest reads by itself (not batchable now, past the batch's size, or alone).
  for (auto& c : reading_) {
    if (c != nullptr) {
      TcpConnection* conn = c;
      c = nullptr;
      conn->readQueued();
    }
  }
  reading_.clear();
}

void EventLoop::onFlush(int, short, void* arg) {
  auto* self = static_cast<EventLoop*>(arg);
  std::vector<TcpConnection*>& queue = self->flush_queue_;
  // Connections queued while flushing (a write callback produced output elsewhere) are
  // written in this same pass. One connection alone gains nothing from a submission.
  size_t i = 0;
  while (i < queue.size()) {
    const size_t end = queue.size();
    if (self->batch_io_ && end - i >= 2) {
      self->sendBatched(i, end);
    }
    for (; i < end; ++i) {
      TcpConnection* c = queue[i];
      if (c != nullptr) {
        queue[i] = nullptr;
        c->flushQueued();
      }
    }
  }
  queue.clear();
  self->flush_active_ = false;
}

Timer::Timer(EventLoop& loop, std::function<void()> fn) : fn_(std::move(fn)) {
  ev_ = event_new(loop.raw(), -1, 0, &Timer::onFire, this);
}
Timer::~Timer() {
  event_free(ev_);
}

void Timer::start(uint64_t ms, bool periodic) {
  event_del(ev_);
  event_assign(ev_, event_get_base(ev_), -1, periodic ? EV_PERSIST : 0, &Timer::onFire, this);
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  event_add(ev_, &tv);
}
void Timer::stop() {
  event_del(ev_);
}
bool Timer::pending() const {
  return event_pending(ev_, EV_TIMEOUT, nullptr) != 0;
}
void Timer::onFire(int, short, void* arg) {
  static_cast<Timer*>(arg)->fn_();
}

SignalWatcher::SignalWatcher(EventLoop& loop, int signo, std::function<void()> fn)
    : fn_(std::move(fn)) {
  ev_ = evsignal_new(loop.raw(), signo, &SignalWatcher::onSignal, this);
  event_add(ev_, nullptr);
}
SignalWatcher::~SignalWatcher() {
  event_free(ev_);
}
void SignalWatcher::onSignal(int, short, void* arg) {
  static_cast<SignalWatcher*>(arg)->fn_();
}

}  // namespace mcring::net

namespace mcring::net {

FdWatcher::FdWatcher(EventLoop& loop, int fd, std::function<void()> fn) : fn_(std::move(fn)) {
  ev_ = event_new(loop.raw(), fd, EV_READ | EV_PERSIST, &FdWatcher::onReady, this);
  event_add(ev_, nullptr);
}
FdWatcher::~FdWatcher() {
  event_free(ev_);
}
void FdWatcher::stop() {
  event_del(ev_);
}
void FdWatcher::onReady(int, short, void* arg) {
  static_cast<FdWatcher*>(arg)->fn_();
}

}  // namespace mcring::net
