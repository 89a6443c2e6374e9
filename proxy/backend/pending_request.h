// One client request between being read and its reply being written, in the client's FIFO.
//
// Owned by the worker's RequestPool. Referenced by its session (until flushed, or until the
// session closes) and by every backend connection that still owes it a reply (`refs`), so a
// client that disconnects mid-request cannot leave a backend holding a dangling pointer.
// Worker-thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/read_failover_state.h"
#include "proxy/backend/replica_write_state.h"
#include "proxy/backend/route_state.h"
#include "proxy/backend/spread_state.h"
#include "proxy/backend/warm_request.h"
#include "proxy/net/buffer.h"
#include "proxy/protocol/binary_translation.h"
#include "proxy/protocol/command.h"
#include "proxy/protocol/reply.h"
#include "proxy/protocol/request_writer.h"
#include "proxy/stats/route_stats.h"

namespace mcring::core {

class BackendServer;
class DirectReplyObserver;
struct PendingRequest;
struct PoolRuntime;

// The client side of a request, as the layers below the session see it (ClientSession
// implements it): where a completed reply goes, and which pool and session it came from.
class RequestOwner {
 public:
  virtual ~RequestOwner() = default;
  // The request got its whole reply (called by backend connections).
  virtual void onRequestComplete(PendingRequest* r) = 0;
  virtual PoolRuntime& pool() = 0;
  virtual uint64_t id() const = 0;

  // The memory budget, as a request's reply units arrive (ClientSession documents it):
  // `r` is at the head of its FIFO and its reply can stream: held bytes go to the socket now,
  // later units through streamReply.
  virtual bool tryStream(PendingRequest& r) = 0;
  // Moves n bytes from `from` to the client's socket output (a streaming reply).
  virtual void streamReply(net::Buffer& from, uint64_t n) = 0;
  // Charges n more reply bytes held for `r`; false if that would pass a limit.
  virtual bool holdReply(PendingRequest& r, uint64_t n) = 0;
  // Whether holdReply(r, n) would succeed now (charges nothing).
  virtual bool canHold(const PendingRequest& r, uint64_t n) const = 0;
  // `r` streams a multi-get over several fragments: writes, from r.stream_key on, every unit
  // whose key's turn has come (held units to the socket, misses skipped).
  virtual void advanceStream(PendingRequest& r) = 0;
  // Gives back what `r` held.
  virtual void releaseHeld(PendingRequest& r) = 0;
  // Unsent output at the client's limit: a reply streaming to it must wait.
  virtual bool outputFull() const = 0;
  virtual uint64_t outputSize() const = 0;
  // How long a backend connection waits for this client to read before closing it.
  virtual uint32_t stallLimitMs() const = 0;
  // The client read nothing for stallLimitMs() while a backend connection waited on it.
  virtual void closeSlowReader() = 0;
  // The pool freed memory for large requests being received (the worker wakes waiters).
  virtual void onInputBudget() = 0;
  // Waiting for input memory: if the client has closed its side and the request it is sending
  // can no longer complete, close the session (true).
  virtual bool abandonIfPeerGone() = 0;
  // Holding input memory for a request that received nothing for a while (others wait for it):
  // close the session (true).
  virtual bool abandonIfInputStalled(uint64_t now_ns) = 0;
};

// What a backend reply to this request looks like.
enum class Expect : uint8_t {
  OneUnit,     // one reply unit: a line, or a VA line with its data block
  Retrieval,   // VALUE units until END
  UntilNoop,   // a quiet meta request followed by `mn`: zero or one unit, then MN
  SharedLine,  // a get/gets fragment whose keys share one line with other requests' keys:
               // VALUE units for its keys; the line's END (or error) ends them all
};

// How a request's parts make up its reply.
enum class Shape : uint8_t {
  Direct,     // one backend's reply is the client's reply
  Multiget,   // fragments reassembled in key order
  Broadcast,  // flush_all: one OK from every backend
  Stats,      // a stats view: every backend's answer kept in its fragment, merged by dispatch
};

// Part of a multi-key get that went to one backend.
struct Fragment {
  uint32_t server = 0;                // index in the pool's server list
  std::vector<uint32_t> key_indices;  // client key positions sent to this backend, in order
  uint32_t next_match = 0;            // next position in key_indices a VALUE may match
  uint32_t hits = 0;                  // VALUE units matched
  net::Buffer values;                 // VALUE units received, in key order
  bool done = false;
  const BackendServer* warm_from = nullptr;  // a warm-up fragment: the keys' previous server
  // Its server was unavailable and its keys not hit were answered as misses
  // (dispatch/unavailable.h): they take no warm-up second hop.
  bool unavailable = false;
  // Read failover: its server failed (why) or answered an error; its keys not hit go on to
  // their next replica when the request's parts have all answered (dispatch/failover.h).
  bool failed = false;
  BackendFailure failure = BackendFailure::Unavailable;

