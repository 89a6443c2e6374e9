// One connection from a worker to one memcached server, shared and pipelined by many clients
// (and by the pools that share its link, backend_link.h).
//
// Requests are written in order and their expectations queued (inflight_); replies are framed
// unit by unit with the reply parser and delivered to the head expectation. Any fault (closed,
// timeout, garbage) fails exactly the requests in flight on this connection. Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/reply_handler.h"
#include "proxy/common/ring_queue.h"
#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/protocol/reply_framer.h"

namespace mcring::core {

class BackendLink;
class BackendServer;

// The reply types the connection itself parses: where a backend reply goes. Anything else is a
// feature's, and goes to the ReplyHandler its request was sent with (reply_handler.h).
enum class Delivery : uint8_t {
  // Into the request's reply (single-key commands, single-backend gets). What its features make
  // of it is its DirectReplyObserver's (PendingRequest::observer, direct_reply_observer.h).
  Direct,
  Fragment,   // one backend's share of a multi-key get
  Broadcast,  // flush_all: one OK expected from each backend
  // `stats <view>` or `version`: the STAT/ITEM lines and their END (or the VERSION line, or an
  // error line) go to the fragment's values, which is marked done once the answer is whole.
  Stats,
  // The request's ReplyHandler decides (expect(r, handler, tag, ...)).
  Handler,
};

class BackendConnection : public net::ConnectionHandler {
 public:
  explicit BackendConnection(BackendLink& link);
  ~BackendConnection() override;

  enum class State : uint8_t { Closed, Connecting, Connected };
  State state() const { return state_; }
  BackendLink& link() const { return link_; }
  // The server (of its pool) of the request whose reply, failure or end is being handed to its
  // ReplyHandler or DirectReplyObserver: valid in those calls only.
  BackendServer& server() const { return *current_; }
  bool idle() const { return inflight_.empty() && replays_.empty() && held_.empty(); }
  size_t inflightCount() const { return inflight_.size(); }
  // Request bytes written here and not yet to the socket.
  uint64_t unsent() const { return (tcp_ ? tcp_->output().size() : 0) + held_output_.size(); }
  // Whether a request that may change an item (anything but a get/gets, a stats view or what its
  // ReplyHandler says does not: a warm-up read) is queued here and not yet answered. Hot-key spread
  // asks it of a key's own server when the key starts spreading (spread_write.h,
  // spreadStartsQuiet).
  bool changesInFlight() const;

  // Starts connecting if closed. Returns false if the connect could not even start.
  bool ensureConnected();
  // Where to write a request; valid after ensureConnected() returned true. Ends the shared
  // get line first, so a request written after it is never overtaken by its keys.
  net::Buffer& output() {
    endSharedLine();
    return wire();
  }
  // Sends fragment `fragment` of the get/gets request `r` (no exptime) and expects its reply.
  // Its keys join the line of the same command being built for this server in this pass of the
  // event loop, if there is one with room, or start one: memcached spends about 5 µs per
  // command and 1 µs per key, so one 16-key line costs it a fifth of 16 one-key lines. The
  // line ends when anything else is written to this server or just before the socket write.
  void sendSharedKeys(BackendServer& server, PendingRequest* r, uint32_t fragment,
                      std::string_view command);
  // Records that the request just written (`bytes` long), sent for `server` (the server of the
  // request's pool: it counts the request, its reply and its failure), expects a reply; takes
  // one reference on `r`.
  void expect(BackendServer& server, PendingRequest* r, uint32_t fragment, Delivery delivery,
              Expect expect, uint64_t bytes);
  // The same for a request whose units go to `handler` (Delivery::Handler; `tag` is handed back).
  void expect(BackendServer& server, PendingRequest* r, ReplyHandler& handler, uint32_t tag,
              Expect expect, uint64_t bytes);

  // Fails everything in flight and closes (on a timeout or a failed connect, when a drained
  // server is released, and at shutdown); counts towards the server's failures.
  void abort(BackendFailure why);

  void onConnected() override;
  void onReadable() override;
  void onBeforeWrite() override { endSharedLine(); }
  void onClosed(net::CloseReason reason, int error) override;

 private:
  // Queued in RingQueues (common/ring_queue.h), which allocate nothing once warm: with a deque,
  // a 3-key get's 3 of these allocated a 512-byte node every 4 requests (unit_alloc counts it).
  struct InFlight {
    PendingRequest* req;
    ReplyHandler* handler;  // Delivery::Handler, else null
    BackendServer* server;  // whose request it is (expect)
    uint64_t sent_us;
    uint32_t fragment;
    Delivery delivery;
    Expect expect;
    bool line_end = false;  // SharedLine: the last request of its line (the END is its)
    uint8_t replays = 0;    // times sent again after a connection closed under it
  };
  static_assert(sizeof(InFlight) == 40);
  // Result of handing one reply unit to the head expectation. Pass: the head is over and the
  // unit belongs to the next one (a shared line's VALUE for a later request's key, its END or
  // its error). Wait: the unit stays in the input, the connection pauses (a multi-get streaming
  // in key order cannot hold it yet: placeInOrder, turnCame).
  enum class Step : uint8_t { More, Done, Pass, Desync, Wait };
  enum class Take : uint8_t { Taken, NoMatch, Wait };

