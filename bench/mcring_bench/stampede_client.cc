// CacheAsideClient: open-loop gets, a refill set after each miss, per-millisecond counters.
#include "bench/mcring_bench/stampede_client.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "bench/mcring_bench/client_socket.h"
#include "bench/mcring_bench/clock.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::bench {
namespace {

using protocol::Reply;
using protocol::ReplyKind;

constexpr timeval kHousekeepingPeriod = {0, 10 * 1000};
// Reads of 64 KiB at least; no max, as a reply holds at most one value of --value-size.
constexpr ClientSocket::ReadSizes kReadSizes = {
    .initial = 2 * 64 * 1024, .min_room = 64 * 1024, .max = ClientSocket::kNoMax};

}  // namespace

// One socket to the proxy. Requests issued while it is down start a connect and wait in the
// output buffer; if the connect fails they fail with it, so a proxy that is not listening costs
// one error per request, as a real client would see.
class CacheAsideClient::Connection {
 public:
  Connection(CacheAsideClient& client, uint32_t capacity)
      : client_(client), socket_(kReadSizes), ring_(capacity) {}

  uint32_t inflight() const { return count_; }
  uint32_t capacity() const { return static_cast<uint32_t>(ring_.size()); }
  uint64_t oldestIssueNs() const { return ring_[head_].issued_ns; }
  bool dirty = false;

  void issue(uint32_t key, bool set, uint64_t now_ns) {
    if (socket_.state() == ClientSocket::State::Down) {
      connect();
    }
    char line[64];
    const KeySpace& keys = client_.keys_;
    size_t length = 0;
    if (set) {
      std::memcpy(line, "set ", 4);
      length = 4 + keys.format(key, line + 4);
      length += static_cast<size_t>(std::snprintf(line + length, sizeof(line) - length,
                                                  " 0 0 %u\r\n", client_.options_.value_size));
      evbuffer_add(socket_.out(), line, length);
      evbuffer_add(socket_.out(), client_.value_.data(), client_.value_.size());
    } else {
      std::memcpy(line, "get ", 4);
      length = 4 + keys.format(key, line + 4);
      line[length++] = '\r';
      line[length++] = '\n';
      evbuffer_add(socket_.out(), line, length);
    }
    Pending& p = ring_[(head_ + count_) % ring_.size()];
    p = Pending{now_ns, key, set, false};
    ++count_;
    client_.markDirty(*this);
  }

  void flush() {
    if (!socket_.write()) {
      fail(LoadError::ConnectionReset, monotonicNs());
    }
  }

  // Fails everything in flight and closes; the next request reconnects.
  void fail(LoadError why, uint64_t now_ns) {
    while (count_ > 0) {
      client_.countError(why, !ring_[head_].set, now_ns);
      pop();
    }
    socket_.close();
    client_.afterChange(now_ns);
  }

 private:
  struct Pending {
    uint64_t issued_ns;
    uint32_t key;
    bool set;
    bool hit;
  };

  void pop() {
    head_ = (head_ + 1) % static_cast<uint32_t>(ring_.size());
    --count_;
  }

  void connect() {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(client_.options_.port);
    socket_.connect(client_.base_, reinterpret_cast<const sockaddr*>(&address), sizeof(address),
                    &Connection::onWritable, &Connection::onReadable, this);
  }

  static void onWritable(int, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (self->socket_.state() == ClientSocket::State::Connecting) {
      const int error = self->socket_.finishConnect();
      if (error != 0) {
        self->fail(error == ECONNREFUSED ? LoadError::ConnectRefused : LoadError::ConnectFailed,
                   monotonicNs());
      } else {
        self->flush();
      }
    } else if (self->socket_.state() == ClientSocket::State::Connected) {
      self->flush();
    }
    self->client_.flushDirty();
  }

  static void onReadable(int, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    self->readReplies();
    self->client_.flushDirty();
  }

  void readReplies() {
    const ClientSocket::ReadResult result = socket_.read();
    const uint64_t now = monotonicNs();
    if (result == ClientSocket::ReadResult::WouldBlock) {
      return;
    }
    if (result != ClientSocket::ReadResult::Received) {
      fail(LoadError::ConnectionReset, now);  // never TooLarge: the buffer has no max
      return;
    }
    refills_.clear();
    const bool in_step = socket_.frameReplies(
        parser_, [this] { return count_ > 0; },
        [&](const Reply& reply, std::string_view input) { return account(reply, input, now); });
    if (!in_step) {
      fail(LoadError::ProtocolDesync, now);  // replies already accounted stay so
    }
    for (uint32_t key : refills_) {
      client_.issueRefill(*this, key, now);
    }
    client_.afterChange(now);
  }

