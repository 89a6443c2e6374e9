// LoadConnection: connecting, writing pipelined requests, framing and accounting replies.
#include "bench/mcring_bench/load_connection.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/load_worker.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::bench {
namespace {

using protocol::ParseStatus;
using protocol::Reply;
using protocol::ReplyKind;

constexpr size_t kInitialReadBuffer = 64 * 1024;
// Read only when at least this much room is free, so that a recv is never tiny.
constexpr size_t kMinReadRoom = 16 * 1024;
// A reply unit larger than this is not something we asked for (values are at most 1 MiB).
constexpr size_t kMaxReadBuffer = 64 * 1024 * 1024;
constexpr timeval kReconnectPause = {0, 100 * 1000};

LoadError errorOf(ReplyKind kind) {
  switch (kind) {
    case ReplyKind::ServerError:
      return LoadError::ServerError;
    case ReplyKind::ClientError:
      return LoadError::ClientError;
    default:
      return LoadError::Error;
  }
}

}  // namespace

LoadConnection::LoadConnection(LoadWorker& worker, uint32_t capacity, uint32_t keys_per_get)
    : worker_(worker),
      capacity_(capacity),
      keys_per_get_(keys_per_get),
      depth_(capacity),
      ring_(capacity),
      keys_(static_cast<size_t>(capacity) * keys_per_get),
      read_buffer_(kInitialReadBuffer) {
  out_ = evbuffer_new();
  reconnect_event_ = evtimer_new(worker_.base(), &LoadConnection::onReconnect, this);
}

LoadConnection::~LoadConnection() {
  closeSocket();
  event_free(reconnect_event_);
  evbuffer_free(out_);
}

void LoadConnection::connect() {
  if (state_ != State::Down) {
    return;
  }
  evtimer_del(reconnect_event_);
  const Endpoint& endpoint = worker_.endpoint();
  fd_ = ::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  connect_error_ = 0;
  if (fd_ < 0) {
    // Out of descriptors or similar: reported like a failed connect, from the loop.
    connect_error_ = errno;
  } else {
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const auto* address = reinterpret_cast<const sockaddr*>(&endpoint.address);
    if (::connect(fd_, address, endpoint.length) != 0 && errno != EINPROGRESS) {
      connect_error_ = errno;
    }
  }
  state_ = State::Connecting;
  write_event_ = event_new(worker_.base(), fd_, EV_WRITE, &LoadConnection::onWritable, this);
  read_event_ =
      event_new(worker_.base(), fd_, EV_READ | EV_PERSIST, &LoadConnection::onReadable, this);
  if (connect_error_ != 0 || fd_ < 0) {
    // Not event_add: the fd may be -1. The loop runs the callback after the caller has issued.
    event_active(write_event_, EV_WRITE, 0);
  } else {
    event_add(write_event_, nullptr);
  }
}

void LoadConnection::closeSocket() {
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

void LoadConnection::push(uint64_t start_ns, uint64_t now_ns, uint16_t key_count) {
  const uint32_t slot = (head_ + count_) % capacity_;
  ++count_;
  Pending& p = ring_[slot];
  p.start_ns = start_ns;
  p.issued_ns = now_ns;
  p.hits = 0;
  p.key_count = key_count;
  p.cursor = 0;
}

void LoadConnection::pop() {
  head_ = head_ + 1 == capacity_ ? 0 : head_ + 1;
  --count_;
}

void LoadConnection::issueGet(const uint32_t* keys, uint32_t count, uint64_t start_ns,
                              uint64_t now_ns) {
  const KeySpace& space = worker_.keySpace();
  char* line = worker_.scratch();
  size_t length = 3;
  std::memcpy(line, "get", 3);
  for (uint32_t i = 0; i < count; ++i) {
    line[length++] = ' ';
    length += space.format(keys[i], line + length);
  }
  line[length++] = '\r';
  line[length++] = '\n';
  evbuffer_add(out_, line, length);

  const uint32_t slot = (head_ + count_) % capacity_;
  std::memcpy(&keys_[static_cast<size_t>(slot) * keys_per_get_], keys, count * sizeof(uint32_t));
  push(start_ns, now_ns, static_cast<uint16_t>(count));
}

void LoadConnection::issueSet(uint32_t key, uint32_t value_length, uint64_t start_ns,
                              uint64_t now_ns) {
  char* line = worker_.scratch();
  size_t length = 4;
  std::memcpy(line, "set ", 4);
  length += worker_.keySpace().format(key, line + length);
  std::memcpy(line + length, " 0 0 ", 5);
  length += 5;
  length = static_cast<size_t>(std::to_chars(line + length, line + length + 16, value_length).ptr -
                               line);
  line[length++] = '\r';
  line[length++] = '\n';
  // One evbuffer_add for line, value and terminator: the scratch holds the largest set.
  std::memcpy(line + length, worker_.valueBytes(), value_length);
  length += value_length;
  line[length++] = '\r';
  line[length++] = '\n';
  evbuffer_add(out_, line, length);
  push(start_ns, now_ns, 0);
}

void LoadConnection::flush() {
  if (state_ != State::Connected || evbuffer_get_length(out_) == 0) {
    return;
  }
  const int written = evbuffer_write(out_, fd_);
  if (written < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    fail(LoadError::ConnectionReset);
    return;
  }
  if (evbuffer_get_length(out_) > 0) {
    event_add(write_event_, nullptr);
  }
}

void LoadConnection::fail(LoadError why, uint32_t also_ended) {
  const uint32_t failed = count_;
  worker_.sink().counters.errors[static_cast<size_t>(why)] += failed;
  head_ = 0;
  count_ = 0;
  closeSocket();
  if (worker_.wantsReconnect()) {
    evtimer_add(reconnect_event_, &kReconnectPause);
  }
  worker_.afterFailure(*this, failed + also_ended);
}

void LoadConnection::onReconnect(int, short, void* arg) {
  auto* self = static_cast<LoadConnection*>(arg);
  self->connect();
  self->worker_.afterConnect(*self);
  self->worker_.flushDirty();
}

void LoadConnection::onWritable(int, short, void* arg) {
  auto* self = static_cast<LoadConnection*>(arg);
  if (self->state_ == State::Connecting) {
    self->finishConnect();
  } else if (self->state_ == State::Connected) {
    self->flush();
  }
  self->worker_.flushDirty();
}

void LoadConnection::finishConnect() {
  int error = connect_error_;
  if (error == 0) {
    socklen_t length = sizeof(error);
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
      error = errno;
    }
  }
  if (error != 0) {
    fail(error == ECONNREFUSED ? LoadError::ConnectRefused : LoadError::ConnectFailed);
    return;
  }
  state_ = State::Connected;
  event_add(read_event_, nullptr);
  flush();
}

