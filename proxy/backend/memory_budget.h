// A byte budget: what the clients of one pool on one worker may have mcring hold for them.
//
// Charged for reply bytes held for a client (assembling, or queued behind an earlier reply),
// for bytes waiting in its socket's output, and, separately, for large requests being received.
// Refusing is the caller's job (a reply gets memcached's out-of-memory error, a request being
// received waits unread); this only counts. Worker-thread only; the use is also stored into a
// gauge other threads read (mirrorTo), for /metrics.
#pragma once

#include <atomic>
#include <cstdint>

namespace mcring::core {

class MemoryBudget {
 public:
  void setLimit(uint64_t limit) { limit_ = limit; }
  // Stores used() into *gauge at every change (a relaxed store: this is its only writer).
  void mirrorTo(std::atomic<uint64_t>* gauge) {
    mirror_ = gauge;
    publish();
  }
  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_; }
  bool fits(uint64_t n) const { return used_ + n <= limit_; }
  // Charges n if it fits; false (and nothing charged) if not.
  bool tryCharge(uint64_t n) {
    if (!fits(n)) {
      return false;
    }
    used_ += n;
    publish();
    return true;
  }
  // Charges n whether or not it fits (bytes already in a socket's output).
  void charge(uint64_t n) {
    used_ += n;
    publish();
  }
  void release(uint64_t n) {
    used_ = n < used_ ? used_ - n : 0;
    publish();
  }

 private:
  void publish() {
    if (mirror_ != nullptr) {
      mirror_->store(used_, std::memory_order_relaxed);
    }
  }

  uint64_t limit_ = UINT64_MAX;
  uint64_t used_ = 0;
  std::atomic<uint64_t>* mirror_ = nullptr;
};

}  // namespace mcring::core
