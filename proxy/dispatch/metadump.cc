// Metadumps: one dedicated connection per server for each `lru_crawler metadump`.
#include "proxy/dispatch/metadump.h"

#include <algorithm>
#include <vector>

#include "proxy/backend/backend_server.h"
#include "proxy/net/buffer.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

namespace {

constexpr std::string_view kEnd = "END\r\n";
// memcached's dump lines start so; anything else on the first line is its error reply
// (BADCLASS, BUSY, CLIENT_ERROR lru crawler disabled, ERROR metadump not allowed, ...).
constexpr std::string_view kDumpLine = "key=";
constexpr std::string_view kNoServerLine = "SERVER_ERROR no server answered the metadump\r\n";
// A server's crawler runs one dump at a time and answers others BUSY (another worker's dump,
// or one whose client has left and which the crawler has not yet noticed): such a server is
// asked again, every kRetryMs for at most kIdleMs.
constexpr std::string_view kBusy = "BUSY";
constexpr uint32_t kRetryMs = 100;

std::string_view prefix(net::Buffer& b, size_t n) {
  return b.contiguous(std::min(n, b.size()));
}

}  // namespace

// One client request's dump: a connection per server of the pool, its bytes kept per server so
// the answer lists the servers in pool order whatever order they finish in.
class Metadumps::Dump {
 public:
  // Takes over q's reference on its request.
  Dump(Metadumps& owner, Queued q)
      : owner_(owner),
        r_(q.r),
        line_(std::move(q.line)),
        timeout_ms_(q.timeout_ms),
        retries_left_(kIdleMs / kRetryMs) {
    servers_.reserve(q.servers.size());
    for (common::SocketAddress& a : q.servers) {
      servers_.push_back(std::make_unique<Server>(*this, std::move(a)));
    }
  }

  void start() {
    for (auto& s : servers_) {
      ask(*s);
    }
    maybeFinish();
  }

  ~Dump() {
    for (auto& s : servers_) {
      if (s->retry) {
        s->retry->stop();
      }
      if (s->conn) {
        s->conn->close();
      }
    }
    if (r_ != nullptr) {
      owner_.worker_.requests().release(r_);
    }
  }

  bool finished() const { return r_ == nullptr; }

 private:
  enum class State : uint8_t { Reading, Dumped, Errored, Failed };

  struct Server final : net::ConnectionHandler {
    Server(Dump& d, common::SocketAddress a) : dump(d), address(std::move(a)) {}
    void onReadable() override { dump.onReadable(*this); }
    void onClosed(net::CloseReason, int) override { dump.onClosed(*this); }
    Dump& dump;
    const common::SocketAddress address;
    std::unique_ptr<net::TcpConnection> conn;
    std::unique_ptr<net::TcpConnection> retired;  // a BUSY server's previous connection
    std::unique_ptr<net::Timer> retry;
    net::Buffer got;
    State state = State::Reading;
  };

  // Opens a connection of its own to the server and sends the dump line.
  void ask(Server& s) {
    stats::bump(owner_.worker_.counters().stats_fetches);
    s.conn = net::TcpConnection::connect(owner_.worker_.loop(), s.address, &s, timeout_ms_, false);
    if (!s.conn) {
      s.state = State::Failed;
      return;
    }
    s.conn->setReadTimeout(timeout_ms_);
    s.conn->output().append(line_);
    s.conn->enableReading(true);
  }

  // The server's crawler is busy: ask again soon (the line was one reply; its bytes stay
  // charged to the client until the dump is answered, a few bytes per retry).
  bool retryBusy(Server& s) {
    if (retries_left_ == 0 || s.got.size() < kBusy.size() || prefix(s.got, kBusy.size()) != kBusy) {
      return false;
    }
    --retries_left_;
    s.got.drain(s.got.size());
    s.conn->close();
    s.retired = std::move(s.conn);  // destroyed with the next attempt, outside its callback
    if (!s.retry) {
      s.retry = std::make_unique<net::Timer>(owner_.worker_.loop(), [this, &s] {
        s.retired.reset();
        if (r_ != nullptr && r_->session == nullptr) {
          abandon();  // the client left while the server was busy
          return;
        }
        if (r_ != nullptr && s.state == State::Reading) {
          ask(s);
          maybeFinish();
        }
      });
    }
    s.retry->start(kRetryMs);
    return true;
  }

