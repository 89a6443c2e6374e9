// What a load run counts: request outcomes, error kinds, latency; per second and in total.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "bench/mcring_bench/latency_histogram.h"
#include "proxy/protocol/reply.h"

namespace mcring::bench {

// Every way a request can end without a good reply. One table for enum, JSON name and prose.
#define MCRING_LOAD_ERRORS(X)                                                        \
  X(ConnectRefused, "connect_refused", "connect refused")                            \
  X(ConnectFailed, "connect_failed", "connect failed (other)")                       \
  X(ConnectionReset, "connection_reset", "connection reset or closed by the server") \
  X(Timeout, "timeout", "no reply within --timeout")                                 \
  X(ServerError, "server_error", "SERVER_ERROR reply")                               \
  X(ClientError, "client_error", "CLIENT_ERROR reply")                               \
  X(Error, "error", "ERROR reply")                                                   \
  X(ProtocolDesync, "protocol_desync", "unparsable or unexpected reply")

enum class LoadError : uint8_t {
#define MCRING_X(id, name, text) id,
  MCRING_LOAD_ERRORS(MCRING_X)
#undef MCRING_X
};

inline constexpr size_t kLoadErrorCount = 0
#define MCRING_X(id, name, text) +1
    MCRING_LOAD_ERRORS(MCRING_X)
#undef MCRING_X
    ;

std::string_view loadErrorName(LoadError e);
std::string_view loadErrorText(LoadError e);
// What an error reply (reply.isError()) counts as.
LoadError loadErrorOfReply(protocol::ReplyKind kind);

// Counts of one stretch of a run, written by one worker thread; the controller sums them.
// Every request sent ends exactly once, as a reply or as one error, so over a whole run
// requests == replies + errorTotal().
struct LoadCounters {
  uint64_t requests = 0;    // written to a connection (get, multi-get or set)
  uint64_t replies = 0;     // ended by a well-formed, non-error reply
  uint64_t gets = 0;        // get requests replied to
  uint64_t get_keys = 0;    // keys asked by those gets
  uint64_t hits = 0;        // VALUEs among them; hit ratio = hits / get_keys
  uint64_t sets = 0;        // STORED
  uint64_t not_stored = 0;  // NOT_STORED (a reply, not an error)
  std::array<uint64_t, kLoadErrorCount> errors{};

  uint64_t errorTotal() const {
    uint64_t total = 0;
    for (uint64_t e : errors) {
      total += e;
    }
    return total;
  }
  // Fraction of asked keys that hit; -1 when no get was replied to.
  double hitRatio() const {
    return get_keys == 0 ? -1.0 : static_cast<double>(hits) / static_cast<double>(get_keys);
  }
  void add(const LoadCounters& other);
};

// One second of a run (or, for the last one, what is left of it), all workers merged.
struct IntervalStats {
  uint32_t second = 0;  // 1-based: covers (second - 1, second] seconds after the start
  double end_s = 0;     // when it ended, seconds after the start
  double length_s = 0;  // its length; 1 except for the last
  LoadCounters counters;
  LatencyHistogram latency;  // of the replies that completed in it

  void add(const IntervalStats& other) {
    counters.add(other.counters);
    latency.add(other.latency);
  }
};

}  // namespace mcring::bench