  // For reuse (the vectors keep their capacity); `server` is set by whoever reuses it.
  void clear() {
    key_indices.clear();
    next_match = 0;
    hits = 0;
    values.drain(values.size());
    done = false;
    warm_from = nullptr;
    unavailable = false;
    failed = false;
  }
};

struct PendingRequest {
  RequestOwner* session = nullptr;  // null once the client is gone
  // The pool its keys were routed to: the session's own, or a route's (a routed listener's).
  // Null for requests answered without a pool (local answers). A worker's pools outlive requests.
  PoolRuntime* pool = nullptr;
  uint32_t refs = 0;
  // Backend replies still owed (fragments, warm-up fetches and copies, invalidations); the
  // request completes when it reaches 0.
  uint32_t fragments_left = 0;
  Shape shape = Shape::Direct;
  protocol::Command command = protocol::Command::Get;
  bool complete = false;
  bool close_after = false;  // quit / framing lost: close once this reply is written
  bool noreply = false;      // classic noreply: drop every non-error reply
  bool failed = false;       // multi-get / broadcast: some part failed; error_line says how
  std::string error_line;    // with "\r\n"
  uint32_t key_count = 0;    // retrieval: keys asked (hit/miss accounting)
  // Traced for the watch stream or the slow-request log (stats/request_watch.h,
  // stats/slow_requests.h): set at dispatch only while a client watches or the pool has
  // slow_request_ms; 0: not traced, and the trace_ fields are empty.
  uint64_t start_ns = 0;
  uint32_t trace_keys = 0;
  std::string trace_key;                // the first key, raw
  std::string trace_backend;            // host:port of the first server it was sent to
  std::string trace_route;              // a routed listener's route
  std::array<char, 16> trace_status{};  // the first token of its reply, once seen
  uint8_t trace_status_length = 0;
  net::Buffer reply;  // the bytes to write when this request reaches the FIFO head

  // Memory budget (ClientSession): reply bytes held for this request and charged to its client
  // until it leaves the FIFO; held_reserve of them are charged to the pool's replies_reserve.
  uint64_t held = 0;
  uint64_t held_reserve = 0;
  // At the FIFO head: reply units go straight to the client's socket as they arrive.
  bool streaming = false;
  // A streaming multi-get over several fragments: the client key whose unit is written next
  // (every earlier key's unit is written, or it missed). A later key's unit that arrives first is
  // held in its fragment, or, if holding it would pass a limit, its backend connection waits.
  uint32_t stream_key = 0;
  // Refused memory: its reply is memcached's out-of-memory error; units still arriving are
  // dropped.
  bool refused = false;
  // The reply may be rewritten when complete (a warm-up invalidation's DELETED): never streamed.
  bool rewrites = false;

  // unavailable_reads (dispatch/unavailable.h). A Direct get/gets/gat/gats or quiet mg: the
  // reply units received so far (kept, then END, if its backend fails and the read is answered
  // as a miss). An mg: its miss in the client's format (protocol/meta_miss.h), set at dispatch.
  uint32_t units_received = 0;
  std::string meta_miss;

