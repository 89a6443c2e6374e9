// One connection from a worker to one memcached server, shared and pipelined by many clients.
//
// Requests are written in order and their expectations queued (inflight_); replies are framed
// unit by unit with the reply parser and delivered to the head expectation. Any fault (closed,
// timeout, garbage) fails exactly the requests in flight on this connection. Worker-thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "proxy/core/backend_failure.h"
#include "proxy/core/pending_request.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::core {

class BackendServer;

// Where a backend reply goes.
enum class Delivery : uint8_t {
  Direct,     // into the request's reply (single-key commands, single-backend gets)
  Fragment,   // one backend's share of a multi-key get
  Broadcast,  // flush_all: one OK expected from each backend
  // Warm migration (warmup.h); `fragment` carries the client key's index.
  Warmup,      // `mg <key> v f t c` to a multi-get key's previous server
  WarmMeta,    // the same for a client's `mg`
  WarmCopy,    // `ms ... ME` storing a fetched value on the key's new server
  Invalidate,  // `md <key>` on the previous server of a key being written or deleted
};

class BackendConnection : public net::ConnectionHandler {
 public:
  explicit BackendConnection(BackendServer& server);
  ~BackendConnection() override;

  enum class State : uint8_t { Closed, Connecting, Connected };
  State state() const { return state_; }
  bool idle() const { return inflight_.empty(); }
  size_t inflightCount() const { return inflight_.size(); }

  // Starts connecting if closed. Returns false if the connect could not even start.
  bool ensureConnected();
  // Where to write a request; valid after ensureConnected() returned true.
  net::Buffer& output() { return tcp_->output(); }
  // Records that the request just written (`bytes` long) expects a reply; takes one reference
  // on `r`.
  void expect(PendingRequest* r, uint32_t fragment, Delivery delivery, Expect expect,
              uint64_t bytes);

  // Fails everything in flight and closes (used on reload drain timeouts and shutdown).
  void abort(BackendFailure why);

  void onConnected() override;
  void onReadable() override;
  void onClosed(net::CloseReason reason, int error) override;

 private:
  struct InFlight {
    PendingRequest* req;
    uint32_t fragment;
    Delivery delivery;
    Expect expect;
    uint64_t sent_us;
  };
  // Result of handing one reply unit to the head expectation.
  enum class Step : uint8_t { More, Done, Desync };

  Step deliver(InFlight& f, const protocol::Reply& rep, std::string_view line);
  void finish(InFlight& f);
  void failAll(BackendFailure why);
  void updateTimeout();

  BackendServer& server_;
  std::unique_ptr<net::TcpConnection> tcp_;
  State state_ = State::Closed;
  bool timeout_armed_ = false;
  std::deque<InFlight> inflight_;
  protocol::ReplyParser parser_;
  uint32_t hits_in_reply_ = 0;  // VALUE units seen for the head retrieval
};

}  // namespace mcring::core
