// TcpConnection over raw events and evbuffers; Listener over evconnlistener.
//
// TcpConnection keeps a bufferevent's observable behaviour (callbacks, watermarks, timeouts,
// close reasons, writing on after EOF) but does its own I/O:
// - reads go straight into space reserved at the end of the input evbuffer, sized from the
//   previous reads (4 KiB up to 64 KiB), with no FIONREAD ioctl; a read that fills its space is
//   followed by another, up to kMaxReadPerEvent per readiness event;
// - output is written at the end of the current batch of callbacks (EventLoop::onFlush), so
//   everything produced for a connection while handling one epoll_wait result goes out in one
//   writev, and EV_WRITE is armed only when the socket is full (EAGAIN or a short write).
//
// TLS: OpenSSL reads and writes the socket itself (SSL_set_fd); the plaintext goes to and from
// the same evbuffers, read into reserved space as above and written from the output's chunks
// (pulled up to one 16 KiB record when they are small, so small replies do not each become a
// record and a syscall). What differs from plaintext is only when to retry: SSL_read may need
// the socket writable (read_wants_write_), SSL_write may need a read (write_wants_read_), and
// OpenSSL may hold decrypted bytes that no readiness event will announce (SSL_has_pending).
#include "proxy/net/tcp_connection.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "proxy/net/io_batch.h"
#include "proxy/net/unix_socket_file.h"

namespace mcring::net {

namespace {

// Reservations are sized so that a fresh evbuffer chain (rounded up to a power of two with its
// header) stays at 4..64 KiB: larger chunks would be mmap'ed by malloc.
constexpr size_t kChainOverhead = 128;
constexpr size_t kReadMin = 4096 - kChainOverhead;
constexpr size_t kReadMax = 65536 - kChainOverhead;
// Fairness bounds per readiness event (as bufferevent's max_single_write was raised to).
constexpr size_t kMaxReadPerEvent = 256 * 1024;
constexpr size_t kMaxWritePerEvent = 256 * 1024;
// A TLS record's plaintext: output chunks smaller than this are pulled up to it before writing.
constexpr size_t kTlsRecord = 16 * 1024;
constexpr size_t kTlsSmallChunk = 4096;

timeval toTimeval(uint32_t ms) {
  return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

}  // namespace

TcpConnection::TcpConnection(EventLoop& loop, int fd, ConnectionHandler* handler)
    : loop_(&loop), fd_(fd), handler_(handler), read_hint_(kReadMin) {
  read_ev_ = event_new(loop.raw(), fd, EV_READ | EV_PERSIST, &TcpConnection::onReadEvent, this);
  write_ev_ = event_new(loop.raw(), fd, EV_WRITE | EV_PERSIST, &TcpConnection::onWriteEvent, this);
  // Buffer hooks, not evbuffer callbacks: those would also run for every read and write of the
  // socket below (buffer.h).
  output_.setHooks(&TcpConnection::onOutputAdded, nullptr, this);
  input_.setHooks(nullptr, &TcpConnection::onInputDrained, this);
}

TcpConnection::~TcpConnection() {
  close();
  for (Guard* g = guard_; g != nullptr; g = g->prev) {
    g->destroyed = true;
  }
}

bool TcpConnection::hasUnreadInput() const {
  if (fd_ < 0) {
    return false;
  }
  if (ssl_ != nullptr && tlsBuffered()) {
    return true;
  }
  int queued = 0;
  return ::ioctl(fd_, FIONREAD, &queued) == 0 && queued > 0;
}

bool TcpConnection::peerFinished(uint64_t* unread) const {
  if (fd_ < 0) {
    return false;
  }
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
      info.tcpi_state != TCP_CLOSE_WAIT) {
    return false;
  }
  int pending = 0;
  if (::ioctl(fd_, FIONREAD, &pending) != 0) {
    return false;
  }
  *unread = pending > 0 ? static_cast<uint64_t>(pending) : 0;
  if (ssl_ != nullptr && SSL_has_pending(ssl_)) {
    // OpenSSL read ahead of what it decrypted: at most a record and its header, counted as if
    // all of it were request bytes (the owner only closes if what is unread cannot complete).
    *unread += 20 * 1024;
  }
  return true;
}

bool TcpConnection::tlsBuffered() const {
  return ssl_ != nullptr && !tls_needs_socket_ && SSL_has_pending(ssl_) == 1;
}

void TcpConnection::close() {
  if (fd_ >= 0) {
    if (flush_queued_) {
      loop_->cancelFlush(this);
      flush_queued_ = false;
    }
    if (in_send_batch_ || in_read_batch_) {
      loop_->cancelBatched(this);
      in_send_batch_ = in_read_batch_ = false;
    }
    output_.setHooks(nullptr, nullptr, nullptr);
    input_.setHooks(nullptr, nullptr, nullptr);
    event_free(read_ev_);
    event_free(write_ev_);
    read_ev_ = write_ev_ = nullptr;
    if (handshake_deadline_ != nullptr) {
      event_free(handshake_deadline_);
      handshake_deadline_ = nullptr;
    }
    if (ssl_ != nullptr) {
      // close_notify, best effort (the socket is non-blocking; nothing waits for the peer's).
      if (!handshaking_ && SSL_is_init_finished(ssl_) && tls_error_.empty()) {
        SSL_shutdown(ssl_);
      }
      SSL_free(ssl_);
      ssl_ = nullptr;
      ERR_clear_error();
    }
    ::close(fd_);
    fd_ = -1;
    read_armed_ = write_armed_ = false;
    read_enabled_ = write_enabled_ = false;
  }
  handler_ = nullptr;
}

bool TcpConnection::startTls(const TlsSetup& tls, bool server) {
  if (!tls.context) {
    return false;
  }
  ssl_ = SSL_new(tls.context->raw());
  if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
    return false;
  }
  if (server) {
    SSL_set_accept_state(ssl_);
    return true;
  }
  SSL_set_connect_state(ssl_);
  const std::string& name = tls.peer_name;
  if (!name.empty()) {
    in6_addr ip;
    bool is_ip =
        inet_pton(AF_INET, name.c_str(), &ip) == 1 || inet_pton(AF_INET6, name.c_str(), &ip) == 1;
    if (!is_ip) {
      SSL_set_tlsext_host_name(ssl_, name.c_str());  // SNI is for names only (RFC 6066)
    }
    if (tls.context->verifies()) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
      if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1
                : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) != 1) {
        return false;
      }
    }
  }
  return true;
}

