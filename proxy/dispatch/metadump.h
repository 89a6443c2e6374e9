// `lru_crawler metadump <classes|all|hash>` for a pool: every server's dump, in pool order, closed
// by one END (what key listers read). For a routed listener: every server of the pools its routes
// serve from, each once (serving_pools.h).
//
// memcached hands the connection a metadump arrives on to its crawler thread: it answers no
// request pipelined after it, and none before it may still await a reply ("ERROR cannot
// pipeline other commands before metadump"). So a dump never travels over the shared, pipelined
// backend connections: it asks the servers one after another, each over a connection of its
// own (send the one line, read to END, close), and streams each server's dump lines to the
// client as they arrive, like a streaming get reply: only at the head of the client's FIFO, and
// only while the client's unsent output is under its limit; otherwise it stops reading the
// server (memcached's crawler waits for it), so a dump of any size costs the client's output
// limit, not its size. A server that cannot be reached, errs or goes quiet for longer than the
// idle limit is left out and counted (stats_fetch_failures), as in the merged stats views; one
// that fails mid-dump leaves the whole lines it sent. Allowed only where the pool sets
// `allow_dump`.
//
// A server's crawler runs one dump at a time, so a worker runs one dump at a time too and
// queues the rest (bounded by every client's cap on requests in flight): a client that
// pipelines a thousand dumps costs each server one connection, not a thousand. A queued dump
// keeps its servers' addresses, not the pool, which a reload may retire meanwhile.
// Worker-thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/worker_context.h"
#include "proxy/common/socket_address.h"
#include "proxy/net/event_loop.h"

namespace mcring::core {

class Metadumps {
 public:
  // A server that sends nothing for this long (or the pool's timeout, if longer) is left out.
  static constexpr uint32_t kIdleMs = 5000;

  explicit Metadumps(WorkerContext& worker);
  ~Metadumps();
  Metadumps(const Metadumps&) = delete;
  Metadumps& operator=(const Metadumps&) = delete;

  // Answers `r` (in its client's FIFO, its line drained): `line` is the request line as the
  // client sent it, with its terminator.
  void answer(PoolRuntime& pool, PendingRequest* r, std::string_view line);

  size_t queued() const { return queue_.size(); }

 private:
  class Dump;
  friend class Dump;
  // A dump waiting for its turn (holding a reference on its request).
  struct Queued {
    PendingRequest* r;
    std::string line;
    std::vector<common::SocketAddress> servers;
    uint32_t timeout_ms;
  };
  // Dumps finish inside their connections' callbacks; they are destroyed from the loop, and the
  // next queued one starts then.
  void retire();
  void startNext();

  WorkerContext& worker_;
  std::unique_ptr<Dump> active_;
  std::deque<Queued> queue_;
  net::Timer reaper_;
};

}  // namespace mcring::core
