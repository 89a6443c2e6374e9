// A non-blocking stream connection (TCP or unix) with input/output buffers, over two raw
// libevent events and two evbuffers (the semantics of a bufferevent, minus its costs: reads go
// straight into reserved buffer space without FIONREAD and 4 KiB chunks, and output is written
// at the end of the current batch of callbacks instead of after an EPOLLOUT round trip).
// With TLS (tls_context.h) the same connection runs OpenSSL over its socket: the handler sees
// the plaintext in input() and output() as before, and nothing above net knows the difference.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "proxy/common/socket_address.h"
#include "proxy/net/accept_backoff.h"
#include "proxy/net/buffer.h"
#include "proxy/net/event_loop.h"
#include "proxy/net/tls_context.h"

struct event;
struct evconnlistener;
struct ssl_st;

namespace mcring::net {

// Why a connection ended.
enum class CloseReason : uint8_t { Eof, Error, Timeout, ConnectFailed };

class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  virtual void onConnected() {}
  // New bytes are in input().
  virtual void onReadable() = 0;
  // Output drained below the low watermark set with setWriteLowWatermark (0: fully flushed).
  virtual void onWritable() {}
  // About to write output to the socket: last chance to complete what is being built in it.
  virtual void onBeforeWrite() {}
  // The connection is dead; the handler decides when to destroy it (not from inside this call).
  virtual void onClosed(CloseReason reason, int error) = 0;
};

class TcpConnection {
 public:
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  // Wraps an accepted socket; starts reading. keepalive: SO_KEEPALIVE, so dead clients are
  // noticed (twemproxy's tcpkeepalive).
  // tls (a server context): the client must open with a TLS handshake; a client that does
  // not, or whose certificate is refused, is closed (onClosed(Error), tlsError() says why); one
  // that has not finished it within tls->handshake_timeout_ms of now is closed with
  // onClosed(Timeout) (handshakeTimedOut()).
  static std::unique_ptr<TcpConnection> adopt(EventLoop& loop, int fd, ConnectionHandler* handler,
                                              bool keepalive = false,
                                              const TlsSetup* tls = nullptr);
  // Starts connecting; onConnected or onClosed(Error/Timeout) follows. tls (a client context):
  // onConnected comes once the TLS handshake is done too, both within timeout_ms; a failed
  // handshake closes with Error (tlsError() says why).
  static std::unique_ptr<TcpConnection> connect(EventLoop& loop,
                                                const common::SocketAddress& address,
                                                ConnectionHandler* handler, uint32_t timeout_ms,
                                                bool keepalive, const TlsSetup* tls = nullptr);

  Buffer& input() { return input_; }
  Buffer& output() { return output_; }

  void enableReading(bool on);
  // 0 disables. Fires onClosed(Timeout) when no byte arrives for that long while reading.
  void setReadTimeout(uint32_t ms);
  void setWriteLowWatermark(size_t bytes);
  // Stop reading once this many bytes wait in input (0: unlimited).
  void setReadHighWatermark(size_t bytes);
  // Detaches the handler and closes the socket now.
  void close();
  int fd() const { return fd_; }
  // The peer has closed its side (TCP CLOSE_WAIT; seen even while this connection is not
  // reading), and *unread = bytes still in the socket's receive queue. False for a peer that is
  // still sending, or a socket that is not TCP.
  bool peerFinished(uint64_t* unread) const;
  // Bytes of the peer's wait unread: in the socket's receive queue, or decrypted or buffered by
  // TLS. Together with an empty input(), the connection is at a request boundary.
  bool hasUnreadInput() const;
  bool isTls() const { return ssl_ != nullptr; }
  // Why the TLS layer failed (OpenSSL's reason), for the owner's log line; "" if it did not.
  const std::string& tlsError() const { return tls_error_; }
  // Closed because the client had not finished its TLS handshake in time (server side).
  bool handshakeTimedOut() const { return handshake_timed_out_; }