void TcpConnection::noteTlsFailure(int ssl_error) {
  std::string why = tlsErrorText();
  if (ssl_error == SSL_ERROR_SSL && ssl_ != nullptr && SSL_get_verify_result(ssl_) != X509_V_OK) {
    why = std::string("certificate verify failed: ") +
          X509_verify_cert_error_string(SSL_get_verify_result(ssl_));
  }
  if (why.empty()) {
    why = ssl_error == SSL_ERROR_SYSCALL ? std::string("connection reset during TLS")
                                         : "TLS error " + std::to_string(ssl_error);
  }
  if (tls_error_.empty()) {
    tls_error_ = std::move(why);
  }
  errno = EPROTO;
}

std::unique_ptr<TcpConnection> TcpConnection::adopt(EventLoop& loop, int fd,
                                                    ConnectionHandler* handler, bool keepalive,
                                                    const TlsSetup* tls) {
  evutil_make_socket_nonblocking(fd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (keepalive) {
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  }
  std::unique_ptr<TcpConnection> conn(new TcpConnection(loop, fd, handler));
  if (conn->read_ev_ == nullptr || conn->write_ev_ == nullptr) {
    return nullptr;  // the destructor closes fd
  }
  if (tls != nullptr && !conn->startTls(*tls, /*server=*/true)) {
    return nullptr;
  }
  if (tls != nullptr && tls->handshake_timeout_ms > 0) {
    // A deadline for the whole handshake, not a gap between reads: a client that drips a byte
    // now and then is closed too.
    conn->handshake_deadline_ =
        evtimer_new(loop.raw(), &TcpConnection::onHandshakeDeadline, conn.get());
    const timeval tv = toTimeval(tls->handshake_timeout_ms);
    if (conn->handshake_deadline_ == nullptr || evtimer_add(conn->handshake_deadline_, &tv) != 0) {
      return nullptr;
    }
  }
  conn->read_enabled_ = true;
  conn->write_enabled_ = true;
  conn->updateReadEvent();
  return conn;
}

std::unique_ptr<TcpConnection> TcpConnection::connect(EventLoop& loop,
                                                      const common::SocketAddress& address,
                                                      ConnectionHandler* handler,
                                                      uint32_t timeout_ms, bool keepalive,
                                                      const TlsSetup* tls) {
  int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return nullptr;
  }
  int one = 1;
  if (!address.isUnix()) {
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (keepalive) {
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
  }
  std::unique_ptr<TcpConnection> conn(new TcpConnection(loop, fd, handler));
  if (conn->read_ev_ == nullptr || conn->write_ev_ == nullptr) {
    return nullptr;
  }
  if (tls != nullptr && !conn->startTls(*tls, /*server=*/false)) {
    return nullptr;
  }
  conn->read_enabled_ = true;
  conn->write_enabled_ = true;
  conn->connecting_ = true;
  conn->connect_timeout_ms_ = timeout_ms;
  int r = ::connect(fd, address.get(), static_cast<socklen_t>(address.length));
  if (r != 0) {
    int e = errno;
    if (e == ECONNREFUSED) {
      // Reported from the loop as an error, as bufferevent_socket_connect does.
      conn->connect_error_ = e;
    } else if (e != EINPROGRESS && e != EINTR) {
      // Immediate failure (e.g. unix socket missing): the caller treats nullptr as a failed
      // connect.
      return nullptr;
    }
  }
  // Completion (or an immediate result, r == 0 on unix sockets) is handled by the write event;
  // while connecting, its timeout is the connect timeout.
  if (timeout_ms > 0) {
    timeval tv = toTimeval(timeout_ms);
    event_add(conn->write_ev_, &tv);
  } else {
    event_add(conn->write_ev_, nullptr);
  }
  conn->write_armed_ = true;
  if (r == 0 || conn->connect_error_ != 0) {
    event_active(conn->write_ev_, EV_WRITE, 0);
  }
  return conn;
}

void TcpConnection::updateReadEvent() {
  if (fd_ < 0) {
    return;
  }
  bool want = read_enabled_ && !read_suspended_ && !connecting_;
  if (want) {
    // Re-adding resets the timeout, as bufferevent does on enable.
    if (read_timeout_ms_ > 0) {
      timeval tv = toTimeval(read_timeout_ms_);
      event_add(read_ev_, &tv);
    } else if (!read_armed_) {
      event_add(read_ev_, nullptr);
    }
    read_armed_ = true;
    if (tlsBuffered()) {
      // Decrypted (or buffered) bytes that no readiness event will announce.
      event_active(read_ev_, EV_READ, 0);
    }
  } else if (read_armed_) {
    event_del(read_ev_);
    read_armed_ = false;
  }
}

void TcpConnection::setWriteArmed(bool on) {
  if (on == write_armed_ || fd_ < 0) {
    return;
  }
  write_armed_ = on;
  if (on) {
    event_add(write_ev_, nullptr);
  } else {
    event_del(write_ev_);
  }
}

void TcpConnection::enableReading(bool on) {
  if (fd_ < 0 || on == read_enabled_) {
    return;
  }
  read_enabled_ = on;
  updateReadEvent();
}

void TcpConnection::setReadTimeout(uint32_t ms) {
  if (fd_ < 0 || (ms == 0 && read_timeout_ms_ == 0)) {
    return;
  }
  read_timeout_ms_ = ms;
  if (!read_armed_) {
    return;
  }
  if (ms == 0) {
    event_remove_timer(read_ev_);
  } else {
    timeval tv = toTimeval(ms);
    event_add(read_ev_, &tv);
  }
}

void TcpConnection::setWriteLowWatermark(size_t bytes) {
  write_low_ = bytes;
}

void TcpConnection::setReadHighWatermark(size_t bytes) {
  read_high_ = bytes;
  if (fd_ < 0) {
    return;
  }
  bool over = bytes != 0 && input_.size() >= bytes;
  if (over != read_suspended_) {
    read_suspended_ = over;
    updateReadEvent();
  }
}

void TcpConnection::onInputDrained(void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (!self->read_suspended_ || self->fd_ < 0) {
    return;
  }
  if (self->read_high_ == 0 || self->input_.size() < self->read_high_) {
    self->read_suspended_ = false;
    self->updateReadEvent();
  }
}

void TcpConnection::onOutputAdded(void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (self->flush_queued_ || self->write_armed_ || !self->write_enabled_ || self->connecting_ ||
      self->fd_ < 0 || self->in_before_write_) {
    return;
  }
  self->flush_queued_ = true;
  self->loop_->scheduleFlush(self);
}

bool TcpConnection::canWriteNow() const {
  return fd_ >= 0 && write_enabled_ && !connecting_ && !write_armed_;
}

void TcpConnection::beforeWrite() {
  if (handler_ != nullptr) {
    in_before_write_ = true;
    handler_->onBeforeWrite();
    in_before_write_ = false;
  }
}

void TcpConnection::flushQueued() {
  flush_queued_ = false;
  if (!canWriteNow()) {
    return;
  }
  Guard g(this);
  writeOutput(g, false);
}

bool TcpConnection::prepareBatchedSend(IoBatch& batch) {
  if (!canWriteNow() || ssl_ != nullptr) {
    return false;
  }
  beforeWrite();
  evbuffer* out = output_.raw();
  const size_t len = evbuffer_get_length(out);
  if (len == 0) {
    return false;
  }
  const size_t want = std::min(len, kMaxWritePerEvent);
  static_assert(IoBatch::kMaxPieces <= 16);
  evbuffer_iovec vec[IoBatch::kMaxPieces];
  const int n =
      std::min(evbuffer_peek(out, static_cast<ev_ssize_t>(want), nullptr, vec, IoBatch::kMaxPieces),
               IoBatch::kMaxPieces);
  iovec* iov = batch.pieces();
  size_t room = want;
  int k = 0;
  for (; k < n && room > 0; ++k) {
    iov[k].iov_base = vec[k].iov_base;
    iov[k].iov_len = std::min(vec[k].iov_len, room);
    room -= iov[k].iov_len;
  }
  batch.add(IoBatch::Op::Send, fd_, k);
  flush_queued_ = false;
  in_send_batch_ = true;
  return true;
}

void TcpConnection::completeBatchedSend(int result) {
  in_send_batch_ = false;
  Guard g(this);
  evbuffer* out = output_.raw();
  if (result > 0) {
    evbuffer_drain(out, static_cast<size_t>(result));
    if (evbuffer_get_length(out) == 0) {
      afterWrite(g, static_cast<size_t>(result), false);
      return;
    }
  }
  // Bytes left, the socket full or failed: the plain path sees it again (and arms EV_WRITE,
  // writes what the pieces did not cover, or reports the error).
  if (canWriteNow()) {
    writeOutput(g, false);
  }
}

void TcpConnection::onHandshakeDeadline(int, short, void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (self->fd_ < 0 || self->ssl_ == nullptr || SSL_is_init_finished(self->ssl_)) {
    return;
  }
  Guard g(self);
  self->handshake_timed_out_ = true;
  self->fail(g, CloseReason::Timeout, ETIMEDOUT);
}

void TcpConnection::onReadEvent(int, short what, void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  // Plain readable sockets are read together at the end of the pass (EventLoop::readBatched);
  // TLS, handshakes and timeouts read here.
  if (what == EV_READ && self->loop_->batch_io_ && self->ssl_ == nullptr && !self->handshaking_) {
    if (!self->in_read_batch_) {
      self->loop_->queueRead(self);
    }
    return;
  }
  self->handleRead(what);
}

void TcpConnection::onWriteEvent(int, short what, void* arg) {
  static_cast<TcpConnection*>(arg)->handleWrite(what);
}

void TcpConnection::fail(Guard& g, CloseReason reason, int error) {
  // After EOF the peer may still read: keep writing so pending replies reach it.
  read_enabled_ = false;
  if (reason != CloseReason::Eof) {
    write_enabled_ = false;
    setWriteArmed(false);
    if (flush_queued_) {
      loop_->cancelFlush(this);
      flush_queued_ = false;
    }
  }
  updateReadEvent();
  if (handler_ != nullptr && alive(g)) {
    handler_->onClosed(reason, error);
  }
}

void TcpConnection::handleRead(short what) {
  Guard g(this);
  if (handshaking_) {
    if ((what & EV_TIMEOUT) && !(what & EV_READ)) {
      fail(g, CloseReason::Timeout, ETIMEDOUT);
      return;
    }
    event_del(read_ev_);
    read_armed_ = false;
    continueHandshake(g);
    return;
  }
  if ((what & EV_TIMEOUT) && !(what & EV_READ) && !tlsBuffered()) {
    // libevent processes expired timers after polling and reports them alone, so when this
    // thread was not scheduled for longer than the timeout (a loaded host, a paused VM), bytes
    // that arrived meanwhile look like a timeout. Look before failing.
    char byte;
    ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      fail(g, CloseReason::Timeout, ETIMEDOUT);
      return;
    }
  }
  readInput(g, 0, false, 0, true);
}