  // A Direct request safe to send twice (backend_connection.cc, replayable): its bytes as sent,
  // to send again if its connection closes under it. Empty: never replayed.
  std::string resend;

  // Multi-get only.
  std::string line;                      // copy of the client's line; keys index into it
  std::vector<uint32_t> key_offsets;     // key i = line.substr(key_offsets[2i], key_offsets[2i+1])
  std::vector<uint32_t> key_fragment;    // fragment of client key i
  std::vector<uint64_t> key_hit_length;  // bytes of key i's VALUE unit, 0 = miss
  // A multi-get across routes whose fragments carry keys of several pools (their servers share
  // a link, backend_link.h): key i's own pool's server, which counts its hit or miss. Empty
  // otherwise (a fragment's keys are its server's).
  std::vector<BackendServer*> key_server;
  std::vector<Fragment> fragments;
  uint32_t fragment_count = 0;  // fragments in use (vector keeps capacity)
  protocol::Span exptime;       // gat/gats: the exptime token in `line`

  // Warm migration (dispatch/warmup.h): a read whose moved keys may take a second hop, or a
  // write that invalidated the key's previous server (warm_request.h; null: neither).
  WarmRequest* warm = nullptr;

  // A binary client's request (binary.active): its reply, meta or text, is translated to the
  // binary response when written (ClientSession::writeReply); never streamed.
  protocol::BinaryContext binary;
  // Hot-key spread (backend/hot_spread.h): its role for a spread key, or a get's keys served by
  // a copy (spread_state.h; null: the request has nothing to do with a spread key).
  SpreadState* spread = nullptr;

  // Replication: a write sent to every replica of its key (backend/replica_write.h;
  // replica_write_state.h; null: not a replicated write). Never streamed (rewrites): the
  // client's reply is composed from the replicas'.
  ReplicaWrite* replica = nullptr;
  uint64_t return_flush_mark = 0;  // a return flush_all: the missed-write count it covers

  // Read failover (dispatch/failover.h): a read of a pool with replicas > 1 (read_failover_state.h;
  // null: not a replicated read). A Direct one (mg) keeps what it needs to go again to the key's
  // next replica. Never streamed (rewrites).
  ReadFailover* read_failover = nullptr;

  // What its features make of its Direct replies (direct_reply_observer.h): set by dispatch
  // with the feature state that needs it; null: the connection only forwards them.
  const DirectReplyObserver* observer = nullptr;

  // Routes: the state of a request a route sent (route_state.h; null: not routed).
  RouteState* route = nullptr;
  // A Direct request whose server failed or was unavailable: its reply is mcring's (the
  // failure, a miss by unavailable_reads, or nothing for classic noreply), not the server's.
  bool backend_failed = false;

