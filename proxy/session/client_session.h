// One client connection: parses its requests, routes each to a backend (or answers it), and
// writes the replies back in request order however the backends interleave.
//
// Pipelining: requests are framed (protocol::RequestFramer) and dispatched as fast as they
// arrive; replies wait in the FIFO until every earlier one is written. The head's reply streams
// to the socket as its units arrive. Memory budget: reply bytes held for the client and unsent
// output count against client_buffer_limit and the pool's buffer_limit; at half of the client's
// limit, or with too many requests outstanding, the client is no longer read; a reply that would
// pass a limit is refused (memcached's out-of-memory error), unless it is the head's multi-get
// over several servers (then written in key order as its turns come: advanceStream) or the
// client holds almost nothing (then charged to the pool's reserve); a request larger than 32 KiB
// being received needs a reservation from the pool, or waits unread. Worker-thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/request_source.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/protocol/binary_framer.h"
#include "proxy/protocol/binary_translation.h"
#include "proxy/protocol/request.h"
#include "proxy/protocol/request_framer.h"
#include "proxy/session/session_context.h"
#include "proxy/stats/request_watch.h"

namespace mcring::core {

class BackendServer;

class ClientSession final : public net::ConnectionHandler, public RequestSource {
 public:
  ClientSession(SessionContext& worker, PoolRuntime& pool, uint64_t id,
                std::shared_ptr<std::atomic<uint32_t>> open_count);
  ~ClientSession() override;
  // tls: the listener's context, when the client came through a TLS listener.
  bool attach(int fd, const net::TlsSetup* tls = nullptr);

  // A request of this session got its whole reply (called by backend connections).
  void onRequestComplete(PendingRequest* r) override;

  // --- RequestSource: what dispatch uses ---
  PendingRequest* newRequest(protocol::Command command) override;
  void completeWith(PendingRequest* r, std::string_view reply) override;
  // While a binary request is dispatched, its meta translation (binary side).
  net::Buffer& input() override {
    return dispatch_input_ != nullptr ? *dispatch_input_ : tcp_->input();
  }
  void stopReading() override { closing_ = true; }
  bool beginWatch() override;
  // Shutdown or pool removal: stop reading, finish what is in flight, then close.
  void beginDrain();
  // An upgrade handed the listeners to a new process: keep serving this client, and close it at
  // the first moment it has no request in flight, no reply unwritten and no byte of a further
  // request received (never in the middle of a pipeline). The worker's grace period bounds it.
  void beginHandover();
  // Closes the session if it is handing over and at such a moment; true if it closed.
  bool closeIfHandedOver();
  bool closed() const { return closed_; }
  // Most bytes this client ever had buffered (to decide whether to give memory back).
  uint64_t peakBuffered() const { return peak_buffered_; }