  // Most times one request is sent again (bounds the work of a server that keeps closing).
  static constexpr uint8_t kMaxReplays = 3;
  // Longest shared line (memcached reads a get line of up to 2 KB without reallocating).
  static constexpr size_t kMaxSharedLine = 2000;
  void endSharedLine();
  Step deliverShared(const InFlight& f, const protocol::Reply& rep, std::string_view line);
  Take takeValue(PendingRequest& r, Fragment& fr, std::string_view key, uint64_t n);
  void countMisses(const PendingRequest& r, const Fragment& fr);

  Step deliver(const InFlight& f, const protocol::Reply& rep, std::string_view line);
  void forward(PendingRequest& r, net::Buffer& sink, uint64_t n);
  // Where the unit for key idx of r, a multi-get over several fragments, goes.
  enum class Place : uint8_t { Drop, Stream, Hold, Wait, Refuse };
  Place placeInOrder(PendingRequest& r, uint32_t idx, uint64_t n);
  bool turnCame(const PendingRequest& r, RequestOwner& s) const;
  void giveUp(PendingRequest& r, RequestOwner& s);
  void refuse(PendingRequest& r);
  bool mustWait(PendingRequest& r);
  void pause();
  void checkPaused();
  bool othersWaitBehind(const RequestOwner* head) const;
  void resume();
  void finish(InFlight& f);
  void failFragment(PendingRequest& r, Fragment& fr, BackendFailure why,
                    std::string_view error_line);
  void failAll(BackendFailure why);
  void failEach(common::RingQueue<InFlight>& failed, BackendFailure why);
  // The server closed this connection (or its replies stopped making sense) while it was
  // connected: a working server does that because of what a request asked (see the .cc), so
  // this is not counted as the server's failure; retrievals are replayed, the rest fail.
  void closeUnexpectedly(BackendFailure why);
  bool replayable(const InFlight& f, bool head, bool alone) const;
  void resend(InFlight& f);
  void sendNextReplay();
  void closeSocket();
  void updateTimeout();
  // The server's answer to mcring's authentication (the first reply on the connection): true
  // once it said STORED; closes the connection if it refused.
  bool checkAuthReply();

  BackendLink& link_;
  BackendServer* current_ = nullptr;  // server()
  std::unique_ptr<net::TcpConnection> tcp_;
  State state_ = State::Closed;
  bool timeout_armed_ = false;
  bool auth_pending_ = false;  // mcring's authentication sent, its STORED not yet read
  common::RingQueue<InFlight> inflight_;
  // Requests to send again after an unexpected close, one at a time: the next goes once the
  // `replay_waits_for_` expectations queued up to the last one sent are answered. So a request
  // that makes memcached close the connection does so with no other replay in flight.
  common::RingQueue<InFlight> replays_;
  size_t replay_waits_for_ = 0;
  // Requests written while replays wait, and their bytes: they go to the socket once the last
  // replay is sent, so a client's `get k` replayed after a close is still answered before its
  // `set k` that came next (nothing overtakes a replay).
  common::RingQueue<InFlight> held_;
  net::Buffer held_output_;
  bool holding() const { return !replays_.empty(); }
  net::Buffer& wire() { return holding() ? held_output_ : tcp_->output(); }
  void flushHeld();
  protocol::ReplyFramer framer_;
  // Waiting for a client that streams a reply and has a full output (pause()), or, when
  // wait_bytes_ is not 0, for the turn of the wait_key_'s unit (wait_bytes_ long) of a multi-get
  // streaming in key order: it cannot be held now (placeInOrder).
  bool paused_ = false;
  uint64_t wait_bytes_ = 0;
  uint32_t wait_key_ = 0;
  uint32_t pause_stream_key_ = 0;    // the request's stream_key when it last moved
  uint64_t pause_progress_ns_ = 0;   // when the client's output last shrank
  uint64_t pause_output_ = 0;        // its size then
  uint64_t pause_started_ns_ = 0;    // this pause
  uint64_t pause_start_output_ = 0;  // the client's unsent output when this pause began
  // The request the connection paused for, how long it did in earlier pauses and how many bytes
  // its client drained during them.
  const PendingRequest* paused_for_ = nullptr;
  uint64_t paused_for_total_ns_ = 0;
  uint64_t paused_for_drained_ = 0;
  // Below this rate over its pauses, a client holding the connection while others wait is closed.
  static constexpr uint64_t kMinDrainBytesPerSec = 8 * 1024 * 1024;
  std::unique_ptr<net::Timer> resume_timer_;
  static constexpr uint64_t kPausePollMs = 2;
  uint32_t hits_in_reply_ = 0;       // VALUE units seen for the head retrieval
  std::string_view shared_command_;  // "get" or "gets" while a shared line is open, else empty
  size_t shared_length_ = 0;         // its length so far
};

}  // namespace mcring::core
