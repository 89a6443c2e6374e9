// One libevent event base, run by one thread, plus a way for other threads to post work to it.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

struct event_base;
struct event;

namespace mcring::net {

class EventLoop {
 public:
  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until stop(). Call from the owning thread.
  void run();
  // Makes run() return after the current callbacks. Any thread.
  void stop();
  // Runs fn on the loop's thread, soon. Any thread; the only way work crosses threads.
  void post(std::function<void()> fn);

  event_base* raw() const { return base_; }

 private:
  static void onPosted(int, short, void* arg);
  event_base* base_ = nullptr;
  event* wakeup_ = nullptr;
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

// Enables libevent's locking; call once before creating loops used from several threads.
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

 private:
  static void onReady(int, short, void* arg);
  event* ev_ = nullptr;
  std::function<void()> fn_;
};

}  // namespace mcring::net