  // --- memory budget, used by backend connections as reply units arrive ---
  // `r` (this session's) is at the FIFO head and its reply can stream: its held bytes go to the
  // socket now and later units go there directly (streamReply).
  bool tryStream(PendingRequest& r) override;
  // Moves n bytes from `from` to the socket's output (r streaming).
  void streamReply(net::Buffer& from, uint64_t n) override;
  // Charges n more reply bytes held for `r`; false if that would pass a limit: the client's
  // own, or the pool's, unless the client holds almost nothing (kSmallClient) and the pool's
  // reserve has room.
  bool holdReply(PendingRequest& r, uint64_t n) override;
  bool canHold(const PendingRequest& r, uint64_t n) const override;
  void advanceStream(PendingRequest& r) override;
  // A client whose held replies and unsent output stay within this may use the pool's reserve.
  static constexpr uint64_t kSmallClient = 64 * 1024;
  // Gives back what `r` held (it left the FIFO, or its bytes were dropped).
  void releaseHeld(PendingRequest& r) override;
  // Unsent output at the client's limit: a reply streaming to it must wait.
  bool outputFull() const override;
  uint64_t outputSize() const override;
  // Its output made no progress for a long time while a backend connection waited on it.
  void closeSlowReader() override;
  // 1 s; 100 ms while the pool is over its budget (shed the non-readers faster: every one of
  // them holds the shared backend connection in turn).
  uint32_t stallLimitMs() const override;
  static constexpr uint32_t kStallLimitMs = 1000;
  static constexpr uint32_t kStallLimitOverBudgetMs = 100;
  // The pool freed memory for large requests being received (Worker).
  void onInputBudget() override;
  bool abandonIfPeerGone() override;
  bool abandonIfInputStalled(uint64_t now_ns) override;
  // Bytes a client may have of a request being received without a reservation.
  static constexpr uint64_t kInputAllowance = 32 * 1024;
  // A reservation whose request received nothing for this long while others wait is given up.
  static constexpr uint64_t kInputStallNs = 1000000000;
  // Unsent output a streaming reply may always reach, even with the pool over its budget.
  static constexpr uint64_t kOutputFloor = 256 * 1024;
  // A session that had this much buffered gives memory back to the OS when it goes (Worker).
  static constexpr uint64_t kTrimAfterPeak = 2 * 1024 * 1024;
  PoolRuntime& pool() override { return *pool_; }
  uint64_t id() const override { return id_; }
  // client_idle_timeout, called by the worker's periodic sweep with a monotonic clock: closes
  // the session (and returns true) once no sweep has seen it busy (a request read, in flight or
  // with reply bytes unwritten) for the pool's timeout.
  bool closeIfIdle(uint64_t now_ms);
  // client_request_timeout, called by the same sweep: closes the session (and returns true) once
  // part of one request has been waiting for the rest for the pool's timeout, counted from the
  // first sweep that saw it. A client mcring is not reading (held back by its own replies, or
  // waiting for memory for a large request) is not waited on.
  bool closeIfRequestStalled(uint64_t now_ms);

  void onReadable() override;
  void onWritable() override;
  void onClosed(net::CloseReason reason, int error) override;

  // Requests in flight beyond which a client is no longer read.
  static constexpr size_t kMaxPending = 256;

 private:
  void processInput();
  // The request at the front of the input needs `need` bytes in all (0: its line has not ended).
  void wantInput(uint64_t need);
  // Top clients (stats/client_table.h): a request read, bytes written to the client.
  void countClientRequest(uint64_t bytes_in) {
    if (!client_.current()) [[unlikely]] {
      client_ = worker_.clients().acquire(client_address_);  // its slot went to another address
    }
    stats::countRequest(client_, bytes_in);
  }
  void countWritten(uint64_t n) {
    stats::bump(worker_.counters().bytes_written, n);
    if (client_.current()) {
      stats::countWritten(client_, n);
    }
  }
  void releaseInput();
  void syncOutput();
  uint64_t clientLimit() const { return pool_->config().client_buffer_limit; }
  bool streamable(const PendingRequest& r) const;
  // Where holding n more bytes would be charged: 1 the pool's budget, 2 its reserve, 0 nowhere.
  int holdFrom(uint64_t n) const;
  // Gives back n of the bytes `r` holds (a held unit written by advanceStream).
  void releasePart(PendingRequest& r, uint64_t n);
  void rejectRequest(const protocol::Request& req);
  // client_auth_file: answers `frame` as memcached does before authentication (client_auth.h).
  void authenticate(const protocol::RequestFrame& frame);
  bool mustAuthenticate() const {
    return !authenticated_ && pool_->topology->client_credentials != nullptr;
  }
  // The binary protocol (client_session_binary.cc): a connection whose first byte is 0x80.
  // Frames one packet; false when it needs more input.
  bool processBinaryPacket(net::Buffer& in);
  void dispatchBinary(net::Buffer& in, uint64_t length);
  // meta_req_ (parsed from t.line) is routed by req's key when that went as a stand-in.
  void routeByBinaryKey(const protocol::BinaryTranslation& t, const protocol::BinaryRequest& req);
  void rejectBinary();
  // Moves r's reply to `out`, translated to a binary response for a binary client's request.
  void writeReply(PendingRequest& r, net::Buffer& out);
  // The n bytes at the front of `from`, one whole reply unit, as the binary response to `ctx`.
  void writeBinaryUnit(const protocol::BinaryContext& ctx, net::Buffer& from, uint64_t n,
                       net::Buffer& out);
  void flush();
  // The watch stream and traced requests (client_session_watch.cc).
  // Moves the watcher's lines to the socket while its output is under kWatchOutput.
  void pumpWatch();
  void endWatch();
  // A traced request (start_ns != 0) leaves the FIFO: to the watchers and the slow log.
  void traceDone(PendingRequest& r);
  // The first token of a traced request's reply, from the first of its bytes seen.
  void noteStatus(PendingRequest& r, net::Buffer& from, uint64_t n);
  const std::string& clientAddress();
  static constexpr uint64_t kWatchOutput = 64 * 1024;
  bool throttled() const;
  void updateReading();
  void close();
  void releaseSlot();
  void dropFifo();