  void reset() {
    if (start_ns != 0) {
      start_ns = 0;
      trace_keys = 0;
      trace_key.clear();
      trace_backend.clear();
      trace_route.clear();
      trace_status_length = 0;
    }
    session = nullptr;
    pool = nullptr;
    RouteState::release(route);
    backend_failed = false;
    refs = 0;
    fragments_left = 0;
    complete = false;
    close_after = false;
    noreply = false;
    failed = false;
    key_count = 0;
    error_line.clear();
    reply.drain(reply.size());
    held = 0;
    held_reserve = 0;
    streaming = false;
    stream_key = 0;
    refused = false;
    rewrites = false;
    resend.clear();
    units_received = 0;
    meta_miss.clear();
    line.clear();
    key_offsets.clear();
    key_fragment.clear();
    key_hit_length.clear();
    key_server.clear();
    shape = Shape::Direct;
    exptime = protocol::Span();
    WarmRequest::release(warm);
    observer = nullptr;
    binary.active = false;
    SpreadState::release(spread);
    ReplicaWrite::release(replica);
    ReadFailover::release(read_failover);
    for (uint32_t i = 0; i < fragment_count; ++i) {
      fragments[i].clear();
    }
    fragment_count = 0;
  }
};

// Key i of a multi-get (its bytes live in r.line).
inline std::string_view multigetKey(const PendingRequest& r, uint32_t i) {
  return std::string_view(r.line).substr(r.key_offsets[2 * i], r.key_offsets[2 * i + 1]);
}

// What r is to a spread key (SpreadRole::None without spread state).
inline SpreadRole spreadRole(const PendingRequest& r) {
  return r.spread != nullptr ? r.spread->role : SpreadRole::None;
}

// Whether r is a read whose moved keys may take a warm-up second hop (warm_request.h).
inline bool warmHops(const PendingRequest& r) {
  return r.warm != nullptr && r.warm->hops;
}

// Whether r, a write of a moved key, found the key at its previous server (its md hit there).
inline bool warmInvalidatedHit(const PendingRequest& r) {
  return r.warm != nullptr && r.warm->invalidated_hit;
}

// Whether a part of multi-get r that fails is settled on completion, where its keys may go on
// elsewhere: a replicated read's to their next replicas (dispatch/failover.h), a routed get's
// to their routes' failover pools (dispatch/route_failover.h).
inline bool defersFragmentFailures(const PendingRequest& r) {
  return r.read_failover != nullptr || (r.route != nullptr && r.route->defersFragmentFailures());
}

// Writes fragment fr of multi-get r to `out` as its own line (the request's command, its
// exptime for gat/gats, the fragment's keys); returns the bytes written.
inline size_t writeFragmentLine(net::Buffer& out, const PendingRequest& r, const Fragment& fr) {
  protocol::RequestWriter get(out);
  get.verb(r.command);
  if (r.exptime.length > 0) {
    get.arg(r.exptime.in(r.line));
  }
  get.args(fr.key_indices, [&r](uint32_t idx) { return multigetKey(r, idx); });
  get.end();
  return get.written();
}

// A multi-get whose units must be reordered (several fragments): assembled whole while holding
// it fits the budget; at the FIFO head, past that, streamed in key order (stream_key).
inline bool multigetInKeyOrder(const PendingRequest& r) {
  return r.shape == Shape::Multiget && r.fragment_count > 1;
}

// Whether multi-get key i's fragment has answered it (its unit arrived, or it missed: a later
// key of the fragment matched, or the fragment ended).
inline bool multigetKeyAnswered(const PendingRequest& r, uint32_t i) {
  const Fragment& fr = r.fragments[r.key_fragment[i]];
  return fr.done || (fr.next_match > 0 && fr.key_indices[fr.next_match - 1] >= i);
}

// Where a VALUE unit for fragment `fr` of r goes as it arrives. A lone fragment (every key on one
// server, the usual single-key get) answers in the client's key order already, so its units go
// straight into r.reply instead of being copied twice; a warm get may add fragments later, so
// it always collects per fragment, and so does a replicated read (its fragments may fail over).
inline net::Buffer& multigetValueSink(PendingRequest& r, Fragment& fr) {
  return r.fragment_count == 1 && !warmHops(r) && !r.rewrites ? r.reply : fr.values;
}

// Recycles PendingRequests (and their buffers' and vectors' capacity): no allocation per request
// once warm.
class RequestPool {
 public:
  ~RequestPool() {
    for (PendingRequest* r : free_) {
      delete r;
    }
  }
  PendingRequest* acquire() {
    if (free_.empty()) {
      return new PendingRequest();
    }
    PendingRequest* r = free_.back();
    free_.pop_back();
    return r;
  }
  // Drops one reference; recycles the request when none is left.
  void release(PendingRequest* r) {
    if (--r->refs == 0) {
      r->reset();
      if (free_.size() < kMaxFree) {
        free_.push_back(r);
      } else {
        delete r;
      }
    }
  }

 private:
  static constexpr size_t kMaxFree = 4096;
  std::vector<PendingRequest*> free_;
};

}  // namespace mcring::core