void TcpConnection::readInput(Guard& g, size_t total, bool eof, int error, bool more) {
  evbuffer* in = input_.raw();
  while (more && total < kMaxReadPerEvent) {
    iovec iov[2];
    size_t room = 0;
    const int n = reserveRead(total, iov, &room);
    if (n == 0) {
      break;  // at the high watermark
    }
    if (n < 0) {
      error = ENOMEM;
      break;
    }
    ssize_t r = readSocket(iov, n);
    if (r < 0) {
      int e = errno;
      commitRead(iov, n, 0);
      if (e == EINTR) {
        continue;
      }
      if (e != EAGAIN && e != EWOULDBLOCK) {
        error = e;
      }
      break;
    }
    if (r == 0) {
      commitRead(iov, n, 0);
      eof = true;
      break;
    }
    size_t got = static_cast<size_t>(r);
    commitRead(iov, n, got);
    total += got;
    if (!adjustReadHint(got, room) && !tlsBuffered()) {
      // The socket is (very likely) drained: the next read would only say EAGAIN. (A TLS read
      // returns at most a record, so there it is drained only if OpenSSL holds nothing more;
      // the socket itself, level-triggered, will be reported again if it has more.)
      break;
    }
  }
  if (read_high_ != 0 && evbuffer_get_length(in) >= read_high_ && !read_suspended_) {
    read_suspended_ = true;
    updateReadEvent();
  }
  if (ssl_ != nullptr) {
    if (handshake_deadline_ != nullptr && SSL_is_init_finished(ssl_)) {
      event_free(handshake_deadline_);  // (a server-side handshake is driven by the reads)
      handshake_deadline_ = nullptr;
    }
    if (read_armed_ && tlsBuffered()) {
      event_active(read_ev_, EV_READ, 0);  // the per-event bound stopped it: go on next pass
    }
    if (write_wants_read_ && write_enabled_ && !connecting_) {
      write_wants_read_ = false;
      if (!writeOutput(g, false)) {
        return;
      }
    }
  }
  if (total > 0 && handler_ != nullptr) {
    handler_->onReadable();
    if (!alive(g)) {
      return;
    }
    if (eof && !read_armed_) {
      // The handler stopped reading (throttled) with bytes still in input: as with a
      // bufferevent, the EOF is reported once it reads again (the socket stays readable).
      return;
    }
  }
  if (eof) {
    fail(g, CloseReason::Eof, 0);
  } else if (error != 0) {
    fail(g, CloseReason::Error, error);
  }
}

