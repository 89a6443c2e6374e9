// Freshness of a memcached server across workers and pools (return_flush; docs/design.md,
// "Replication").
//
// A server that missed writes while it could not be reached (a replica write that failed, or
// its keys rerouted while it was ejected) must not serve the old values of those keys when it
// returns. Servers are per worker; this state is per server identity (host:port or socket path),
// shared by every worker (and the main thread, which ejects) and by every pool that lists the
// server (one memcached: a pool that did not miss the writes must not read the old values either),
// so one flush serves them all:
//   missed  - bumped for every write the server missed (and at its ejection);
//   flushed - the `missed` count a flush_all that the server acknowledged was sent after.
// The server is stale while missed > flushed: no read goes to it (its keys' next replica serves
// them), and the first connection of any worker that finds it connected sends `flush_all`
// (flush_in_flight elects one). memcached's flush_all invalidates the items stored before it, not
// those stored after, so a write it acknowledged later stays. A write missed after a flush was
// sent leaves missed > flushed: another flush follows.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace mcring::core {

struct ServerFreshness {
  std::atomic<uint64_t> missed{0};
  std::atomic<uint64_t> flushed{0};
  std::atomic<bool> flush_in_flight{false};
  // Monotonic ms when the last flush was acknowledged: the return window starts there.
  std::atomic<uint64_t> returned_at_ms{0};

  bool stale() const {
    return missed.load(std::memory_order_acquire) > flushed.load(std::memory_order_acquire);
  }
  void missWrite() { missed.fetch_add(1, std::memory_order_acq_rel); }
  // A flush sent when missed was `mark` was acknowledged.
  void flushDone(uint64_t mark, uint64_t now_ms) {
    uint64_t f = flushed.load();
    while (f < mark && !flushed.compare_exchange_weak(f, mark)) {
    }
    returned_at_ms.store(now_ms);
    flush_in_flight.store(false);
  }
};

// The state of the server `identity`, created on first use and kept for the process's life (a
// server ejected, its BackendServers gone, still has to be flushed when it is added back).
std::shared_ptr<ServerFreshness> serverFreshness(const std::string& identity);

}  // namespace mcring::core
