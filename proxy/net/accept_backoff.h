// What a listening socket does when accept() fails. Without it libevent retries at once: the
// socket stays readable, so a process out of file descriptors (EMFILE, ENFILE) spins a core and
// logs a line per attempt while nothing is served. Instead the listener stops accepting for a
// while (100 ms, doubling to 1 s while failures go on, back to 100 ms after a connection is
// accepted), logs the failure (rate-limited) and reports it to its owner, which counts it.
// Pending connections wait in the kernel's backlog meanwhile. Used by Listener and HttpServer;
// main thread (the listener's loop).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

struct evconnlistener;

namespace mcring::net {

class EventLoop;
class Timer;

class AcceptBackoff {
 public:
  static constexpr uint32_t kFirstPauseMs = 100;
  static constexpr uint32_t kMaxPauseMs = 1000;
  using ErrorFn = std::function<void(int err)>;

  // label names the listener in the log ("pool 'alpha' 127.0.0.1:22122").
  AcceptBackoff(EventLoop& loop, evconnlistener* listener, std::string label);
  ~AcceptBackoff();
  AcceptBackoff(const AcceptBackoff&) = delete;
  AcceptBackoff& operator=(const AcceptBackoff&) = delete;

  void setErrorHandler(ErrorFn fn) { on_error_ = std::move(fn); }
  // A connection was accepted: the next failure pauses for kFirstPauseMs again.
  void accepted() { pause_ms_ = 0; }
  // The owner's own pause: the backoff never re-enables a listener its owner paused.
  void pause();
  void resume();
  bool backingOff() const { return backing_off_; }
  uint32_t currentPauseMs() const { return pause_ms_; }

 private:
  // libevent hands the listener's user data (the owner's, not ours) to the error callback, so
  // the backoff is found from the listener (a registry of the few listeners there are).
  static void onError(evconnlistener* listener, void* ignored);
  void failed(int err);
  void retry();

  evconnlistener* listener_;
  std::string label_;
  std::unique_ptr<Timer> timer_;
  ErrorFn on_error_;
  uint32_t pause_ms_ = 0;
  bool backing_off_ = false;
  bool owner_paused_ = false;
};

}  // namespace mcring::net
