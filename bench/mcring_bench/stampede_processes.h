// The stampede experiment's child processes (memcached, mcring, nutcracker): started by fork and
// exec, tracked by PID, and always stopped by PID, on success, on error and on Ctrl-C.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace mcring::bench {

// Set by SIGINT/SIGTERM (see installStampedeSignals); every wait of the experiment polls it.
extern std::atomic<bool> g_stampede_interrupted;
// First Ctrl-C: stop cleanly (children stopped, partial results kept); the second kills us, and
// the children then die with us (PR_SET_PDEATHSIG).
void installStampedeSignals();
// Sleeps up to ms, in short steps; false if interrupted.
bool sleepInterruptible(int ms);

// A loopback port that was free a moment ago (bind to 0, read, close), and not in *taken, to
// which it is added (the kernel may hand out the same port twice in a row). May be taken by
// someone else by the time it is used: callers check who serves it, and retry.
uint16_t pickFreePort(std::set<uint16_t>* taken);

// Owned by the main thread only.
class ChildProcesses {
 public:
  explicit ChildProcesses(bool announce) : announce_(announce) {}
  ~ChildProcesses() { stopAll(); }
  ChildProcesses(const ChildProcesses&) = delete;
  ChildProcesses& operator=(const ChildProcesses&) = delete;

  // Starts argv[0] with argv, stdout and stderr appended to log_path. Returns the PID, or -1
  // with *error set. The child gets SIGKILL if this process dies (PR_SET_PDEATHSIG).
  pid_t start(const std::string& name, const std::vector<std::string>& argv,
              const std::string& log_path, std::string* error) {
    return spawn(name, argv, "/dev/null", log_path, log_path, error);
  }
  // Runs argv to completion with stdin from stdin_path and stdout to stdout_path (stderr to
  // log_path); killed after timeout_ms. Returns its exit status, or -1 (with *error).
  int runToCompletion(const std::string& name, const std::vector<std::string>& argv,
                      const std::string& stdin_path, const std::string& stdout_path,
                      const std::string& log_path, int timeout_ms, std::string* error);
  // SIGTERM, up to grace_ms for it to exit, then SIGKILL; reaps it. No-op for unknown PIDs.
  void stop(pid_t pid, int grace_ms = 3000);
  // The same for several at once: all get SIGTERM first, then share the grace period.
  void stop(const std::vector<pid_t>& pids, int grace_ms = 3000);
  // Sends SIGTERM without waiting (memcached takes up to a second to exit): a later stop()
  // reaps them, usually without waiting any more.
  void terminate(const std::vector<pid_t>& pids);
  // kill -9 and reap at once (the crash scenario). Returns when the process is gone.
  void killNow(pid_t pid);
  // Whether it is still running (reaps it if it exited).
  bool running(pid_t pid);
  // Stops every child still running, newest first.
  void stopAll();

 private:
  struct Child {
    pid_t pid;
    std::string name;
  };
  pid_t spawn(const std::string& name, const std::vector<std::string>& argv,
              const std::string& stdin_path, const std::string& stdout_path,
              const std::string& log_path, std::string* error);
  void forget(pid_t pid, const char* how);

  bool announce_;
  std::vector<Child> children_;
};

}  // namespace mcring::bench
