// One client connection: parses its requests, routes each to a backend (or answers it), and
// writes the replies back in request order however the backends interleave.
//
// Pipelining: requests are read and dispatched as fast as they arrive; replies wait in the FIFO
// until every earlier one is written. Back-pressure: a client that does not read its replies, or
// has too many requests outstanding, stops being read until it catches up. Worker-thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/protocol/request.h"
#include "proxy/session/session_context.h"

namespace mcring::core {

class BackendServer;

class ClientSession final : public net::ConnectionHandler, public RequestOwner {
 public:
  ClientSession(SessionContext& worker, PoolRuntime& pool, uint64_t id,
                std::shared_ptr<std::atomic<uint32_t>> open_count);
  ~ClientSession() override;
  bool attach(int fd);

  // A request of this session got its whole reply (called by backend connections).
  void onRequestComplete(PendingRequest* r) override;
  // Shutdown or pool removal: stop reading, finish what is in flight, then close.
  void beginDrain();
  bool closed() const { return closed_; }
  // Most reply bytes this client ever had waiting (to decide whether to give memory back).
  uint64_t peakBuffered() const { return peak_buffered_; }
  PoolRuntime& pool() override { return *pool_; }
  uint64_t id() const override { return id_; }
  // client_idle_timeout, called by the worker's periodic sweep with a monotonic clock: closes
  // the session (and returns true) once no sweep has seen it busy (a request read, in flight or
  // with reply bytes unwritten) for the pool's timeout.
  bool closeIfIdle(uint64_t now_ms);

  void onReadable() override;
  void onWritable() override;
  void onClosed(net::CloseReason reason, int error) override;

  // Limits on what one client may have outstanding before it is no longer read: requests in
  // flight, and reply bytes waiting for it (written-out or still queued behind an earlier
  // request). Memory per client is bounded by kMaxOutputBytes plus the replies of at most
  // kMaxPending requests already sent when the limit was reached.
  static constexpr size_t kMaxPending = 256;
  static constexpr size_t kMaxOutputBytes = 4 * 1024 * 1024;

 private:
  void processInput();
  void dispatch(std::string_view line);
  void dispatchKeyed(std::string_view line);
  void dispatchRetrieval(std::string_view line);
  void dispatchMultiget(std::string_view line, bool warm);
  // The current get/gets goes out with its keys in lines shared with other requests
  // (coalesce_gets; gat/gats carry an exptime and keep lines of their own).
  bool coalescing() const {
    return pool_->config().coalesce_gets &&
           (req_.command == protocol::Command::Get || req_.command == protocol::Command::Gets);
  }
  void invalidatePrevious(PendingRequest* r, BackendServer& prev, std::string_view line);
  void dispatchFlushAll(std::string_view line);
  void answerLocal(std::string_view line);
  void invalidateKey(std::string_view line);
  void countForBackend(BackendServer& server, std::string_view key);
  void failUnavailable(PendingRequest* r, BackendServer& server, uint64_t bytes);
  PendingRequest* newRequest();
  void completeWith(PendingRequest* r, std::string_view reply);
  void rejectRequest(const protocol::Request& req);
  void flush();
  bool throttled() const;
  void updateReading();
  void close();
  void releaseSlot();
  size_t consumedLength() const;

  SessionContext& worker_;
  PoolRuntime* pool_;
  uint64_t id_;
  std::shared_ptr<std::atomic<uint32_t>> open_count_;
  std::unique_ptr<net::TcpConnection> tcp_;
  std::deque<PendingRequest*> fifo_;
  protocol::Request req_;
  std::vector<uint32_t> routes_;      // scratch: server of each key of a multi-get
  std::vector<int32_t> fragment_of_;  // scratch: fragment of each server, -1 if none
  uint64_t swallow_ = 0;              // bytes of a rejected data block still to discard
  uint64_t queued_reply_bytes_ = 0;   // replies complete but waiting behind an earlier one
  uint64_t requests_ = 0;             // requests read so far
  uint64_t idle_requests_ = 0;        // requests_ at the last idle sweep
  uint64_t idle_since_ms_ = 0;        // last sweep that saw it busy; 0: none yet
  mutable uint64_t peak_buffered_ = 0;
  size_t scanned_ = 0;  // input already searched for "\n" without success
  bool reading_ = true;
  bool read_eof_ = false;
  bool draining_ = false;
  bool closing_ = false;  // a quit / fatal error reply is queued: read nothing more
  bool closed_ = false;
  bool in_process_ = false;
};

}  // namespace mcring::core
