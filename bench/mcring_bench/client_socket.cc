// ClientSocket: the libevent plumbing of one benchmark client connection.
#include "bench/mcring_bench/client_socket.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcring::bench {

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
  const int written = evbuffer_write(out_, fd_);
  if (written < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    return false;
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