// Reads grow toward what arrives (a full read doubles the next one's room) and shrink when a
// read fills less than a quarter. True if the read filled its room (more may be waiting).
int TcpConnection::reserveRead(size_t total, iovec* iov, size_t* room) {
  evbuffer* in = input_.raw();
  size_t want = std::min(read_hint_, kMaxReadPerEvent - total);
  if (read_high_ != 0) {
    const size_t len = evbuffer_get_length(in);
    if (len >= read_high_) {
      return 0;
    }
    want = std::min(want, read_high_ - len);
  }
  evbuffer_iovec vec[2];
  const int n = evbuffer_reserve_space(in, static_cast<ev_ssize_t>(want), vec, 2);
  if (n <= 0) {
    return -1;
  }
  *room = 0;
  for (int i = 0; i < n; ++i) {
    iov[i].iov_base = vec[i].iov_base;
    iov[i].iov_len = std::min(vec[i].iov_len, want - *room);
    *room += iov[i].iov_len;
  }
  return n;
}

void TcpConnection::commitRead(const iovec* iov, int n, size_t got) {
  const int kept = got > 0 ? n : 0;
  evbuffer_iovec vec[2];
  for (int i = 0; i < n; ++i) {
    vec[i].iov_base = iov[i].iov_base;
    vec[i].iov_len = std::min(got, iov[i].iov_len);
    got -= vec[i].iov_len;
  }
  evbuffer_commit_space(input_.raw(), vec, kept);
}

