// Upgrades without a dropped request (SIGUSR2): the running process starts its binary again and
// hands it its listening sockets over a Unix socket (SCM_RIGHTS); the new process adopts them
// (inherited_listeners.h), starts, writes the pid file and says it is ready; only then does the
// old one stop accepting and drain (Proxy::handOver). The two sides of that exchange:
//
//   old -> new   "listeners" messages carrying the descriptors, then "end"
//   new -> old   "ready" once it serves, or "failed <reason>" (or nothing: it exited)
//
// The socket's descriptor number reaches the new process in kUpgradeFdVariable.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/control/inherited_listeners.h"
#include "proxy/net/event_loop.h"

namespace mcring::core {

inline constexpr const char* kUpgradeFdVariable = "MCRING_UPGRADE_FD";

// The old process's side: one new process being started and awaited (main thread).
class Upgrade {
 public:
  // ready: the new process serves; otherwise `why` says what went wrong (it has exited, or was
  // told to stop). Called once, from the loop.
  using DoneFn = std::function<void(bool ready, const std::string& why)>;
  Upgrade(net::EventLoop& loop, DoneFn done);
  ~Upgrade();
  Upgrade(const Upgrade&) = delete;
  Upgrade& operator=(const Upgrade&) = delete;

  // Starts `binary` with `args` (args[0] included) and this environment, and sends it `fds`.
  // False and *error if it could not be started (nothing is left running then).
  bool start(const std::string& binary, const std::vector<std::string>& args,
             const std::vector<int>& fds, uint32_t ready_timeout_ms, std::string* error);
  pid_t pid() const { return pid_; }
  // Started and not yet ready or failed.
  bool inProgress() const { return pid_ > 0 && !done_called_; }

 private:
  void onMessage();
  void finish(bool ready, std::string why);
  // Collects the exit status of a new process that failed; "" if it has not exited yet.
  std::string reap();

  net::EventLoop& loop_;
  DoneFn done_;
  pid_t pid_ = -1;
  int sock_ = -1;
  bool done_called_ = false;
  bool ready_ = false;
  bool reaped_ = false;
  std::unique_ptr<net::FdWatcher> watch_;
  std::unique_ptr<net::Timer> timeout_;
};

// The new process's side, when kUpgradeFdVariable is set (main, before the proxy starts).
class UpgradeChannel {
 public:
  // Receives the old process's listeners into *listeners (bounded wait). nullptr and *error if
  // the variable is set but the hand-over fails; nullptr and *error "" if it is not set.
  static std::unique_ptr<UpgradeChannel> fromEnvironment(InheritedListeners* listeners,
                                                         std::string* error);
  ~UpgradeChannel();
  UpgradeChannel(const UpgradeChannel&) = delete;
  UpgradeChannel& operator=(const UpgradeChannel&) = delete;

  // The proxy serves and the pid file is written: the old process may stop accepting.
  void ready();
  // The proxy could not start: the old process keeps serving and logs `why`.
  void failed(const std::string& why);

 private:
  explicit UpgradeChannel(int sock) : sock_(sock) {}
  void send(const std::string& message);
  int sock_;
};

}  // namespace mcring::core
