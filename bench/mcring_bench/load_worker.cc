// LoadWorker: phases, closed- and open-loop issuing, per-second publishing, stop and drain.
#include "bench/mcring_bench/load_worker.h"

#include <event2/event.h>

#include <algorithm>
#include <cmath>

#include "bench/mcring_bench/clock.h"

namespace mcring::bench {
namespace {

constexpr uint64_t kSecondNs = 1'000'000'000ULL;
// How often timeouts and the stop flag are checked; --timeout is honoured to this precision.
constexpr timeval kHousekeepingPeriod = {0, 10 * 1000};
// Warm-up keeps this many sets in flight per connection (or --pipeline, if deeper).
constexpr uint32_t kWarmDepth = 32;

}  // namespace

LoadWorker::LoadWorker(const LoadOptions& options, const KeySpace& keys, const KeyChooser& chooser,
                       uint32_t index, uint32_t connections, uint64_t request_quota,
                       const std::atomic<bool>* stop)
    : options_(options),
      keys_(keys),
      chooser_(chooser),
      index_(index),
      quota_(request_quota),
      stop_requested_(stop),
      rng_(options.seed * 0x2545f4914f6cdd1dULL + index) {
  // The open loop wakes at each request's scheduled time, so it needs timers finer than epoll's
  // milliseconds; the closed loop does not, and saves a timerfd re-arm per loop iteration.
  event_config* config = event_config_new();
  if (options.openLoop()) {
    event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
  }
  base_ = event_base_new_with_config(config);
  event_config_free(config);

  tick_event_ = evtimer_new(base_, &LoadWorker::onTick, this);
  deadline_event_ = evtimer_new(base_, &LoadWorker::onDeadline, this);
  drain_event_ = evtimer_new(base_, &LoadWorker::onDrain, this);
  housekeeping_event_ = event_new(base_, -1, EV_PERSIST, &LoadWorker::onHousekeeping, this);
  schedule_event_ = evtimer_new(base_, &LoadWorker::onSchedule, this);

  // Every buffer a request needs is sized here, once: the largest get line and the largest set.
  const size_t key_length = keys_.keyLength();
  const size_t get_line = 3 + options.multiget * (key_length + 1) + 2;
  const size_t set_request = 4 + key_length + 5 + 10 + 2 + options.value_max + 2;
  scratch_.resize(std::max(get_line, set_request));
  value_bytes_.resize(options.value_max);
  for (size_t i = 0; i < value_bytes_.size(); ++i) {
    value_bytes_[i] = static_cast<char>('a' + i % 26);
  }
  get_keys_.resize(options.multiget);

  const uint32_t capacity = std::max(options.pipeline, kWarmDepth);
  connections_.reserve(connections);
  for (uint32_t i = 0; i < connections; ++i) {
    connections_.push_back(std::make_unique<LoadConnection>(*this, capacity, options.multiget));
  }
  dirty_.reserve(connections);
  flushing_.reserve(connections);
}

LoadWorker::~LoadWorker() {
  connections_.clear();  // before the base their events live in
  event_free(tick_event_);
  event_free(deadline_event_);
  event_free(drain_event_);
  event_free(housekeeping_event_);
  event_free(schedule_event_);
  event_base_free(base_);
}

void LoadWorker::warm(uint64_t first, uint64_t last, uint64_t deadline_ns) {
  phase_ = Phase::Warm;
  sink_ = &warm_;
  next_warm_ = first;
  warm_last_ = last;
  const uint64_t now = monotonicNs();
  start_ns_ = now;
  deadline_ns_ = deadline_ns;
  for (auto& c : connections_) {
    c->setDepth(std::max(options_.pipeline, kWarmDepth));
  }
  runPhase(now);
}

void LoadWorker::measure(uint64_t start_ns, const Publish& publish) {
  phase_ = Phase::Measure;
  sink_ = &interval_;
  publish_ = &publish;
  start_ns_ = start_ns;
  deadline_ns_ = start_ns + static_cast<uint64_t>(options_.duration_s * 1e9);
  issued_ = 0;
  second_ = 1;
  unsent_ = 0;
  for (auto& c : connections_) {
    c->setDepth(options_.pipeline);
  }
  const uint64_t now = monotonicNs();
  armTick(now);
  runPhase(now);

  interval_.second = second_;
  interval_.end_s = static_cast<double>(monotonicNs() - start_ns_) / 1e9;
  publish(interval_, true);
  interval_.counters = {};
  interval_.latency.clear();
  publish_ = nullptr;
}

void LoadWorker::runPhase(uint64_t now_ns) {
  stopping_ = false;
  finished_ = false;
  backlogged_ = false;
  inflight_ = 0;
  event_add(housekeeping_event_, &kHousekeepingPeriod);
  const timeval until_deadline = delayUntil(deadline_ns_, now_ns);
  evtimer_add(deadline_event_, &until_deadline);

  for (auto& c : connections_) {
    c->connect();
  }
  if (phase_ == Phase::Measure && options_.openLoop()) {
    dispatch(now_ns);
  } else {
    for (auto& c : connections_) {
      fill(*c, now_ns);
    }
  }
  flushDirty();
  maybeFinish();
  event_base_dispatch(base_);
}

bool LoadWorker::wantsMore() const {
  if (stopping_) {
    return false;
  }
  return phase_ == Phase::Warm ? next_warm_ < warm_last_ : issued_ < quota_;
}

void LoadWorker::fill(LoadConnection& connection, uint64_t now_ns) {
  while (connection.canIssue() && wantsMore()) {
    issueOne(connection, now_ns, now_ns);
  }
}

uint64_t LoadWorker::scheduledNs(uint64_t i) const {
  // Workers interleave: together they send one request every 1/rate seconds.
  const double slot = static_cast<double>(i) * options_.threads + index_;
  return start_ns_ + static_cast<uint64_t>(slot * 1e9 / options_.rate);
}

void LoadWorker::dispatch(uint64_t now_ns) {
  backlogged_ = false;
  while (wantsMore()) {
    const uint64_t due = scheduledNs(issued_);
    if (due >= deadline_ns_) {
      return;  // the deadline timer ends the run
    }
    if (due > now_ns) {
      const timeval wait = delayUntil(due, now_ns);
      evtimer_add(schedule_event_, &wait);
      return;
    }
    LoadConnection* connection = pickConnection();
    if (connection == nullptr) {
      // Late requests keep their scheduled time: their wait counts in their latency.
      backlogged_ = true;
      return;
    }
    issueOne(*connection, due, now_ns);
  }
}

LoadConnection* LoadWorker::pickConnection() {
  const size_t n = connections_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t at = (cursor_ + i) % n;
    if (connections_[at]->canIssue()) {
      cursor_ = at + 1;
      return connections_[at].get();
    }
  }
  return nullptr;
}