bool TcpConnection::adjustReadHint(size_t got, size_t room) {
  if (got < room) {
    if (got * 4 < read_hint_ && read_hint_ > kReadMin) {
      read_hint_ = std::max(kReadMin, (read_hint_ + kChainOverhead) / 2 - kChainOverhead);
    }
    return false;
  }
  if (room == read_hint_ && read_hint_ < kReadMax) {
    read_hint_ = std::min(kReadMax, (read_hint_ + kChainOverhead) * 2 - kChainOverhead);
  }
  return true;
}

void TcpConnection::readQueued() {
  in_read_batch_ = false;
  if (read_armed_) {  // (its reading may have stopped since its readiness was reported)
    handleRead(EV_READ);
  }
}

bool TcpConnection::prepareBatchedRead(IoBatch& batch) {
  if (fd_ < 0 || !read_enabled_ || !read_armed_ || read_suspended_ || ssl_ != nullptr ||
      handshaking_ || connecting_) {
    return false;
  }
  // At the high watermark (0) or out of memory (-1), the plain path suspends or fails.
  const int n = reserveRead(0, batch_read_iov_, &batch_read_room_);
  if (n <= 0) {
    return false;
  }
  std::copy(batch_read_iov_, batch_read_iov_ + n, batch.pieces());
  batch_read_pieces_ = n;
  batch.add(IoBatch::Op::Recv, fd_, n);
  in_read_batch_ = true;
  return true;
}