  // Accounts one whole reply to the oldest request in flight; false if it is not a reply to it.
  bool account(const Reply& reply, std::string_view input, uint64_t now_ns) {
    Pending& p = ring_[head_];
    if (reply.isError()) {
      client_.countError(loadErrorOfReply(reply.kind), !p.set, now_ns);
      pop();
    } else if (!p.set) {
      if (reply.kind == ReplyKind::Value) {
        const auto index = client_.keys_.parse(reply.key.in(input));
        if (!index || *index != p.key || p.hit) {
          return false;
        }
        p.hit = true;
      } else if (reply.kind == ReplyKind::End) {
        StampedeSlot& slot = client_.slotAt(now_ns);
        ++slot.gets;
        ++slot.ops;
        if (p.hit) {
          ++slot.hits;
        } else if (client_.options_.refill) {
          refills_.push_back(p.key);
        }
        pop();
      } else {
        return false;
      }
    } else {
      if (reply.kind != ReplyKind::Stored && reply.kind != ReplyKind::NotStored) {
        return false;
      }
      StampedeSlot& slot = client_.slotAt(now_ns);
      ++slot.ops;
      ++slot.sets;
      if (reply.kind == ReplyKind::Stored) {
        ++slot.refills;
      }
      pop();
    }
    return true;
  }

  CacheAsideClient& client_;
  protocol::ReplyParser parser_;
  ClientSocket socket_;
  std::vector<Pending> ring_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  std::vector<uint32_t> refills_;
};

CacheAsideClient::CacheAsideClient(const CacheAsideOptions& options, const KeySpace& keys)
    : options_(options),
      keys_(keys),
      chooser_(keys.size(), options.zipf, options.hot_keys, options.hot_share),
      rng_(options.seed * 0x9e3779b97f4a7c15ULL + 0x5354414d50454445ULL) {
  value_.assign(options.value_size, 'r');
  value_.push_back('\r');
  value_.push_back('\n');
  const double seconds = std::max(1.0, options.max_seconds);
  slots_.resize(static_cast<size_t>(std::ceil(seconds * 1e9 / kSlotNs)) + 1);
}

CacheAsideClient::~CacheAsideClient() {
  stop();
}

uint64_t CacheAsideClient::start() {
  // Everything the thread touches is built here, before it starts.
  event_config* config = event_config_new();
  event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
  base_ = event_base_new_with_config(config);
  event_config_free(config);
  schedule_event_ = evtimer_new(base_, &CacheAsideClient::onSchedule, this);
  housekeeping_event_ = event_new(base_, -1, EV_PERSIST, &CacheAsideClient::onHousekeeping, this);
  drain_event_ = evtimer_new(base_, &CacheAsideClient::onDrain, this);
  for (uint32_t i = 0; i < options_.connections; ++i) {
    connections_.push_back(std::make_unique<Connection>(*this, 2 * options_.pipeline));
  }
  start_ns_ = monotonicNs();
  started_ = true;
  thread_ = std::thread([this] { run(); });
  return start_ns_;
}

void CacheAsideClient::stop() {
  if (!started_) {
    return;
  }
  stop_requested_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) {
    thread_.join();
  }
  connections_.clear();
  event_free(schedule_event_);
  event_free(housekeeping_event_);
  event_free(drain_event_);
  event_base_free(base_);
  base_ = nullptr;
  started_ = false;
}

void CacheAsideClient::run() {
  event_add(housekeeping_event_, &kHousekeepingPeriod);
  dispatch(monotonicNs());
  flushDirty();
  event_base_dispatch(base_);
}

StampedeSlot& CacheAsideClient::slotAt(uint64_t now_ns) {
  const uint64_t index = now_ns > start_ns_ ? (now_ns - start_ns_) / kSlotNs : 0;
  return slots_[std::min<uint64_t>(index, slots_.size() - 1)];
}

void CacheAsideClient::countError(LoadError why, bool get, uint64_t now_ns) {
  ++error_kinds_[static_cast<size_t>(why)];
  StampedeSlot& slot = slotAt(now_ns);
  ++slot.errors;
  if (get) {
    ++slot.gets;
  } else {
    ++slot.sets;
  }
}

