// ChildProcesses: fork/exec with PR_SET_PDEATHSIG, stop by PID, signal handling.
#include "bench/mcring_bench/stampede_processes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mcring::bench {

std::atomic<bool> g_stampede_interrupted{false};

namespace {

void onInterrupt(int) {
  g_stampede_interrupted.store(true, std::memory_order_relaxed);
}

void sleepMs(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1'000'000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

}  // namespace

void installStampedeSignals() {
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool sleepInterruptible(int ms) {
  while (ms > 0) {
    if (g_stampede_interrupted.load(std::memory_order_relaxed)) {
      return false;
    }
    const int step = std::min(ms, 20);
    sleepMs(step);
    ms -= step;
  }
  return !g_stampede_interrupted.load(std::memory_order_relaxed);
}

uint16_t pickFreePort(std::set<uint16_t>* taken) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return 0;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    uint16_t port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
    ::close(fd);
    if (port != 0 && taken->insert(port).second) {
      return port;
    }
  }
  return 0;
}

pid_t ChildProcesses::spawn(const std::string& name, const std::vector<std::string>& argv,
                            const std::string& stdin_path, const std::string& stdout_path,
                            const std::string& log_path, std::string* error) {
  if (argv.empty()) {
    *error = name + ": empty command";
    return -1;
  }
  if (::access(argv[0].c_str(), X_OK) != 0) {
    *error = name + ": " + argv[0] + " is not executable (" + std::strerror(errno) + ")";
    return -1;
  }
  // Everything the child needs is prepared before fork: between fork and exec only
  // async-signal-safe calls (the client thread may be running).
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  const int in_fd = ::open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
  const int out_fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  auto closeAll = [&] {
    for (int fd : {in_fd, out_fd, log_fd}) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  };
  if (in_fd < 0 || out_fd < 0 || log_fd < 0) {
    *error = name + ": cannot open " + stdin_path + ", " + stdout_path + " or " + log_path + ": " +
             std::strerror(errno);
    closeAll();
    return -1;
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = name + ": fork: " + std::strerror(errno);
    closeAll();
    return -1;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      _exit(127);  // the parent died before prctl
    }
    // Undo what we installed: the child starts with default signal handling.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Its own process group: a Ctrl-C on the terminal reaches only mcring-bench, which then
    // stops the children in order.
    ::setpgid(0, 0);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(log_fd, 2);
    ::execv(args[0], args.data());
    _exit(127);
  }
  closeAll();
  children_.push_back({pid, name});
  if (announce_) {
    std::string command;
    for (const auto& a : argv) {
      command += (command.empty() ? "" : " ") + a;
    }
    std::fprintf(stderr, "stampede: pid %d started: %s\n", static_cast<int>(pid), command.c_str());
  }
  return pid;
}

int ChildProcesses::runToCompletion(const std::string& name, const std::vector<std::string>& argv,
                                    const std::string& stdin_path, const std::string& stdout_path,
                                    const std::string& log_path, int timeout_ms,
                                    std::string* error) {
  const pid_t pid = spawn(name, argv, stdin_path, stdout_path, log_path, error);
  if (pid < 0) {
    return -1;
  }
  for (int waited = 0;; waited += 5) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      forget(pid, "finished");
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (waited >= timeout_ms || g_stampede_interrupted.load()) {
      stop(pid, 100);
      *error = name + ": did not finish within " + std::to_string(timeout_ms) + " ms";
      return -1;
    }
    sleepMs(5);
  }
}

void ChildProcesses::forget(pid_t pid, const char* how) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [pid](const Child& c) { return c.pid == pid; });
  if (it == children_.end()) {
    return;
  }
  if (announce_) {
    std::fprintf(stderr, "stampede: pid %d %s (%s)\n", static_cast<int>(pid), how,
                 it->name.c_str());
  }
  children_.erase(it);
}

bool ChildProcesses::running(pid_t pid) {
  auto it = std::find_if(children_.begin(), children_.end(),
                         [pid](const Child& c) { return c.pid == pid; });
  if (it == children_.end()) {
    return false;
  }
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid || (r < 0 && errno == ECHILD)) {
    forget(pid, "exited by itself");
    return false;
  }
  return true;
}

void ChildProcesses::stop(pid_t pid, int grace_ms) {
  stop(std::vector<pid_t>{pid}, grace_ms);
}

void ChildProcesses::stop(const std::vector<pid_t>& pids, int grace_ms) {
  std::vector<pid_t> left;
  for (pid_t pid : pids) {
    if (running(pid)) {
      ::kill(pid, SIGTERM);
      left.push_back(pid);
    }
  }
  for (int waited = 0; !left.empty() && waited < grace_ms; waited += 5) {
    for (size_t i = 0; i < left.size();) {
      int status = 0;
      const pid_t r = ::waitpid(left[i], &status, WNOHANG);
      if (r == left[i] || (r < 0 && errno == ECHILD)) {
        forget(left[i], "stopped");
        left.erase(left.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    if (!left.empty()) {
      sleepMs(5);
    }
  }
  for (pid_t pid : left) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    forget(pid, "killed after the grace period");
  }
}

void ChildProcesses::terminate(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    if (running(pid)) {
      ::kill(pid, SIGTERM);
    }
  }
}

void ChildProcesses::killNow(pid_t pid) {
  if (!running(pid)) {
    return;
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  forget(pid, "killed (-9)");
}

void ChildProcesses::stopAll() {
  std::vector<pid_t> pids;
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) {
    pids.push_back(it->pid);
  }
  stop(pids);
}

}  // namespace mcring::bench