void TcpConnection::commitBatchedRead(int result) {
  batch_read_result_ = result;
  commitRead(batch_read_iov_, batch_read_pieces_, result > 0 ? static_cast<size_t>(result) : 0);
}

void TcpConnection::finishBatchedRead() {
  in_read_batch_ = false;
  if (!read_armed_) {
    // Another connection's handler stopped this one's reading after the receive: as if its
    // readiness had not been reported yet. The bytes wait in the input for the handler, which
    // looks there when it reads again; an EOF or error is reported by the next read.
    return;
  }
  Guard g(this);
  const int r = batch_read_result_;
  if (r > 0) {
    const auto got = static_cast<size_t>(r);
    readInput(g, got, false, 0, adjustReadHint(got, batch_read_room_));
  } else if (r == 0) {
    readInput(g, 0, true, 0, false);
  } else if (r == -EAGAIN || r == -EINTR) {
    readInput(g, 0, false, 0, false);  // nothing after all; epoll reports the socket again
  } else {
    readInput(g, 0, false, -r, false);
  }
}

void TcpConnection::finishConnect(int error) {
  Guard g(this);
  if (error != 0) {
    fail(g, CloseReason::Error, error);
    return;
  }
  if (ssl_ != nullptr && !SSL_is_init_finished(ssl_)) {
    if (!handshaking_) {
      handshaking_ = true;
      event_del(write_ev_);  // the TCP connect's wait; the handshake arms its own
      write_armed_ = false;
    }
    continueHandshake(g);
    return;
  }
  connecting_ = false;
  // The connect timeout is over; read timeouts are set per request by the owner.
  event_del(write_ev_);
  write_armed_ = false;
  updateReadEvent();
  if (handler_ != nullptr) {
    handler_->onConnected();
    if (!alive(g)) {
      return;
    }
  }
  if (write_enabled_) {
    writeOutput(g, true);
  }
}

void TcpConnection::continueHandshake(Guard& g) {
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    handshaking_ = false;
    if (read_armed_) {
      event_del(read_ev_);  // armed with the handshake's timeout
      read_armed_ = false;
    }
    finishConnect(0);
    return;
  }
  int e = SSL_get_error(ssl_, r);
  // Each wait of the handshake gets the connect timeout (a handshake is two round trips).
  timeval tv = toTimeval(connect_timeout_ms_);
  const timeval* timeout = connect_timeout_ms_ > 0 ? &tv : nullptr;
  if (e == SSL_ERROR_WANT_READ) {
    event_add(read_ev_, timeout);
    read_armed_ = true;
    return;
  }
  if (e == SSL_ERROR_WANT_WRITE) {
    event_add(write_ev_, timeout);
    write_armed_ = true;
    return;
  }
  noteTlsFailure(e);
  fail(g, CloseReason::Error, EPROTO);
}

// Plain sockets: recv/send for one piece, readv/writev for several. A socket's own calls skip
// the file layer that readv/writev go through (import_iovec, rw_verify_area, fdget_pos: ~3% of a
// pipeline-1 get's CPU, bench/results/perf-profile.md), and one piece is the common case (a
// client's request, its reply, a backend's batch).
ssize_t TcpConnection::readSocket(iovec* iov, int n) {
  if (ssl_ == nullptr) {
    return n == 1 ? ::recv(fd_, iov[0].iov_base, iov[0].iov_len, 0) : ::readv(fd_, iov, n);
  }
  if (!tls_error_.empty()) {
    errno = EPROTO;
    return -1;
  }
  size_t total = 0;
  for (int i = 0; i < n; ++i) {
    size_t got = 0;
    ERR_clear_error();
    int r = SSL_read_ex(ssl_, iov[i].iov_base, iov[i].iov_len, &got);
    tls_needs_socket_ = false;
    if (r == 1) {
      total += got;
      if (got < iov[i].iov_len) {
        break;
      }
      continue;
    }
    int e = SSL_get_error(ssl_, r);
    int saved = errno;
    if (e == SSL_ERROR_WANT_WRITE) {
      read_wants_write_ = true;  // retried from the write event
      setWriteArmed(true);
    } else if (e == SSL_ERROR_SSL || (e == SSL_ERROR_SYSCALL && saved == 0)) {
      noteTlsFailure(e);  // reported now, or by the next call if bytes came first
    }
    if (total > 0) {
      return static_cast<ssize_t>(total);
    }
    if (e == SSL_ERROR_WANT_READ) {
      // What OpenSSL holds (read ahead) is part of a record, or of a handshake message: only
      // the socket can complete it, and it will say so. Re-activating on SSL_has_pending here
      // spun the worker at 100% on a client that sent one byte of a ClientHello.
      tls_needs_socket_ = true;
    }
    switch (e) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
      case SSL_ERROR_ZERO_RETURN:
        return 0;  // close_notify, or (SSL_OP_IGNORE_UNEXPECTED_EOF) a plain close
      case SSL_ERROR_SYSCALL:
        errno = saved != 0 ? saved : EPROTO;
        return -1;
      default:
        errno = EPROTO;
        return -1;
    }
  }
  return static_cast<ssize_t>(total);
}

