#include "proxy/stats/request_watch.h"

#include <algorithm>
#include <ctime>

namespace mcring::stats {

namespace {
std::atomic<uint64_t> g_gid{0};
}  // namespace

uint64_t nextWatchGid() {
  return g_gid.fetch_add(1, std::memory_order_relaxed) + 1;
}

int64_t unixMicros() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

bool WatchBuffer::push(std::string_view line, int64_t unix_us, uint64_t gid) {
  scratch_.clear();
  if (skipped_ > 0) {
    appendEventsSkippedLine(scratch_, unix_us, gid, skipped_);
  }
  if (pending_.size() + scratch_.size() + line.size() > capacity_) {
    ++skipped_;
    return false;
  }
  pending_.append(scratch_);
  pending_.append(line);
  skipped_ = 0;
  return true;
}

void WatchBuffer::takeAll(std::string& out, int64_t unix_us, uint64_t gid) {
  if (pending_.empty()) {
    if (skipped_ > 0) {
      appendEventsSkippedLine(out, unix_us, gid, skipped_);
      skipped_ = 0;
    }
    return;
  }
  out.append(pending_);
  pending_.clear();
}

void Watcher::take(std::string& out) {
  // Cleared first: a line pushed from now on wakes the watcher again.
  wake_pending_.store(false, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_.size() == 0 && buffer_.skipped() == 0) {
    return;
  }
  // Only an eventsskipped line written on its own takes a gid of the sequence.
  buffer_.takeAll(out, unixMicros(), buffer_.size() == 0 ? nextWatchGid() : 0);
}

RequestWatch& RequestWatch::instance() {
  static RequestWatch hub;
  return hub;
}

std::shared_ptr<Watcher> RequestWatch::attach(std::string pool, std::function<void()> wake,
                                              size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (watchers_.size() >= kMaxWatchers) {
    return nullptr;
  }
  auto w = std::make_shared<Watcher>(std::move(pool), capacity, std::move(wake));
  watchers_.push_back(w);
  watch_detail::watchers.fetch_add(1, std::memory_order_relaxed);
  return w;
}

void RequestWatch::detach(const std::shared_ptr<Watcher>& w) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(watchers_.begin(), watchers_.end(), w);
  if (it != watchers_.end()) {
    watchers_.erase(it);
    watch_detail::watchers.fetch_sub(1, std::memory_order_relaxed);
  }
}

void RequestWatch::publish(std::string_view pool, const RequestRecord& r, KeyShown mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto watches = [pool](const std::shared_ptr<Watcher>& w) { return w->pool_ == pool; };
  if (std::none_of(watchers_.begin(), watchers_.end(), watches)) {
    return;
  }
  const int64_t now = unixMicros();
  const uint64_t gid = nextWatchGid();
  line_.clear();
  appendProxyReqLine(line_, now, gid, r, mode);
  for (const std::shared_ptr<Watcher>& w : watchers_) {
    if (!watches(w)) {
      continue;
    }
    {
      std::lock_guard<std::mutex> wl(w->mutex_);
      w->buffer_.push(line_, now, gid);
    }
    // Under mutex_: detach (which takes it) cannot return while a wake is being posted.
    if (!w->wake_pending_.exchange(true, std::memory_order_relaxed)) {
      w->wake_();
    }
  }
}

}  // namespace mcring::stats
