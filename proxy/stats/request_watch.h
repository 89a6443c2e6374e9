// The watch stream (`watch proxyreqs` on the data port): every worker's finished requests, one
// line each, to every client that asked for them.
//
// Cost without a watcher: the request path reads `watching()`, one relaxed load of a global
// counter, and does nothing else. With watchers, a worker formats each finished request's line
// once under the hub's mutex and appends it to each watcher's bounded buffer (WatchBuffer); a
// line that does not fit is lost and counted, never waited for, so a watcher that stops reading
// neither slows the data path nor grows past its buffer. The first time a buffer gets lines
// after being drained, the watcher's wake function runs (it posts to the watcher's own worker,
// which moves the lines to its socket as that drains).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stats/request_line.h"

namespace mcring::stats {

namespace watch_detail {
inline std::atomic<uint32_t> watchers{0};
}  // namespace watch_detail

// Whether any client is watching: the one thing the request path reads when none is.
inline bool watching() {
  return watch_detail::watchers.load(std::memory_order_relaxed) != 0;
}

// One watcher's pending lines, at most `capacity` bytes. Not thread-safe (Watcher guards it).
class WatchBuffer {
 public:
  explicit WatchBuffer(size_t capacity) : capacity_(capacity) {}
  // Appends `line`, preceded by the eventsskipped line if lines were lost since the last one
  // that fitted. False, and the line counted as lost, if they do not fit.
  bool push(std::string_view line, int64_t unix_us, uint64_t gid);
  // Moves every pending byte to `out`; with nothing pending and lines lost, the eventsskipped
  // line instead (so a watcher that drained its buffer still learns of the loss).
  void takeAll(std::string& out, int64_t unix_us, uint64_t gid);
  size_t size() const { return pending_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t skipped() const { return skipped_; }

 private:
  std::string pending_;
  size_t capacity_;
  uint64_t skipped_ = 0;
  std::string scratch_;
};

class Watcher {
 public:
  // `wake`: called from any thread (under the hub's mutex) when lines arrive for a watcher
  // that took everything; must only post work to the watcher's own thread.
  Watcher(std::string pool, size_t capacity, std::function<void()> wake)
      : pool_(std::move(pool)), buffer_(capacity), wake_(std::move(wake)) {}
  // The watcher's thread: appends what arrived since the last call to `out`.
  void take(std::string& out);
  size_t capacity() const { return buffer_.capacity(); }

 private:
  friend class RequestWatch;
  const std::string pool_;  // whose clients' requests it receives
  std::mutex mutex_;
  WatchBuffer buffer_;
  std::atomic<bool> wake_pending_{false};
  std::function<void()> wake_;
};

class RequestWatch {
 public:
  // memcached's LOGGER_WATCHER_BUF_SIZE.
  static constexpr size_t kWatcherBuffer = 256 * 1024;
  // memcached's WATCHER_LIMIT: what stalled watchers can hold is bounded (20 x 256 KiB), and so
  // is the work of formatting each request into every watcher's buffer under mutex_.
  static constexpr size_t kMaxWatchers = 20;

  static RequestWatch& instance();

  // A watcher of the requests of `pool`'s clients (only those: another pool's keys are another
  // pool's data); nullptr when kMaxWatchers are attached already.
  std::shared_ptr<Watcher> attach(std::string pool, std::function<void()> wake,
                                  size_t capacity = kWatcherBuffer);
  void detach(const std::shared_ptr<Watcher>& w);
  // Any thread: one finished request of a client of `pool` to every watcher of that pool.
  void publish(std::string_view pool, const RequestRecord& r, KeyShown mode);

 private:
  std::mutex mutex_;
  std::vector<std::shared_ptr<Watcher>> watchers_;
  std::string line_;  // scratch, under mutex_
};

// memcached's gid: one sequence over every line of the watch stream.
uint64_t nextWatchGid();
// Wall-clock microseconds since the epoch (a watch line's ts=).
int64_t unixMicros();

}  // namespace mcring::stats