ssize_t TcpConnection::writeSocket(size_t want) {
  evbuffer* out = output_.raw();
  if (ssl_ == nullptr) {
    evbuffer_iovec first;
    if (evbuffer_peek(out, -1, nullptr, &first, 1) == 1 && first.iov_len >= want) {
      const ssize_t r = ::send(fd_, first.iov_base, want, MSG_NOSIGNAL);
      if (r > 0) {
        evbuffer_drain(out, static_cast<size_t>(r));
      }
      return r;
    }
    return evbuffer_write_atmost(out, fd_, static_cast<ev_ssize_t>(want));
  }
  if (!tls_error_.empty()) {
    errno = EPROTO;
    return -1;
  }
  // A retried SSL_write must be given the same first bytes, and at least as many: both hold,
  // since nothing is drained before it succeeds and the output only grows at its end.
  size_t done = 0;
  while (done < want) {
    evbuffer_iovec v;
    if (evbuffer_peek(out, -1, nullptr, &v, 1) < 1) {
      break;
    }
    size_t n = std::min(v.iov_len, want - done);
    const void* p = v.iov_base;
    const size_t len = evbuffer_get_length(out);
    if (n < kTlsSmallChunk && len > v.iov_len) {
      n = std::min({len, kTlsRecord, want - done});
      p = evbuffer_pullup(out, static_cast<ev_ssize_t>(n));
    }
    size_t wrote = 0;
    ERR_clear_error();
    int r = SSL_write_ex(ssl_, p, n, &wrote);
    if (r == 1) {
      evbuffer_drain(out, wrote);
      done += wrote;
      continue;
    }
    int e = SSL_get_error(ssl_, r);
    int saved = errno;
    if (e == SSL_ERROR_WANT_READ) {
      write_wants_read_ = true;  // retried after the next read
    } else if (e != SSL_ERROR_WANT_WRITE && !(e == SSL_ERROR_SYSCALL && saved != 0)) {
      noteTlsFailure(e);
    }
    if (done > 0) {
      break;
    }
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      errno = EAGAIN;
    } else {
      errno = e == SSL_ERROR_SYSCALL && saved != 0 ? saved : EPROTO;
    }
    return -1;
  }
  return static_cast<ssize_t>(done);
}

void TcpConnection::handleWrite(short what) {
  if (handshaking_) {
    Guard g(this);
    if (what & EV_TIMEOUT) {
      fail(g, CloseReason::Timeout, ETIMEDOUT);
      return;
    }
    event_del(write_ev_);
    write_armed_ = false;
    continueHandshake(g);
    return;
  }
  if (read_wants_write_) {
    read_wants_write_ = false;
    if (read_armed_) {
      event_active(read_ev_, EV_READ, 0);
    }
  }
  if (connecting_) {
    if (what & EV_TIMEOUT) {
      Guard g(this);
      fail(g, CloseReason::Timeout, ETIMEDOUT);
      return;
    }
    int error = connect_error_;
    if (error == 0) {
      socklen_t len = sizeof(error);
      if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0) {
        error = errno;
      }
      if (error == EINPROGRESS || error == EINTR) {
        return;  // not yet
      }
    }
    finishConnect(error);
    return;
  }
  Guard g(this);
  if (!write_enabled_) {
    setWriteArmed(false);
    return;
  }
  writeOutput(g, false);
}

bool TcpConnection::writeOutput(Guard& g, bool after_connect) {
  beforeWrite();
  evbuffer* out = output_.raw();
  size_t written = 0;
  int error = 0;
  while (written < kMaxWritePerEvent) {
    size_t len = evbuffer_get_length(out);
    if (len == 0) {
      break;
    }
    size_t want = std::min(len, kMaxWritePerEvent - written);
    ssize_t r = writeSocket(want);
    if (r < 0) {
      int e = errno;
      if (e == EINTR) {
        continue;
      }
      if (e != EAGAIN && e != EWOULDBLOCK) {
        error = e;
      }
      break;
    }
    if (r == 0) {
      break;
    }
    written += static_cast<size_t>(r);
    if (static_cast<size_t>(r) < want) {
      // A short write: the socket buffer is full (or the writev hit its iovec limit; then the
      // EV_WRITE below fires at once).
      break;
    }
  }
  if (error != 0) {
    fail(g, CloseReason::Error, error);
    return false;
  }
  return afterWrite(g, written, after_connect);
}

