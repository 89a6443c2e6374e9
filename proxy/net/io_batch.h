// Socket reads or writes of one loop pass, submitted to the kernel together: one io_uring_enter
// for every connection with output (or that became readable), instead of one send() (recv())
// each. On loopback most of a proxy's CPU is the kernel's, and a system call's entry and exit
// are paid per call (bench/results/perf-profile.md, section 6).
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct io_uring;

namespace mcring::net {

class IoBatch {
 public:
  // Pieces of one connection's output a send takes at most (the rest waits for the next one).
  static constexpr int kMaxPieces = 8;
  // Operations per submission.
  static constexpr unsigned kEntries = 256;

  // nullptr, with *why set, when the kernel refuses io_uring (too old, io_uring_disabled, or a
  // seccomp filter such as a container runtime's): the caller sends one call at a time.
  static std::unique_ptr<IoBatch> open(std::string* why);
  ~IoBatch();
  IoBatch(const IoBatch&) = delete;
  IoBatch& operator=(const IoBatch&) = delete;

  // False once the ring broke and could not be made again: send one call at a time.
  bool usable() const { return ring_ != nullptr; }
  bool full() const { return count_ == kEntries; }
  size_t size() const { return count_; }
  // The next operation's pieces: fill up to kMaxPieces, then add() with how many.
  iovec* pieces() { return &iov_[count_ * kMaxPieces]; }
  // Queues a non-blocking send of the pieces() just filled on fd, or a receive into them.
  enum class Op : uint8_t { Send, Recv };
  void add(Op op, int fd, int pieces);
  // Submits what is queued and waits for all of it: on a non-blocking socket each operation
  // completes in the submitting call, with the bytes moved, 0 (a receive at EOF) or -errno
  // (-EAGAIN: the socket is full, or has nothing to read). results()[i] is the i-th add()'s; the
  // batch is then empty for the next one.
  void run();
  const std::vector<int>& results() const { return results_; }

 private:
  IoBatch() = default;

  std::unique_ptr<io_uring> ring_;
  size_t count_ = 0;
  std::vector<iovec> iov_;
  std::vector<msghdr> msgs_;
  std::vector<int> results_;
};

}  // namespace mcring::net