CacheAsideClient::Connection* CacheAsideClient::pickForGet() {
  const size_t n = connections_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t at = (cursor_ + i) % n;
    if (connections_[at]->inflight() < options_.pipeline) {
      cursor_ = at + 1;
      return connections_[at].get();
    }
  }
  return nullptr;
}

void CacheAsideClient::dispatch(uint64_t now_ns) {
  backlogged_ = false;
  while (!stopping_) {
    const uint64_t due =
        start_ns_ + static_cast<uint64_t>(static_cast<double>(issued_) * 1e9 / options_.rate);
    if (due > now_ns) {
      const timeval wait = delayUntil(due, now_ns);
      evtimer_add(schedule_event_, &wait);
      return;
    }
    Connection* c = pickForGet();
    if (c == nullptr) {
      backlogged_ = true;  // sent when a reply frees a slot
      return;
    }
    c->issue(static_cast<uint32_t>(chooser_.next(rng_)), /*set=*/false, now_ns);
    ++issued_;
  }
}

void CacheAsideClient::issueRefill(Connection& preferred, uint32_t key, uint64_t now_ns) {
  if (stopping_) {
    return;
  }
  Connection* target = preferred.inflight() < preferred.capacity() ? &preferred : nullptr;
  for (size_t i = 0; target == nullptr && i < connections_.size(); ++i) {
    if (connections_[i]->inflight() < connections_[i]->capacity()) {
      target = connections_[i].get();
    }
  }
  if (target == nullptr) {
    ++refills_dropped_;
    return;
  }
  target->issue(key, /*set=*/true, now_ns);
}

void CacheAsideClient::afterChange(uint64_t now_ns) {
  if (backlogged_ && !stopping_) {
    dispatch(now_ns);
  }
  maybeFinish();
}

void CacheAsideClient::markDirty(Connection& c) {
  if (!c.dirty) {
    c.dirty = true;
    dirty_.push_back(&c);
  }
}

void CacheAsideClient::flushDirty() {
  std::vector<Connection*> flushing;
  while (!dirty_.empty()) {
    flushing.swap(dirty_);
    for (Connection* c : flushing) {
      c->dirty = false;
      c->flush();
    }
    flushing.clear();
  }
}

void CacheAsideClient::beginStop(uint64_t now_ns) {
  if (stopping_) {
    return;
  }
  stopping_ = true;
  evtimer_del(schedule_event_);
  const double due = std::floor(static_cast<double>(now_ns - start_ns_) * options_.rate / 1e9);
  unsent_ = due > static_cast<double>(issued_) ? static_cast<uint64_t>(due) - issued_ : 0;
  const timeval drain = {static_cast<time_t>(options_.timeout_ms / 1000),
                         static_cast<suseconds_t>(options_.timeout_ms % 1000) * 1000};
  evtimer_add(drain_event_, &drain);
  maybeFinish();
}

void CacheAsideClient::maybeFinish() {
  if (!stopping_) {
    return;
  }
  for (const auto& c : connections_) {
    if (c->inflight() > 0) {
      return;
    }
  }
  event_base_loopbreak(base_);
}

void CacheAsideClient::onSchedule(int, short, void* arg) {
  auto* self = static_cast<CacheAsideClient*>(arg);
  self->dispatch(monotonicNs());
  self->flushDirty();
}

void CacheAsideClient::onHousekeeping(int, short, void* arg) {
  auto* self = static_cast<CacheAsideClient*>(arg);
  const uint64_t now = monotonicNs();
  if (self->stop_requested_.load(std::memory_order_relaxed)) {
    self->beginStop(now);
  }
  const uint64_t timeout_ns = static_cast<uint64_t>(self->options_.timeout_ms) * 1'000'000ULL;
  for (auto& c : self->connections_) {
    if (c->inflight() > 0 && now > c->oldestIssueNs() && now - c->oldestIssueNs() > timeout_ns) {
      c->fail(LoadError::Timeout, now);
    }
  }
  self->flushDirty();
}

void CacheAsideClient::onDrain(int, short, void* arg) {
  auto* self = static_cast<CacheAsideClient*>(arg);
  const uint64_t now = monotonicNs();
  for (auto& c : self->connections_) {
    if (c->inflight() > 0) {
      c->fail(LoadError::Timeout, now);
    }
  }
  event_base_loopbreak(self->base_);
}

}  // namespace mcring::bench