bool TcpConnection::afterWrite(Guard& g, size_t written, bool after_connect) {
  evbuffer* out = output_.raw();
  // Bytes left (socket full, or the per-event bound reached): wait for EPOLLOUT.
  // (Not while TLS waits for a read: the socket is writable, SSL_write would only say so again.)
  setWriteArmed(evbuffer_get_length(out) > 0 && !write_wants_read_);
  if ((written > 0 || after_connect) && handler_ != nullptr &&
      evbuffer_get_length(out) <= write_low_) {
    handler_->onWritable();
    if (!alive(g)) {
      return false;
    }
  }
  return alive(g);
}

Listener::~Listener() {
  backoff_.reset();  // its timer must not re-enable a freed listener
  if (listener_ != nullptr) {
    evconnlistener_free(listener_);
  }
  if (!unix_path_.empty()) {
    removeOwnSocket(unix_path_);
  }
}

std::unique_ptr<Listener> Listener::open(EventLoop& loop, const common::SocketAddress& address,
                                         int backlog, bool reuseport, uint32_t unix_mode,
                                         AcceptFn fn, std::string* error) {
  std::unique_ptr<Listener> l(new Listener());
  l->fn_ = std::move(fn);
  unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
  if (!address.isUnix()) {
    flags |= LEV_OPT_REUSEABLE;
    if (reuseport) {
      flags |= LEV_OPT_REUSEABLE_PORT;
    }
  } else {
    std::string refused;
    if (!removeStaleSocket(address.toString(), &refused)) {
      if (error != nullptr) {
        *error = refused;
      }
      return nullptr;
    }
    l->unix_path_ = address.toString();
  }
  l->listener_ = evconnlistener_new_bind(
      loop.raw(),
      [](evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
        auto* self = static_cast<Listener*>(arg);
        self->backoff_->accepted();
        self->fn_(fd);
      },
      l.get(), flags, backlog, address.get(), static_cast<int>(address.length));
  if (l->listener_ == nullptr) {
    if (error != nullptr) {
      *error = "cannot listen on " + address.toString() + ": " + std::strerror(errno);
    }
    l->unix_path_.clear();
    return nullptr;
  }
  if (address.isUnix() && unix_mode != 0) {
    ::chmod(l->unix_path_.c_str(), unix_mode);
  }
  l->backoff_ =
      std::make_unique<AcceptBackoff>(loop, l->listener_, "listener " + address.toString());
  return l;
}

std::unique_ptr<Listener> Listener::adopt(EventLoop& loop, int fd,
                                          const common::SocketAddress& address, bool owns_file,
                                          AcceptFn fn, std::string* error) {
  std::unique_ptr<Listener> l(new Listener());
  l->fn_ = std::move(fn);
  // Accepts run until EAGAIN: a blocking socket (systemd passes them so) would stall the loop.
  if (evutil_make_socket_nonblocking(fd) != 0 || evutil_make_socket_closeonexec(fd) != 0) {
    *error =
        "cannot use the inherited socket of " + address.toString() + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  // Backlog 0: listen() is not called again; the socket keeps the queue it was opened with.
  l->listener_ = evconnlistener_new(
      loop.raw(),
      [](evconnlistener*, evutil_socket_t client, sockaddr*, int, void* arg) {
        auto* self = static_cast<Listener*>(arg);
        self->backoff_->accepted();
        self->fn_(client);
      },
      l.get(), LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
  if (l->listener_ == nullptr) {
    *error = "cannot use the inherited socket of " + address.toString();
    ::close(fd);
    return nullptr;
  }
  if (address.isUnix() && owns_file) {
    l->unix_path_ = address.toString();
  }
  l->backoff_ = std::make_unique<AcceptBackoff>(loop, l->listener_,
                                                "listener " + address.toString() + " (inherited)");
  return l;
}

int Listener::fd() const {
  return listener_ != nullptr ? evconnlistener_get_fd(listener_) : -1;
}

void Listener::setAcceptErrorHandler(std::function<void(int err)> fn) {
  backoff_->setErrorHandler(std::move(fn));
}

void Listener::pause() {
  backoff_->pause();
}
void Listener::resume() {
  backoff_->resume();
}

}  // namespace mcring::net
