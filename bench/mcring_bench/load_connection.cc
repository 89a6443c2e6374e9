// LoadConnection: connecting, writing pipelined requests, framing and accounting replies.
#include "bench/mcring_bench/load_connection.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/load_worker.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::bench {
namespace {

using protocol::Reply;
using protocol::ReplyKind;

// The read buffer grows only for huge values: a reply unit larger than its max is not something
// we asked for (values are at most 1 MiB).
constexpr ClientSocket::ReadSizes kReadSizes = {
    .initial = 64 * 1024, .min_room = 16 * 1024, .max = 64 * 1024 * 1024};
constexpr timeval kReconnectPause = {0, 100 * 1000};

}  // namespace

LoadConnection::LoadConnection(LoadWorker& worker, uint32_t capacity, uint32_t keys_per_get)
    : worker_(worker),
      capacity_(capacity),
      keys_per_get_(keys_per_get),
      depth_(capacity),
      socket_(kReadSizes),
      ring_(capacity),
      keys_(static_cast<size_t>(capacity) * keys_per_get) {
  reconnect_event_ = evtimer_new(worker_.base(), &LoadConnection::onReconnect, this);
}

LoadConnection::~LoadConnection() {
  event_free(reconnect_event_);
}

void LoadConnection::connect() {
  if (socket_.state() != ClientSocket::State::Down) {
    return;
  }
  evtimer_del(reconnect_event_);
  const Endpoint& endpoint = worker_.endpoint();
  socket_.connect(worker_.base(), reinterpret_cast<const sockaddr*>(&endpoint.address),
                  endpoint.length, &LoadConnection::onWritable, &LoadConnection::onReadable, this);
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
  evbuffer_add(socket_.out(), line, length);

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
  evbuffer_add(socket_.out(), line, length);
  push(start_ns, now_ns, 0);
}

void LoadConnection::flush() {
  if (!socket_.write()) {
    fail(LoadError::ConnectionReset);
  }
}

void LoadConnection::fail(LoadError why, uint32_t also_ended) {
  const uint32_t failed = count_;
  worker_.sink().counters.errors[static_cast<size_t>(why)] += failed;
  head_ = 0;
  count_ = 0;
  socket_.close();
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
  if (self->socket_.state() == ClientSocket::State::Connecting) {
    self->finishConnect();
  } else if (self->socket_.state() == ClientSocket::State::Connected) {
    self->flush();
  }
  self->worker_.flushDirty();
}

void LoadConnection::finishConnect() {
  const int error = socket_.finishConnect();
  if (error != 0) {
    fail(error == ECONNREFUSED ? LoadError::ConnectRefused : LoadError::ConnectFailed);
    return;
  }
  flush();
}

void LoadConnection::onReadable(int, short, void* arg) {
  auto* self = static_cast<LoadConnection*>(arg);
  self->readReplies();
  self->worker_.flushDirty();
}

void LoadConnection::readReplies() {
  switch (socket_.read()) {
    case ClientSocket::ReadResult::Received:
      break;
    case ClientSocket::ReadResult::WouldBlock:
      return;
    case ClientSocket::ReadResult::Closed:
      // The server closed or reset. With nothing in flight nobody lost a reply: reconnect quietly.
      fail(LoadError::ConnectionReset);
      return;
    case ClientSocket::ReadResult::TooLarge:
      fail(LoadError::ProtocolDesync);
      return;
  }

  const uint64_t now_ns = monotonicNs();
  uint32_t ended = 0;
  const bool in_step = socket_.frameReplies(
      worker_.parser(), [this] { return count_ > 0; },
      [&](const Reply& reply, std::string_view input) {
        return accountReply(reply, input, now_ns, &ended);
      });
  if (!in_step) {
    // Replies already accounted stay so; the rest of what was in flight is lost with the stream.
    fail(LoadError::ProtocolDesync, ended);
    return;
  }
  worker_.afterReplies(*this, ended, now_ns);
}

bool LoadConnection::accountReply(const Reply& reply, std::string_view input, uint64_t now_ns,
                                  uint32_t* ended) {
  IntervalStats& sink = worker_.sink();
  Pending& p = ring_[head_];
  if (reply.isError()) {
    ++sink.counters.errors[static_cast<size_t>(loadErrorOfReply(reply.kind))];
    pop();
    ++*ended;
  } else if (p.key_count > 0) {
    if (reply.kind == ReplyKind::Value) {
      // A VALUE must be for a key still ahead in this get, in asked order.
      const auto index = worker_.keySpace().parse(reply.key.in(input));
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
  return true;
}

}  // namespace mcring::bench