 private:
  friend class EventLoop;
  // Set while a libevent callback of this connection runs; the destructor marks every active
  // guard, so callbacks notice a handler that destroyed the connection.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"  // popped by ~Guard
#endif
  struct Guard {
    explicit Guard(TcpConnection* c) : conn(c), prev(c->guard_) { c->guard_ = this; }
    ~Guard() {
      if (!destroyed) {
        conn->guard_ = prev;
      }
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    TcpConnection* conn;
    Guard* prev;
    bool destroyed = false;
  };
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  TcpConnection(EventLoop& loop, int fd, ConnectionHandler* handler);
  static void onReadEvent(int fd, short what, void* arg);
  static void onWriteEvent(int fd, short what, void* arg);
  // Buffer hooks (buffer.h): output got bytes (schedules the flush); input lost some (resumes
  // reading below the high watermark).
  static void onOutputAdded(void* arg);
  static void onInputDrained(void* arg);
  static void onHandshakeDeadline(int fd, short what, void* arg);

  void handleRead(short what);
  void handleWrite(short what);
  void finishConnect(int error);
  // Writes what it can of the output (bounded); arms EV_WRITE if bytes remain. Returns false if
  // the connection was closed or destroyed meanwhile (then `this` must not be touched).
  bool writeOutput(Guard& g, bool after_connect);
  // Reads while `more` (the last read filled its room) up to the per-event bound, after `total`
  // bytes already read, then tells the handler and reports eof or error.
  void readInput(Guard& g, size_t total, bool eof, int error, bool more);
  bool adjustReadHint(size_t got, size_t room);
  // Room in the input for the next read: at most the read hint, what is left of the per-event
  // bound after `total`, and what the high watermark allows. Its pieces (1 or 2) in iov, their
  // total in *room; 0 at the high watermark, -1 out of memory.
  int reserveRead(size_t total, iovec* iov, size_t* room);
  // Ends a reservation of reserveRead, keeping the first `got` bytes read into it.
  void commitRead(const iovec* iov, int n, size_t got);
  // Not connecting, closing or waiting for EPOLLOUT: a write may go out now.
  bool canWriteNow() const;
  // The handler's last chance to complete what it builds in the output (onBeforeWrite).
  void beforeWrite();
  // After writing `written` bytes: arms EV_WRITE while bytes remain, tells the handler when the
  // output fell to its low watermark. Same return as writeOutput.
  bool afterWrite(Guard& g, size_t written, bool after_connect);
  // The socket I/O, plain or through OpenSSL. Both return bytes moved, 0 at EOF (reads), or -1
  // with errno set (EAGAIN when the socket, or TLS, must wait).
  ssize_t readSocket(iovec* iov, int n);
  ssize_t writeSocket(size_t want);
  bool startTls(const TlsSetup& tls, bool server);
  // Client side: drives the handshake after the TCP connect; finishConnect once it is done.
  void continueHandshake(Guard& g);
  // Records why OpenSSL failed and sets errno to EPROTO.
  void noteTlsFailure(int ssl_error);
  // Called by the loop at the end of a batch of callbacks.
  void flushQueued();
  // The loop's batched flush (io_batch.h), in place of flushQueued: queues a send of the
  // output's first pieces on `batch`; false if this connection writes by itself (TLS, not
  // writable now, nothing to write). completeBatchedSend takes the send's result.
  bool prepareBatchedSend(IoBatch& batch);
  void completeBatchedSend(int result);
  // The loop's batched reads: queues a receive into the input's free room; false if this
  // connection reads by itself now (TLS, not reading, input at the high watermark).
  // commitBatchedRead puts the bytes in the input (no callback); finishBatchedRead then goes on
  // as a read of them would (more reads if it filled its room, the handler, EOF or error).
  bool prepareBatchedRead(IoBatch& batch);
  // Reads by itself after all, as its readiness callback would have.
  void readQueued();
  void commitBatchedRead(int result);
  void finishBatchedRead();
  void fail(Guard& g, CloseReason reason, int error);
  void updateReadEvent();
  void setWriteArmed(bool on);
  bool alive(const Guard& g) const {
    return !g.destroyed && fd_ >= 0;
  }