  SessionContext& worker_;
  PoolRuntime* pool_;
  uint64_t id_;
  std::shared_ptr<std::atomic<uint32_t>> open_count_;
  std::unique_ptr<net::TcpConnection> tcp_;
  std::deque<PendingRequest*> fifo_;
  protocol::Request req_;
  protocol::RequestFramer framer_;
  // Decided on the connection's first byte, as memcached does.
  enum class Wire : uint8_t { Unknown, Text, Binary };
  Wire wire_ = Wire::Unknown;
  bool binary_refused_ = false;  // a binary client of a pool that requires authentication
  protocol::BinaryFramer binary_framer_;
  protocol::BinaryRequest binary_req_;
  protocol::BinaryTranslation binary_translation_;
  protocol::BinaryResponse binary_response_;
  // The request being dispatched came from a binary packet: newRequest gives it this context.
  protocol::BinaryContext binary_pending_;
  net::Buffer meta_input_;  // a binary request's meta translation, while dispatched
  protocol::Request meta_req_;
  net::Buffer* dispatch_input_ = nullptr;
  Dispatcher dispatcher_;
  uint64_t held_ = 0;            // reply bytes held in this session's requests (budget)
  uint64_t output_charged_ = 0;  // output bytes charged to the pool's budget at the last sync
  uint64_t input_reserved_ = 0;  // reservation for a large request being received
  uint64_t input_need_ = 0;      // that request's whole size
  uint64_t input_seen_ = 0;      // input bytes at the last look, and when they last grew
  uint64_t input_progress_ns_ = 0;
  bool waiting_input_ = false;     // in the pool's input_waiters
  uint64_t requests_ = 0;          // requests read so far
  uint64_t idle_requests_ = 0;     // requests_ at the last idle sweep
  uint64_t idle_since_ms_ = 0;     // last sweep that saw it busy; 0: none yet
  uint64_t partial_requests_ = 0;  // requests_ when the partial request was first seen
  uint64_t partial_since_ms_ = 0;  // sweep that first saw it; 0: no partial request
  mutable uint64_t peak_buffered_ = 0;
  std::string client_address_;  // the peer's address without port ("unix" for a socket file)
  stats::ClientRef client_;
  bool reading_ = true;
  bool read_eof_ = false;
  bool draining_ = false;
  bool handing_over_ = false;  // beginHandover
  bool closing_ = false;       // a quit / fatal error reply is queued: read nothing more
  bool closed_ = false;
  bool in_process_ = false;
  bool authenticated_ = false;  // client_auth_file: this connection has authenticated
  // A watcher (beginWatch): its buffer in the hub, and the slot its wake-ups find it through
  // (cleared when the session ends; posted wake-ups hold it).
  std::shared_ptr<stats::Watcher> watcher_;
  std::shared_ptr<ClientSession*> watch_slot_;
  std::string watch_lines_;    // scratch: lines taken from the watcher
  std::string trace_address_;  // peer address with port, for traced requests (filled once)
};

}  // namespace mcring::core