  void onReadable(Server& s) {
    if (r_ == nullptr || s.state != State::Reading) {
      return;
    }
    net::Buffer& in = s.conn->input();
    const size_t n = in.size();
    RequestOwner* client = r_->session;
    if (client == nullptr) {  // the client went away: nobody to answer
      abandon();
      return;
    }
    if (!r_->refused && !client->holdReply(*r_, n)) {
      r_->refused = true;  // answered with memcached's out-of-memory error; the rest is dropped
      stats::bump(owner_.worker_.counters().client_oom_replies);
      for (auto& other : servers_) {
        other->got.drain(other->got.size());
      }
      client->releaseHeld(*r_);
      closeAll();
      maybeFinish();
      return;
    }
    in.moveTo(s.got, n);
    const size_t size = s.got.size();
    if (size >= kDumpLine.size() && prefix(s.got, kDumpLine.size()) != kDumpLine) {
      // Not a dump line: an error line, or an empty dump's END alone.
      if (s.got.findNewline(0, size) != net::Buffer::npos) {
        s.state = prefix(s.got, size) == kEnd ? State::Dumped : State::Errored;
      }
    } else if (size > kEnd.size() && endsWithEnd(s.got) &&
               s.got.byteAt(size - kEnd.size() - 1) == '\n') {
      s.state = State::Dumped;
    }
    if (s.state == State::Errored && retryBusy(s)) {
      s.state = State::Reading;
      return;
    }
    if (s.state != State::Reading) {
      s.conn->close();
      maybeFinish();
    }
  }

  static bool endsWithEnd(net::Buffer& b) {
    const size_t size = b.size();
    for (size_t i = 0; i < kEnd.size(); ++i) {
      if (b.byteAt(size - kEnd.size() + i) != kEnd[i]) {
        return false;
      }
    }
    return true;
  }

  void onClosed(Server& s) {
    if (s.state == State::Reading) {
      s.state = State::Failed;
    }
    maybeFinish();
  }

  void closeAll() {
    for (auto& s : servers_) {
      if (s->state == State::Reading) {
        s->state = State::Failed;
      }
      if (s->retry) {
        s->retry->stop();
      }
      if (s->conn) {
        s->conn->close();
      }
    }
  }

  void abandon() {
    closeAll();
    owner_.worker_.requests().release(r_);
    r_ = nullptr;
    owner_.retire();
  }

  // Once every server is done: their dumps in pool order under one END; if none dumped, the
  // first error a server answered (they run the same memcached, so it is everyone's), else
  // mcring's own error.
  void maybeFinish() {
    if (r_ == nullptr) {
      return;
    }
    for (auto& s : servers_) {
      if (s->state == State::Reading) {
        return;
      }
    }
    PendingRequest* r = r_;
    r_ = nullptr;
    RequestOwner* client = r->session;
    if (client != nullptr) {
      if (r->refused) {
        r->reply.append(protocol::kOutOfMemoryLine);
      } else {
        compose(r);
      }
      r->complete = true;
      client->onRequestComplete(r);
    }
    owner_.worker_.requests().release(r);
    owner_.retire();
  }

  void compose(PendingRequest* r) {
    uint32_t dumped = 0;
    Server* first_error = nullptr;
    for (auto& s : servers_) {
      if (s->state == State::Dumped) {
        s->got.moveTo(r->reply, s->got.size() - kEnd.size());
        ++dumped;
      } else {
        stats::bump(owner_.worker_.counters().stats_fetch_failures);
        if (s->state == State::Errored && first_error == nullptr) {
          first_error = s.get();
        }
      }
    }
    if (dumped > 0) {
      r->reply.append(kEnd);
    } else if (first_error != nullptr) {
      first_error->got.moveAllTo(r->reply);
    } else {
      r->reply.append(kNoServerLine);
    }
  }

  Metadumps& owner_;
  PendingRequest* r_;  // null once answered or abandoned
  const std::string line_;
  const uint32_t timeout_ms_;
  uint32_t retries_left_;  // BUSY answers, over all servers
  std::vector<std::unique_ptr<Server>> servers_;
};

Metadumps::Metadumps(WorkerContext& worker)
    : worker_(worker), reaper_(worker.loop(), [this] {
        if (active_ && active_->finished()) {
          active_.reset();
        }
        startNext();
      }) {}

Metadumps::~Metadumps() {
  active_.reset();
  for (Queued& q : queue_) {
    worker_.requests().release(q.r);
  }
}

void Metadumps::answer(PoolRuntime& pool, PendingRequest* r, std::string_view line) {
  Queued q{r, std::string(line), {}, std::max(pool.config().timeout_ms, kIdleMs)};
  ++r->refs;
  q.servers.reserve(pool.by_index.size());
  for (BackendServer* server : pool.by_index) {
    q.servers.push_back(server->address());
  }
  queue_.push_back(std::move(q));
  startNext();
}

void Metadumps::startNext() {
  while (!active_ && !queue_.empty()) {
    Queued q = std::move(queue_.front());
    queue_.pop_front();
    if (q.r->session == nullptr) {  // its client left while it waited
      worker_.requests().release(q.r);
      continue;
    }
    active_ = std::make_unique<Dump>(*this, std::move(q));
    active_->start();  // may finish at once (no server reachable): then reaped from the loop
  }
}

void Metadumps::retire() {
  if (!reaper_.pending()) {
    reaper_.start(0);
  }
}

}  // namespace mcring::core
