// Upgrade and UpgradeChannel: starting the new process, the hand-over messages, readiness.
#include "proxy/control/upgrade.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "proxy/common/log.h"
#include "proxy/net/fd_passing.h"

extern char** environ;

namespace mcring::core {

namespace {

constexpr uint32_t kReceiveTimeoutMs = 5000;  // the old process sends at once

bool startsWith(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

std::string exitText(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended";
}

}  // namespace

Upgrade::Upgrade(net::EventLoop& loop, DoneFn done) : loop_(loop), done_(std::move(done)) {}

Upgrade::~Upgrade() {
  watch_.reset();
  timeout_.reset();
  if (sock_ >= 0) {
    ::close(sock_);
  }
  // A new process that failed and has not been collected yet: it was told to stop; end it.
  if (pid_ > 0 && !ready_ && !reaped_ && reap().empty()) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

bool Upgrade::start(const std::string& binary, const std::vector<std::string>& args,
                    const std::vector<int>& fds, uint32_t ready_timeout_ms, std::string* error) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  sock_ = pair[0];
  const int child_end = pair[1];
  // The descriptors wait in the socket until the new process reads them.
  for (size_t i = 0; i < fds.size(); i += net::kMaxFdsPerMessage) {
    std::vector<int> part(fds.begin() + static_cast<std::ptrdiff_t>(i),
                          fds.begin() + static_cast<std::ptrdiff_t>(
                                            std::min(fds.size(), i + net::kMaxFdsPerMessage)));
    if (!net::sendWithFds(sock_, "listeners", part, error)) {
      ::close(child_end);
      return false;
    }
  }
  if (!net::sendWithFds(sock_, "end", {}, error)) {
    ::close(child_end);
    return false;
  }
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!startsWith(*e, "MCRING_UPGRADE_FD=") && !startsWith(*e, "LISTEN_FDS=") &&
        !startsWith(*e, "LISTEN_PID=") && !startsWith(*e, "LISTEN_FDNAMES=")) {
      env_text.emplace_back(*e);
    }
  }
  env_text.push_back(std::string(kUpgradeFdVariable) + "=" + std::to_string(child_end));
  std::vector<char*> envp;
  for (auto& s : env_text) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> arg_text(args);
  std::vector<char*> argv;
  for (auto& s : arg_text) {
    argv.push_back(s.data());
  }
  argv.push_back(nullptr);
  // Only the main thread starts processes: clearing close-on-exec for the spawn leaks the
  // descriptor into no other child.
  ::fcntl(child_end, F_SETFD, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, binary.c_str(), nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  ::close(child_end);
  if (rc != 0) {
    *error = "cannot execute " + binary + ": " + std::strerror(rc);
    return false;
  }
  pid_ = pid;
  watch_ = std::make_unique<net::FdWatcher>(loop_, sock_, [this] { onMessage(); });
  timeout_ = std::make_unique<net::Timer>(loop_, [this, ready_timeout_ms] {
    ::kill(pid_, SIGTERM);
    finish(false, "new process " + std::to_string(pid_) + " did not report ready within " +
                      std::to_string(ready_timeout_ms) + " ms (sent SIGTERM)");
  });
  timeout_->start(ready_timeout_ms);
  return true;
}

void Upgrade::onMessage() {
  if (done_called_) {
    return;
  }
  std::string tag;
  std::vector<int> fds;
  std::string error;
  bool got = net::receiveWithFds(sock_, 100, &tag, &fds, &error);
  for (int fd : fds) {
    ::close(fd);  // the new process sends none
  }
  if (got && tag == "ready") {
    finish(true, "");
    return;
  }
  std::string why = "new process " + std::to_string(pid_);
  if (got && startsWith(tag.c_str(), "failed")) {
    why += " could not start: " + (tag.size() > 7 ? tag.substr(7) : std::string("(no reason)"));
  } else if (got) {
    why += " sent an unexpected message '" + tag + "'";
  } else {
    // The socket closed without a word: it exited (crashed, or an older binary that does not
    // know the hand-over).
    std::string status = reap();
    why += status.empty() ? " closed the hand-over socket before it was ready"
                          : " " + status +
                                " before it "
                                "was ready";
  }
  finish(false, why);
}

void Upgrade::finish(bool ready, std::string why) {
  if (done_called_) {
    return;
  }
  done_called_ = true;
  ready_ = ready;
  timeout_->stop();
  watch_->stop();  // destroyed with this object: this may run inside its callback
  if (sock_ >= 0) {
    ::close(sock_);
    sock_ = -1;
  }
  if (!ready) {
    reap();
  }
  done_(ready, why);
}

std::string Upgrade::reap() {
  if (pid_ <= 0 || reaped_) {
    return "";
  }
  int status = 0;
  // Its end of the socket closes as it exits: wait a moment for the status (bounded).
  for (int i = 0; i < 50; ++i) {
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return exitText(status);
    }
    if (r < 0) {
      reaped_ = true;
      return "";
    }
    ::usleep(2000);
  }
  return "";
}

std::unique_ptr<UpgradeChannel> UpgradeChannel::fromEnvironment(InheritedListeners* listeners,
                                                                std::string* error) {
  error->clear();
  const char* text = std::getenv(kUpgradeFdVariable);
  if (text == nullptr) {
    return nullptr;
  }
  char* end = nullptr;
  long fd = std::strtol(text, &end, 10);
  ::unsetenv(kUpgradeFdVariable);
  if (*end != '\0' || fd < 0 || fd > 65535) {
    *error = std::string(kUpgradeFdVariable) + " is not a descriptor";
    return nullptr;
  }
  const int sock = static_cast<int>(fd);
  ::fcntl(sock, F_SETFD, FD_CLOEXEC);
  std::unique_ptr<UpgradeChannel> channel(new UpgradeChannel(sock));
  for (;;) {
    std::string tag;
    std::vector<int> fds;
    if (!net::receiveWithFds(sock, kReceiveTimeoutMs, &tag, &fds, error)) {
      for (int f : fds) {
        ::close(f);
      }
      *error = "upgrade hand-over: " + *error;
      return nullptr;
    }
    listeners->add(fds, InheritedListeners::Origin::Upgrade);
    if (tag == "end") {
      break;
    }
  }
  return channel;
}

UpgradeChannel::~UpgradeChannel() {
  if (sock_ >= 0) {
    ::close(sock_);
  }
}

void UpgradeChannel::send(const std::string& message) {
  std::string error;
  if (sock_ >= 0 && !net::sendWithFds(sock_, message, {}, &error)) {
    MCRING_LOG(Warn, "upgrade: cannot tell the old process: %s", error.c_str());
  }
  if (sock_ >= 0) {
    ::close(sock_);
    sock_ = -1;
  }
}

void UpgradeChannel::ready() {
  send("ready");
}

void UpgradeChannel::failed(const std::string& why) {
  // One message: a reason longer than the receiver's buffer is cut.
  send("failed " + why.substr(0, 200));
}

}  // namespace mcring::core
