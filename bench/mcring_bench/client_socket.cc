// ClientSocket: the libevent plumbing of one benchmark client connection.
#include "bench/mcring_bench/client_socket.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcring::bench {

namespace {
SSL_CTX* g_tls = nullptr;
}  // namespace

bool ClientSocket::useTls(std::string* error) {
  g_tls = SSL_CTX_new(TLS_client_method());
  if (g_tls == nullptr) {
    *error = "cannot create a TLS context";
    return false;
  }
  SSL_CTX_set_min_proto_version(g_tls, TLS1_2_VERSION);
  SSL_CTX_set_verify(g_tls, SSL_VERIFY_NONE, nullptr);
  // Writes retry from the evbuffer, which may have moved or grown since.
  SSL_CTX_set_mode(g_tls, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return true;
}

ClientSocket::ClientSocket(ReadSizes sizes) : sizes_(sizes), read_buffer_(sizes.initial) {
  out_ = evbuffer_new();
}

ClientSocket::~ClientSocket() {
  close();
  evbuffer_free(out_);
}

void ClientSocket::connect(event_base* base, const sockaddr* address, socklen_t length,
                           Callback on_writable, Callback on_readable, void* arg) {
  fd_ = ::socket(address->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  connect_error_ = 0;
  if (fd_ < 0) {
    // Out of descriptors or similar: reported like a failed connect, from the loop.
    connect_error_ = errno;
  } else {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (::connect(fd_, address, length) != 0 && errno != EINPROGRESS) {
      connect_error_ = errno;
    }
  }
  state_ = State::Connecting;
  write_event_ = event_new(base, fd_, EV_WRITE, on_writable, arg);
  read_event_ = event_new(base, fd_, EV_READ | EV_PERSIST, on_readable, arg);
  if (connect_error_ != 0 || fd_ < 0) {
    // Not event_add: the fd may be -1. The loop runs the callback after the caller has issued.
    event_active(write_event_, EV_WRITE, 0);
  } else {
    event_add(write_event_, nullptr);
  }
}

int ClientSocket::finishConnect() {
  int error = connect_error_;
  if (error == 0) {
    socklen_t length = sizeof(error);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
      error = errno;
    }
  }
  if (error == 0 && g_tls != nullptr) {
    ssl_ = SSL_new(g_tls);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
      return EPROTO;
    }
    SSL_set_connect_state(ssl_);
  }
  if (error == 0) {
    state_ = State::Connected;
    event_add(read_event_, nullptr);
  }
  return error;
}

void ClientSocket::close() {
  if (write_event_ != nullptr) {
    event_free(write_event_);
    write_event_ = nullptr;
  }
  if (read_event_ != nullptr) {
    event_free(read_event_);
    read_event_ = nullptr;
  }
  if (ssl_ != nullptr) {
    SSL_free(ssl_);
    ssl_ = nullptr;
    ERR_clear_error();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  evbuffer_drain(out_, evbuffer_get_length(out_));
  read_begin_ = read_end_ = 0;
  state_ = State::Down;
}

bool ClientSocket::write() {
  if (state_ != State::Connected || evbuffer_get_length(out_) == 0) {
    return true;
  }
  if (ssl_ != nullptr) {
    while (evbuffer_get_length(out_) > 0) {
      const size_t n = std::min<size_t>(evbuffer_get_length(out_), 16384);
      size_t done = 0;
      if (SSL_write_ex(ssl_, evbuffer_pullup(out_, static_cast<ssize_t>(n)), n, &done) == 1) {
        evbuffer_drain(out_, done);
        continue;
      }
      const int e = SSL_get_error(ssl_, 0);
      if (e == SSL_ERROR_WANT_READ) {
        return true;  // the handshake: read() writes again
      }
      if (e != SSL_ERROR_WANT_WRITE) {
        return false;
      }
      break;
    }
  } else {
    const int written = evbuffer_write(out_, fd_);
    if (written < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
  }
  if (evbuffer_get_length(out_) > 0) {
    event_add(write_event_, nullptr);
  }
  return true;
}

ClientSocket::ReadResult ClientSocket::read() {
  if (read_begin_ == read_end_) {
    read_begin_ = read_end_ = 0;
  } else if (read_buffer_.size() - read_end_ < sizes_.min_room && read_begin_ > 0) {
    std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    read_end_ -= read_begin_;
    read_begin_ = 0;
  }
  if (read_buffer_.size() - read_end_ < sizes_.min_room) {
    // Halving the cap rather than doubling the size: kNoMax must not overflow.
    if (read_buffer_.size() > sizes_.max / 2) {
      return ReadResult::TooLarge;
    }
    read_buffer_.resize(read_buffer_.size() * 2);
  }

  if (ssl_ != nullptr) {
    size_t got = 0;
    const int r = SSL_read_ex(ssl_, read_buffer_.data() + read_end_,
                              read_buffer_.size() - read_end_, &got);
    const int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);  // before any other call
    // Requests that waited for the handshake (SSL_write said WANT_READ) go now.
    if (evbuffer_get_length(out_) > 0 && !write()) {
      return ReadResult::Closed;
    }
    if (r != 1) {
      return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? ReadResult::WouldBlock
                                                                     : ReadResult::Closed;
    }
    if (SSL_pending(ssl_) > 0) {
      event_active(read_event_, EV_READ, 0);  // the rest of a record, announced by no event
    }
    read_end_ += got;
    return ReadResult::Received;
  }
  const ssize_t received =
      ::recv(fd_, read_buffer_.data() + read_end_, read_buffer_.size() - read_end_, 0);
  if (received < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return ReadResult::WouldBlock;
  }
  if (received <= 0) {
    return ReadResult::Closed;
  }
  read_end_ += static_cast<size_t>(received);
  return ReadResult::Received;
}

}  // namespace mcring::bench