void LoadConnection::onReadable(int, short, void* arg) {
  auto* self = static_cast<LoadConnection*>(arg);
  self->readReplies();
  self->worker_.flushDirty();
}

void LoadConnection::readReplies() {
  // Make room at the end: restart an empty buffer, slide a partial reply to the front, and grow
  // only when one reply unit is larger than the buffer.
  if (read_begin_ == read_end_) {
    read_begin_ = read_end_ = 0;
  } else if (read_buffer_.size() - read_end_ < kMinReadRoom && read_begin_ > 0) {
    std::memmove(read_buffer_.data(), read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    read_end_ -= read_begin_;
    read_begin_ = 0;
  }
  if (read_buffer_.size() - read_end_ < kMinReadRoom) {
    if (read_buffer_.size() * 2 > kMaxReadBuffer) {
      fail(LoadError::ProtocolDesync);
      return;
    }
    read_buffer_.resize(read_buffer_.size() * 2);
  }

  const ssize_t received =
      ::recv(fd_, read_buffer_.data() + read_end_, read_buffer_.size() - read_end_, 0);
  if (received < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      return;
    }
    fail(LoadError::ConnectionReset);
    return;
  }
  if (received == 0) {
    // The server closed. With nothing in flight nobody lost a reply: reconnect quietly.
    fail(LoadError::ConnectionReset);
    return;
  }
  read_end_ += static_cast<size_t>(received);

  const uint64_t now_ns = monotonicNs();
  uint32_t ended = 0;
  if (!consumeReplies(now_ns, &ended)) {
    // Replies already accounted stay so; the rest of what was in flight is lost with the stream.
    fail(LoadError::ProtocolDesync, ended);
    return;
  }
  worker_.afterReplies(*this, ended, now_ns);
}

bool LoadConnection::consumeReplies(uint64_t now_ns, uint32_t* ended) {
  const protocol::ReplyParser& parser = worker_.parser();
  const KeySpace& space = worker_.keySpace();
  IntervalStats& sink = worker_.sink();
  Reply reply;
  while (read_begin_ < read_end_) {
    if (count_ == 0) {
      return false;  // bytes nobody asked for
    }
    const std::string_view input(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
    uint64_t consumed = 0;
    const ParseStatus status = protocol::frameReply(parser, input, reply, &consumed);
    if (status == ParseStatus::Incomplete) {
      return true;
    }
    if (status == ParseStatus::Invalid) {
      return false;
    }
    Pending& p = ring_[head_];
    if (reply.isError()) {
      ++sink.counters.errors[static_cast<size_t>(errorOf(reply.kind))];
      pop();
      ++*ended;
    } else if (p.key_count > 0) {
      if (reply.kind == ReplyKind::Value) {
        // A VALUE must be for a key still ahead in this get, in asked order.
        const auto index = space.parse(reply.key.in(input));
        if (!index) {
          return false;
        }
        const uint32_t* asked = &keys_[static_cast<size_t>(head_) * keys_per_get_];
        while (p.cursor < p.key_count && asked[p.cursor] != *index) {
          ++p.cursor;
        }
        if (p.cursor == p.key_count) {
          return false;
        }
        ++p.cursor;
        ++p.hits;
      } else if (reply.kind == ReplyKind::End) {
        ++sink.counters.replies;
        ++sink.counters.gets;
        sink.counters.get_keys += p.key_count;
        sink.counters.hits += p.hits;
        sink.latency.record(now_ns > p.start_ns ? now_ns - p.start_ns : 0);
        pop();
        ++*ended;
      } else {
        return false;
      }
    } else {
      if (reply.kind == ReplyKind::Stored) {
        ++sink.counters.sets;
      } else if (reply.kind == ReplyKind::NotStored) {
        ++sink.counters.not_stored;
      } else {
        return false;
      }
      ++sink.counters.replies;
      sink.latency.record(now_ns > p.start_ns ? now_ns - p.start_ns : 0);
      pop();
      ++*ended;
    }
    read_begin_ += consumed;
  }
  return true;
}

}  // namespace mcring::bench