uint32_t LoadWorker::valueLength() {
  if (options_.value_min == options_.value_max) {
    return options_.value_min;
  }
  return options_.value_min +
         static_cast<uint32_t>(rng_.below(options_.value_max - options_.value_min + 1));
}

void LoadWorker::issueOne(LoadConnection& connection, uint64_t start_ns, uint64_t now_ns) {
  if (phase_ == Phase::Warm) {
    connection.issueSet(static_cast<uint32_t>(next_warm_++), valueLength(), now_ns, now_ns);
  } else if (options_.set_weight > 0 &&
             rng_.below(options_.set_weight + options_.get_weight) < options_.set_weight) {
    connection.issueSet(static_cast<uint32_t>(chooser_.next(rng_)), valueLength(), start_ns,
                        now_ns);
  } else {
    const uint32_t k = options_.multiget;
    // Distinct keys when cheap to ensure, so that hits are not counted twice for one key.
    const bool distinct = k > 1 && k <= 64 && k <= keys_.size();
    for (uint32_t i = 0; i < k; ++i) {
      uint32_t key = static_cast<uint32_t>(chooser_.next(rng_));
      for (int attempt = 0; distinct && attempt < 8; ++attempt) {
        if (std::find(get_keys_.begin(), get_keys_.begin() + i, key) == get_keys_.begin() + i) {
          break;
        }
        key = static_cast<uint32_t>(chooser_.next(rng_));
      }
      get_keys_[i] = key;
    }
    connection.issueGet(get_keys_.data(), k, start_ns, now_ns);
  }
  ++sink_->counters.requests;
  ++inflight_;
  ++issued_;
  markDirty(connection);
}

void LoadWorker::markDirty(LoadConnection& connection) {
  if (!connection.dirty()) {
    connection.setDirty(true);
    dirty_.push_back(&connection);
  }
}

void LoadWorker::flushDirty() {
  // A flush can fail a connection, and a failure can issue elsewhere: loop until quiet.
  while (!dirty_.empty()) {
    flushing_.swap(dirty_);
    for (LoadConnection* c : flushing_) {
      c->setDirty(false);
      c->flush();
    }
    flushing_.clear();
  }
}

