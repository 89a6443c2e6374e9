// One libevent event base, run by one thread, plus a way for other threads to post work to it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct event_base;
struct event;

namespace mcring::net {

class TcpConnection;
class IoBatch;

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until stop(). Call from the owning thread.
  void run();
  // Runs what is ready now (active events, deferred callbacks) without waiting, then returns.
  void runPending();
  // Makes run() return after the current callbacks. Any thread.
  void stop();
  // Runs fn on the loop's thread, soon. Any thread; the only way work crosses threads.
  void post(std::function<void()> fn);

  event_base* raw() const { return base_; }

  // Reads the plain sockets that became readable in a pass, and writes the connections with
  // output at its end, with one io_uring submission each (io_batch.h) instead of a recv() or
  // send() per connection. Checks now that the kernel allows io_uring; false, with *why, if not
  // (nothing changes). Call before run(), from any thread: the ring is made by the loop's own
  // thread on its first pass.
  bool enableIoBatching(std::string* why);
  // Sends and receives this loop made through its batches (failed ones included). Loop thread.
  uint64_t batchedSends() const { return batched_sends_; }
  uint64_t batchedReads() const { return batched_reads_; }

 private:
  friend class TcpConnection;
  // Connections whose output got bytes during the current batch of callbacks: written once the
  // batch is over (one writev per connection per batch, no EPOLLOUT round trip).
  void scheduleFlush(TcpConnection* conn);
  void cancelFlush(TcpConnection* conn);
  // A connection destroyed while queued for, or in, a batch: forgotten there.
  void cancelBatched(TcpConnection* conn);
  // Sends flush_queue_[from, to) that can go in one submission; leaves the others queued.
  void sendBatched(size_t from, size_t to);
  // A plain socket is readable: read at the end of the pass's readiness callbacks, together.
  void queueRead(TcpConnection* conn);
  static void onReadBatch(int, short, void* arg);
  void readBatched();
  // The ring, made on first use by this thread; false (and batching off) if refused.
  bool haveBatch();
  // After a run: a ring that broke and could not be made again turns batching off.
  void dropBrokenBatch();
  static void onFlush(int, short, void* arg);
  static void onPosted(int, short, void* arg);

  // The base has no locks (EVENT_BASE_FLAG_NOLOCK): other threads reach it only through post(),
  // which wakes it with an eventfd.
  event_base* base_ = nullptr;
  event* wakeup_ = nullptr;
  int wakeup_fd_ = -1;
  event* flush_ = nullptr;
  bool flush_active_ = false;
  std::vector<TcpConnection*> flush_queue_;
  bool batch_io_ = false;
  std::unique_ptr<IoBatch> batch_;       // made on the loop's thread (a single issuer)
  std::vector<TcpConnection*> batched_;  // in batch_'s order; null once destroyed
  uint64_t batched_sends_ = 0;
  uint64_t batched_reads_ = 0;
  event* read_batch_ = nullptr;
  bool read_batch_active_ = false;
  std::vector<TcpConnection*> read_queue_;  // readable this pass; null once destroyed
  std::vector<TcpConnection*> reading_;     // being read by readBatched
  std::atomic<std::thread::id> owner_{};
  std::mutex mutex_;
  std::vector<std::function<void()>> posted_;
};

// One-shot or periodic timer on a loop; stops when destroyed.
class Timer {
 public:
  Timer(EventLoop& loop, std::function<void()> fn);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void start(uint64_t ms, bool periodic = false);
  void stop();
  bool pending() const;

 private:
  static void onFire(int, short, void* arg);
  event* ev_ = nullptr;
  std::function<void()> fn_;
};

// Calls fn on the loop's thread when a signal arrives.
class SignalWatcher {
 public:
  SignalWatcher(EventLoop& loop, int signo, std::function<void()> fn);
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  static void onSignal(int, short, void* arg);
  event* ev_ = nullptr;
  std::function<void()> fn_;
};

// Enables libevent's locking (the event bases themselves run without locks, see EventLoop); call
// once, before creating loops used from several threads.
// The allocator under libevent's buffer pool (chunk_pool.h), e.g. a counting one in tests. Only
// before anything else of net is used. initThreading() installs the pool over malloc otherwise,
// and routes libevent's own log messages to common's logger (libevent_log.h).
void setAllocator(void* (*malloc_fn)(size_t), void* (*realloc_fn)(void*, size_t),
                  void (*free_fn)(void*));
void initThreading();

}  // namespace mcring::net

namespace mcring::net {

// Calls fn on the loop's thread whenever fd is readable (inotify and similar descriptors).
class FdWatcher {
 public:
  FdWatcher(EventLoop& loop, int fd, std::function<void()> fn);
  ~FdWatcher();
  FdWatcher(const FdWatcher&) = delete;
  FdWatcher& operator=(const FdWatcher&) = delete;
  // No more calls (safe from inside fn; the descriptor may be closed afterwards).
  void stop();

 private:
  static void onReady(int, short, void* arg);
  event* ev_ = nullptr;
  std::function<void()> fn_;
};

}  // namespace mcring::net
