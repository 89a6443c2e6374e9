// Requests and bytes per client address (top clients, `GET /clients`): one fixed table per
// worker, merged by readers.
//
// A session takes its address's slot when it connects (acquire) and counts into it with plain
// single-writer increments (the worker's thread only); readers on other threads read every slot
// under its sequence number (a seqlock: odd while the worker reassigns the slot, so a reader
// never pairs one address with another's counts). The table has kSlots slots: a new address
// when it is full takes the slot of the address with no open connection and the fewest
// requests (else of the fewest requests), so memory is fixed whatever clients come and go; a
// session whose slot was taken takes one again at its next read (its address restarts from 0).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proxy/stats/counters.h"

namespace mcring::stats {

struct ClientSlot {
  std::atomic<uint64_t> seq{0};  // even: stable; odd: being reassigned
  // The address, as text ("127.0.0.1", "::1", "unix"), at most 63 bytes, NUL-padded.
  std::array<std::atomic<uint64_t>, 8> address{};
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  uint32_t sessions = 0;  // open connections counting here (worker-only)
};

// What a session holds: its slot and the slot's sequence when it took it.
struct ClientRef {
  ClientSlot* slot = nullptr;
  uint64_t seq = 0;
  bool current() const {
    return slot != nullptr && slot->seq.load(std::memory_order_relaxed) == seq;
  }
};

struct ClientTotals {
  uint64_t requests = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

class ClientTable {
 public:
  static constexpr size_t kSlots = 256;
  static constexpr size_t kMaxAddress = 63;

  // Worker thread: the slot counting `address`'s traffic (found, free, or taken from the least
  // active address).
  ClientRef acquire(const std::string& address);
  // Worker thread: a session of this address closed (ref as acquire gave it, maybe stale).
  void release(const ClientRef& ref);
  // Any thread: every address's counts.
  void read(std::map<std::string, ClientTotals>* out) const;

 private:
  std::array<ClientSlot, kSlots> slots_{};
  // Each slot's address as the worker wrote it (worker-only): acquire's scan reads plain memory.
  std::array<std::array<uint64_t, 8>, kSlots> owners_{};
  size_t used_ = 0;
};

// The session's counting (worker thread).
inline void countRequest(const ClientRef& c, uint64_t bytes_in) {
  bump(c.slot->requests);
  bump(c.slot->bytes_in, bytes_in);
}
inline void countWritten(const ClientRef& c, uint64_t bytes_out) {
  bump(c.slot->bytes_out, bytes_out);
}

// Top clients by request rate over the interval between two reads: `previous` holds the last
// read's totals (replaced by this one's); rows with the same rate rank by bytes.
struct ClientRate {
  std::string address;
  double requests_per_s = 0;
  double bytes_in_per_s = 0;
  double bytes_out_per_s = 0;
  ClientTotals totals;
};
std::vector<ClientRate> topClients(const std::map<std::string, ClientTotals>& now,
                                   const std::map<std::string, ClientTotals>& previous,
                                   double seconds, size_t n);

}  // namespace mcring::stats