  EventLoop* loop_ = nullptr;
  int fd_ = -1;
  event* read_ev_ = nullptr;
  event* write_ev_ = nullptr;
  ConnectionHandler* handler_ = nullptr;
  Buffer input_;
  Buffer output_;
  Guard* guard_ = nullptr;
  uint32_t read_timeout_ms_ = 0;
  uint32_t connect_timeout_ms_ = 0;
  size_t write_low_ = 0;
  size_t read_high_ = 0;
  size_t read_hint_ = 0;   // bytes to reserve for the next read; grows with full reads
  int connect_error_ = 0;  // an immediate connect failure, reported from the loop
  bool read_enabled_ = false;
  bool write_enabled_ = false;
  bool read_suspended_ = false;  // input at the high watermark
  bool read_armed_ = false;
  bool write_armed_ = false;
  bool connecting_ = false;
  bool flush_queued_ = false;
  bool in_before_write_ = false;  // bytes added by onBeforeWrite are written by this write
  bool in_send_batch_ = false;    // prepared on the loop's IoBatch, result not yet taken
  bool in_read_batch_ = false;    // queued for, or in, the loop's batched reads
  // The batched read's reservation in input_ and its result, from prepare to commit.
  iovec batch_read_iov_[2] = {};
  int batch_read_pieces_ = 0;
  size_t batch_read_room_ = 0;
  int batch_read_result_ = 0;
  // TLS: ssl_ is null on a plaintext connection.
  ssl_st* ssl_ = nullptr;
  // The last SSL_read wanted more bytes from the socket: what OpenSSL buffers is incomplete.
  bool tls_needs_socket_ = false;
  // OpenSSL holds bytes a readiness event will not announce (decrypted data, whole records).
  bool tlsBuffered() const;
  bool handshaking_ = false;  // client side: TCP connected, handshake not finished
  // Server side: fires if the client's handshake is not finished in time; freed once it is.
  event* handshake_deadline_ = nullptr;
  bool handshake_timed_out_ = false;
  bool read_wants_write_ = false;  // SSL_read needs the socket writable (retry on EV_WRITE)
  bool write_wants_read_ = false;  // SSL_write needs bytes from the peer (retry after a read)
  std::string tls_error_;
};

// Accepts connections on one address and hands each socket to a callback (main thread). A
// failed accept (out of descriptors) pauses it for a while instead of retrying at once
// (accept_backoff.h).
class Listener {
 public:
  using AcceptFn = std::function<void(int fd)>;
  ~Listener();
  static std::unique_ptr<Listener> open(EventLoop& loop, const common::SocketAddress& address,
                                        int backlog, bool reuseport, uint32_t unix_mode,
                                        AcceptFn fn, std::string* error);
  // A listening socket inherited from another process (an upgrade's hand-over, or systemd's
  // socket activation), already bound to `address` and listening; made non-blocking here.
  // owns_file: a unix socket whose file this process removes when it closes the listener (an
  // upgrade's; systemd's files are systemd's).
  static std::unique_ptr<Listener> adopt(EventLoop& loop, int fd,
                                         const common::SocketAddress& address, bool owns_file,
                                         AcceptFn fn, std::string* error);
  int fd() const;
  // Another process serves this socket now: closing the listener leaves a unix socket's file.
  void handOver() { unix_path_.clear(); }
  // Called with accept()'s errno for each failure (each one starts or lengthens a pause).
  void setAcceptErrorHandler(std::function<void(int err)> fn);
  void pause();
  void resume();

 private:
  Listener() = default;
  evconnlistener* listener_ = nullptr;
  std::unique_ptr<AcceptBackoff> backoff_;
  AcceptFn fn_;
  std::string unix_path_;
};

}  // namespace mcring::net
