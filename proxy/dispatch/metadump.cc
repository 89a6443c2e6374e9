// Metadumps: one dedicated connection per server for each `lru_crawler metadump`.
#include "proxy/dispatch/metadump.h"

#include <algorithm>
#include <vector>

#include "proxy/backend/backend_server.h"
#include "proxy/common/clock.h"
#include "proxy/dispatch/serving_pools.h"
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

// One client request's dump: the pool's servers one after another, in pool order, each over a
// connection of its own, streamed to the client as its lines arrive.
class Metadumps::Dump {
 public:
  // Takes over q's reference on its request.
  Dump(Metadumps& owner, Queued q)
      : owner_(owner),
        r_(q.r),
        line_(std::move(q.line)),
        timeout_ms_(q.timeout_ms),
        retries_left_(kIdleMs / kRetryMs),
        poll_(owner.worker_.loop(), [this] { checkPaused(); }) {
    servers_.reserve(q.servers.size());
    for (common::SocketAddress& a : q.servers) {
      servers_.push_back(std::make_unique<Server>(*this, std::move(a)));
    }
  }

  void start() { next(); }

  ~Dump() {
    poll_.stop();
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
  enum class State : uint8_t { Waiting, Reading, Dumped, Errored, Failed };

  struct Server final : net::ConnectionHandler {
    Server(Dump& d, common::SocketAddress a) : dump(d), address(std::move(a)) {}
    void onReadable() override { dump.onReadable(*this); }
    void onClosed(net::CloseReason, int) override { dump.onClosed(*this); }
    Dump& dump;
    const common::SocketAddress address;
    std::unique_ptr<net::TcpConnection> conn;
    std::unique_ptr<net::TcpConnection> retired;  // a BUSY server's previous connection
    std::unique_ptr<net::Timer> retry;
    net::Buffer got;       // the server's first line while it is not known to be a dump
    bool dumping = false;  // its answer is a dump (it began with "key="): streamed
    State state = State::Waiting;
  };

  // Asks the next server in pool order, or answers once every server is done.
  void next() {
    while (current_ < servers_.size()) {
      Server& s = *servers_[current_];
      if (s.state == State::Waiting) {
        ask(s);
      }
      if (s.state == State::Reading) {
        return;
      }
      ++current_;
    }
    finish();
  }

  // Opens a connection of its own to the server and sends the dump line.
  void ask(Server& s) {
    stats::bump(owner_.worker_.counters().stats_fetches);
    s.state = State::Reading;
    s.conn = net::TcpConnection::connect(owner_.worker_.loop(), s.address, &s, timeout_ms_, false);
    if (!s.conn) {
      s.state = State::Failed;
      return;
    }
    s.conn->setReadTimeout(timeout_ms_);
    s.conn->output().append(line_);
    s.conn->enableReading(true);
  }

  // The server's crawler is busy: ask again soon.
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
          if (s.state != State::Reading) {
            done(s);
          }
        }
      });
    }
    s.retry->start(kRetryMs);
    return true;
  }

  void onReadable(Server& s) {
    if (r_ == nullptr || s.state != State::Reading || paused_) {
      return;
    }
    if (r_->session == nullptr) {  // the client went away: nobody to answer
      abandon();
      return;
    }
    net::Buffer& in = s.conn->input();
    if (!s.dumping) {
      in.moveTo(s.got, in.size());
      const size_t size = s.got.size();
      if (size >= kDumpLine.size() && prefix(s.got, kDumpLine.size()) == kDumpLine) {
        s.dumping = true;  // a dump: from now on its lines are streamed
        s.got.moveTo(in, size);
      } else if (s.got.findNewline(0, size) != net::Buffer::npos) {
        // A line that is not a dump line: an empty dump's END, or an error line.
        s.state = prefix(s.got, size) == kEnd ? State::Dumped : State::Errored;
        if (s.state == State::Errored && retryBusy(s)) {
          s.state = State::Reading;  // asked again shortly
          return;
        }
        done(s);
        return;
      } else if (size > kMaxLine) {
        s.state = State::Failed;  // not memcached
        done(s);
        return;
      } else {
        return;  // the first line is still arriving
      }
    }
    stream(s);
  }

  // Passes the server's whole lines to the client as they arrive, its END excepted. Only the
  // request at the head of its client's FIFO streams; until then, and while the client's unsent
  // output is at its limit, the server's connection is not read (pause): memcached's crawler
  // then waits for it, as it waits for a slow client of its own.
  void stream(Server& s) {
    RequestOwner* client = r_->session;
    net::Buffer& in = s.conn->input();
    const size_t size = in.size();
    if (size == 0) {
      return;
    }
    if (!client->tryStream(*r_) || client->outputFull()) {
      pause();
      return;
    }
    const size_t last = lastNewline(in, size);
    if (last == net::Buffer::npos) {
      if (size > kMaxLine) {
        s.state = State::Failed;  // a line longer than memcached writes: not a dump
        done(s);
      }
      return;
    }
    size_t whole = last + 1;
    // The dump ends with END\r\n, a line of its own (dump lines end in "\n" alone).
    const bool ended = whole >= kEnd.size() && endsWithEnd(in, whole) &&
                       (whole == kEnd.size() || in.byteAt(whole - kEnd.size() - 1) == '\n');
    if (ended) {
      whole -= kEnd.size();
    }
    if (whole > 0) {
      client->streamReply(in, whole);
    }
    if (ended) {
      in.drain(kEnd.size());
      s.state = State::Dumped;
      done(s);
    }
  }

  // The last '\n' of the buffer, looked for in its last kMaxLine bytes (a dump line is shorter).
  static size_t lastNewline(const net::Buffer& b, size_t size) {
    const size_t stop = size > kMaxLine ? size - kMaxLine : 0;
    for (size_t i = size; i > stop; --i) {
      if (b.byteAt(i - 1) == '\n') {
        return i - 1;
      }
    }
    return net::Buffer::npos;
  }

  static bool endsWithEnd(const net::Buffer& b, size_t size) {
    for (size_t i = 0; i < kEnd.size(); ++i) {
      if (b.byteAt(size - kEnd.size() + i) != kEnd[i]) {
        return false;
      }
    }
    return true;
  }

  void pause() {
    if (paused_) {
      return;
    }
    paused_ = true;
    Server& s = *servers_[current_];
    s.conn->enableReading(false);  // its read timeout stops with it
    pause_output_ = UINT64_MAX;
    pause_progress_ns_ = common::monotonicNs();
    poll_.start(kPollMs, /*periodic=*/true);
  }

  // Every kPollMs while paused: resume once the request streams and the client has room. A
  // client that drains none of its unsent output for its stall limit while another dump waits
  // for this worker's turn is closed (as a backend connection closes a slow reader that holds
  // it); alone, after kIdleMs: the dump holds each server's crawler, which dumps for nobody else
  // meanwhile (other workers' dumps get BUSY), as long as a server may stay quiet. A client that
  // reads, however slowly, is never closed.
  void checkPaused() {
    if (r_ == nullptr || !paused_) {
      poll_.stop();
      return;
    }
    RequestOwner* client = r_->session;
    if (client == nullptr) {
      poll_.stop();
      abandon();
      return;
    }
    if (client->tryStream(*r_) && !client->outputFull()) {
      poll_.stop();
      paused_ = false;
      Server& s = *servers_[current_];
      s.conn->enableReading(true);
      stream(s);  // what is already in its input
      return;
    }
    const uint64_t now = common::monotonicNs();
    const uint64_t out = client->outputSize();
    if (out < pause_output_) {
      pause_output_ = out;
      pause_progress_ns_ = now;
    }
    const uint64_t limit_ms = owner_.queue_.empty() ? kIdleMs : client->stallLimitMs();
    if (out > 0 && now - pause_progress_ns_ >= limit_ms * 1000000) {
      poll_.stop();
      client->closeSlowReader();
      abandon();
    }
  }

  // The current server is done (dumped, errored or failed): on to the next one.
  void done(Server& s) {
    if (s.conn) {
      s.conn->close();
    }
    if (r_ == nullptr) {
      return;
    }
    if (r_->session == nullptr) {
      abandon();
      return;
    }
    next();
  }

  void onClosed(Server& s) {
    if (s.state != State::Reading) {
      return;
    }
    s.state = State::Failed;  // what it had streamed stays sent; the rest of its keys are missing
    if (paused_) {
      paused_ = false;
      poll_.stop();
    }
    done(s);
  }

  void abandon() {
    if (r_ == nullptr) {
      return;
    }
    poll_.stop();
    for (auto& s : servers_) {
      if (s->retry) {
        s->retry->stop();
      }
      if (s->conn) {
        s->conn->close();
      }
    }
    owner_.worker_.requests().release(r_);
    r_ = nullptr;
    owner_.retire();
  }

  // Every server is done: END after the dumps streamed; if none dumped, the first error a server
  // answered (they run the same memcached, so it is everyone's), else mcring's own error. Servers
  // that erred or failed are counted.
  void finish() {
    PendingRequest* r = r_;
    r_ = nullptr;
    uint32_t dumped = 0;
    Server* first_error = nullptr;
    for (auto& s : servers_) {
      if (s->state == State::Dumped) {
        ++dumped;
      } else {
        stats::bump(owner_.worker_.counters().stats_fetch_failures);
        if (s->state == State::Errored && first_error == nullptr) {
          first_error = s.get();
        }
      }
    }
    RequestOwner* client = r->session;
    if (client != nullptr) {
      if (dumped > 0 || r->streaming) {
        r->reply.append(kEnd);
      } else if (first_error != nullptr) {
        first_error->got.moveAllTo(r->reply);
      } else {
        r->reply.append(kNoServerLine);
      }
      r->complete = true;
      client->onRequestComplete(r);
    }
    owner_.worker_.requests().release(r);
    owner_.retire();
  }

  static constexpr uint32_t kPollMs = 2;
  // memcached writes a dump line into a 4 KiB buffer: anything longer is not memcached.
  static constexpr size_t kMaxLine = 16 * 1024;

  Metadumps& owner_;
  PendingRequest* r_;  // null once answered or abandoned
  const std::string line_;
  const uint32_t timeout_ms_;
  uint32_t retries_left_;  // BUSY answers, over all servers
  std::vector<std::unique_ptr<Server>> servers_;
  size_t current_ = 0;  // the server being dumped
  bool paused_ = false;
  uint64_t pause_output_ = 0;  // the client's least unsent output seen while paused, and when
  uint64_t pause_progress_ns_ = 0;
  net::Timer poll_;
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
  const std::vector<BackendServer*>* servers = &pool.by_index;
  std::vector<BackendServer*> routed_servers;
  if (pool.routed()) {
    // A routed listener's dump: every pool its routes serve from, each server once, each
    // server's idle limit the longest of those pools' (serving_pools.h).
    std::vector<PoolRuntime*> pools;
    servingPools(pool, &pools);
    distinctServers(pools, &routed_servers);
    servers = &routed_servers;
    q.timeout_ms = kIdleMs;
    for (const PoolRuntime* p : pools) {
      q.timeout_ms = std::max(q.timeout_ms, p->config().timeout_ms);
    }
  }
  q.servers.reserve(servers->size());
  for (BackendServer* server : *servers) {
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