void LoadWorker::afterReplies(LoadConnection& connection, uint32_t ended, uint64_t now_ns) {
  inflight_ -= ended;
  if (phase_ == Phase::Measure && options_.openLoop()) {
    if (backlogged_) {
      dispatch(now_ns);
    }
  } else {
    fill(connection, now_ns);
  }
  maybeFinish();
}

void LoadWorker::afterFailure(LoadConnection&, uint32_t ended) {
  inflight_ -= ended;
  maybeFinish();
}

void LoadWorker::afterConnect(LoadConnection& connection) {
  const uint64_t now = monotonicNs();
  if (phase_ == Phase::Measure && options_.openLoop()) {
    if (backlogged_) {
      dispatch(now);
    }
  } else {
    fill(connection, now);
  }
}

void LoadWorker::stop(uint64_t now_ns) {
  if (stopping_ || finished_) {
    return;
  }
  stopping_ = true;
  evtimer_del(schedule_event_);
  if (phase_ == Phase::Measure && options_.openLoop() && issued_ < quota_) {
    // Count what was due by now (or the deadline) but never left: the rate was not met.
    const uint64_t until = std::min(now_ns, deadline_ns_);
    const double slots =
        static_cast<double>(until - std::min(until, start_ns_)) * options_.rate / 1e9;
    // Slots i * threads + index_ strictly before `until`, as dispatch() sends them.
    const double due_here = std::ceil((slots - index_) / options_.threads);
    const uint64_t due =
        due_here > 0 ? std::min<uint64_t>(static_cast<uint64_t>(due_here), quota_) : 0;
    unsent_ = due > issued_ ? due - issued_ : 0;
  }
  if (inflight_ > 0) {
    const timeval drain = {static_cast<time_t>(options_.timeout_ms / 1000),
                           static_cast<suseconds_t>(options_.timeout_ms % 1000) * 1000};
    evtimer_add(drain_event_, &drain);
  }
  maybeFinish();
}

void LoadWorker::maybeFinish() {
  if (!finished_ && inflight_ == 0 && !wantsMore()) {
    finish();
  }
}

void LoadWorker::finish() {
  finished_ = true;
  stopping_ = true;  // no reconnects from here on
  evtimer_del(tick_event_);
  evtimer_del(deadline_event_);
  evtimer_del(drain_event_);
  evtimer_del(schedule_event_);
  event_del(housekeeping_event_);
  event_base_loopexit(base_, nullptr);
}

void LoadWorker::onTick(int, short, void* arg) {
  auto* self = static_cast<LoadWorker*>(arg);
  const uint64_t now = monotonicNs();
  self->interval_.second = self->second_;
  self->interval_.end_s = static_cast<double>(now - self->start_ns_) / 1e9;
  (*self->publish_)(self->interval_, false);
  self->interval_.counters = {};
  self->interval_.latency.clear();
  ++self->second_;
  self->armTick(now);
}

void LoadWorker::armTick(uint64_t now_ns) {
  // Absolute targets, so that ticks do not drift with callback delays. No tick at or after the
  // deadline: the last second is published when the run ends, drain included, so a run of
  // --duration S reports exactly S seconds.
  const uint64_t target = start_ns_ + second_ * kSecondNs;
  if (target < deadline_ns_) {
    const timeval wait = delayUntil(target, now_ns);
    evtimer_add(tick_event_, &wait);
  }
}

void LoadWorker::onDeadline(int, short, void* arg) {
  auto* self = static_cast<LoadWorker*>(arg);
  self->stop(monotonicNs());
  self->flushDirty();
}

void LoadWorker::onDrain(int, short, void* arg) {
  auto* self = static_cast<LoadWorker*>(arg);
  for (auto& c : self->connections_) {
    if (c->inflight() > 0) {
      c->fail(LoadError::Timeout);
    }
  }
  self->maybeFinish();
}

void LoadWorker::onHousekeeping(int, short, void* arg) {
  auto* self = static_cast<LoadWorker*>(arg);
  const uint64_t now = monotonicNs();
  if (self->stop_requested_->load(std::memory_order_relaxed)) {
    self->stop(now);
  }
  const uint64_t timeout_ns = static_cast<uint64_t>(self->options_.timeout_ms) * 1'000'000ULL;
  for (auto& c : self->connections_) {
    if (c->inflight() > 0 && now - std::min(now, c->oldestIssueNs()) > timeout_ns) {
      c->fail(LoadError::Timeout);
    }
  }
  self->flushDirty();
}

void LoadWorker::onSchedule(int, short, void* arg) {
  auto* self = static_cast<LoadWorker*>(arg);
  self->dispatch(monotonicNs());
  self->flushDirty();
}

}  // namespace mcring::bench
