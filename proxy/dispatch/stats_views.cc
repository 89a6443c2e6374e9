// StatsViews: fetching a view from every server of a pool, caching it, answering the waiters.
#include "proxy/dispatch/stats_views.h"

#include <sys/resource.h>

#include <algorithm>

#include "mcring_version.h"
#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/common/clock.h"
#include "proxy/common/log.h"
#include "proxy/dispatch/serving_pools.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

using protocol::StatsView;

// One pool's view (or a routed listener's: over the pools it routes to, serving_pools.h): its
// last answers, and the fetch in flight with the requests waiting for it.
// It owns the detached request that asks the servers (as that request's RequestOwner), so the
// backend connections deliver the answers here; it has no socket, so it never streams and holds
// at most kMaxHeld bytes.
class StatsViews::Fetch final : public RequestOwner {
 public:
  Fetch(StatsViews& owner, std::string pool, StatsView view, std::string line)
      : owner_(owner), pool_name_(std::move(pool)), view_(view), line_(std::move(line)) {}
  ~Fetch() override {
    detach();
    for (PendingRequest* w : waiters_) {
      owner_.worker_.requests().release(w);
    }
  }

  bool inFlight() const { return inflight_ != nullptr; }

  // Drops the cached answers (a second old, or the fetch is going): their memory goes back.
  void forget() {
    answers_.clear();
    answers_.shrink_to_fit();
    error_.clear();
    have_ = false;
    uncharge();
  }

  void answer(RequestSource& src, PoolRuntime& pool, PendingRequest* r) {
    const uint64_t now = common::monotonicNs();
    const bool fresh = have_ && sameSnapshot(pool) && view_ != StatsView::CacheDump &&
                       now - fetched_ns_ < kFreshMs * 1000000;
    if (fresh) {
      deliver(r, error_.empty() ? compose(answers_, pool).reply : error_);
      return;
    }
    ++r->refs;
    waiters_.push_back(r);
    if (inflight_ == nullptr) {
      start(pool, src.id());
    }
  }

  // --- RequestOwner, for the detached request ---
  void onRequestComplete(PendingRequest* q) override {
    if (q == inflight_) {
      finalize();
    }
  }
  PoolRuntime& pool() override { return *pool_; }
  uint64_t id() const override { return session_id_; }
  bool tryStream(PendingRequest&) override { return false; }
  void streamReply(net::Buffer& from, uint64_t n) override { from.drain(n); }
  // Each unit is one line of a server's answer (STAT, ITEM, END, VERSION or an error line).
  bool holdReply(PendingRequest&, uint64_t n) override {
    if (!error_.empty()) {
      return false;
    }
    ++lines_;
    if (lines_ > max_lines_) {
      return outOfBounds(protocol::statsTooLargeLine(
          "a server sent more than " + std::to_string(protocol::maxAnswerLines(view_)) + " lines"));
    }
    if (charged_ + n > max_bytes_) {
      return outOfBounds(protocol::statsTooLargeLine("more than " + std::to_string(max_bytes_) +
                                                     " bytes from the servers"));
    }
    MemoryBudget& budget = pool_->replies_budget;
    if (charged_ + n <= kUnbudgetedHeld) {
      budget.charge(n);
    } else if (!budget.tryCharge(n)) {
      return outOfBounds(protocol::statsTooLargeLine("over the pool's buffer_limit"));
    }
    charged_ += n;
    return true;
  }
  // The backend connection refused the detached request (after holdReply said no): its units
  // are dropped.
  void releaseHeld(PendingRequest&) override { uncharge(); }
  bool canHold(const PendingRequest&, uint64_t n) const override {
    return error_.empty() && lines_ < max_lines_ && charged_ + n <= max_bytes_;
  }
  void advanceStream(PendingRequest&) override {}
  bool outputFull() const override { return false; }
  uint64_t outputSize() const override { return 0; }
  uint32_t stallLimitMs() const override { return kDeadlineMs; }
  void closeSlowReader() override {}
  void onInputBudget() override {}
  bool abandonIfPeerGone() override { return false; }
  bool abandonIfInputStalled(uint64_t) override { return false; }

 private:
  // The servers' answers to one fetch, in bytes: memcached's views of a few servers are KiBs,
  // a cachedump at most 2 MB a server, `stats conns` about 40 bytes a line. They are charged to
  // the pool's buffer_limit as they arrive (the first kUnbudgetedHeld whether or not it fits, as
  // the replies below kUnbudgetedReply: an operator reads stats exactly when the pool is over its
  // budget), and kept charged while cached.
  static constexpr uint64_t kMaxHeld = 32 * 1024 * 1024;
  static constexpr uint64_t kUnbudgetedHeld = 1024 * 1024;

  // A bound passed: the fetch answers `line` (cached like answers), now rather than at the
  // deadline; the backend connections drop the rest of their answers.
  bool outOfBounds(std::string line) {
    error_ = std::move(line);
    if (deadline_) {
      deadline_->start(0);  // finalize from the loop, not inside a backend connection's read
    }
    return false;
  }

  void uncharge() {
    if (charged_ > 0) {
      pool_->replies_budget.release(charged_);
      charged_ = 0;
    }
  }

  // The answers are of the snapshot in force: the pool's, or for a routed listener its own and
  // each of its serving pools' (a reload may change a route's pools, or their servers).
  bool sameSnapshot(const PoolRuntime& pool) const {
    if (!pool.routed()) {
      return topology_ == pool.topology.get();
    }
    std::vector<PoolRuntime*> pools;
    servingPools(pool, &pools);
    return topology_ == pool.topology.get() && snapshotOf(pools) == pools_snapshot_;
  }
  static std::vector<const void*> snapshotOf(const std::vector<PoolRuntime*>& pools) {
    std::vector<const void*> out;
    out.reserve(pools.size());
    for (const PoolRuntime* p : pools) {
      out.push_back(p->topology.get());
    }
    return out;
  }

  // The longest a fetch from `pool`'s servers waits: kDeadlineMs, or its timeout if shorter.
  static uint32_t deadlineOf(const PoolRuntime& pool) {
    const uint32_t timeout = pool.config().timeout_ms;
    return timeout > 0 ? std::min(timeout, kDeadlineMs) : kDeadlineMs;
  }

  // `pool` is the pool whose clients ask (its budget holds the answers, its limits bound them);
  // a routed listener's view asks the servers of every pool it serves from, each once
  // (serving_pools.h), and waits for the slowest of those pools' deadlines.
  void start(PoolRuntime& pool, uint64_t session_id) {
    WorkerContext& worker = owner_.worker_;
    if (pool_ != nullptr) {
      forget();  // stale (or of another snapshot): never used again
    }
    if (expiry_) {
      expiry_->stop();
    }
    pool_ = &pool;
    session_id_ = session_id;
    topology_ = pool.topology.get();
    const std::vector<BackendServer*>* servers = &pool.by_index;
    uint32_t deadline = deadlineOf(pool);
    std::vector<BackendServer*> routed_servers;
    if (pool.routed()) {
      std::vector<PoolRuntime*> pools;
      servingPools(pool, &pools);
      distinctServers(pools, &routed_servers);
      servers = &routed_servers;
      pools_snapshot_ = snapshotOf(pools);
      deadline = 0;
      for (const PoolRuntime* p : pools) {
        deadline = std::max(deadline, deadlineOf(*p));
      }
    }
    const uint32_t count = static_cast<uint32_t>(servers->size());
    lines_ = 0;
    max_lines_ = (uint64_t{protocol::maxAnswerLines(view_)} + 1) * count;  // each with its END
    max_bytes_ = kMaxHeld;
    if (view_ == StatsView::Conns || view_ == StatsView::CacheDump) {
      // Passed on whole: a reply this large could not be held for a client anyway.
      max_bytes_ =
          std::min(max_bytes_, std::max(pool.config().client_buffer_limit, kUnbudgetedHeld));
    }
    PendingRequest* q = worker.requests().acquire();
    q->refs = 1;  // ours, until finalize()
    q->session = this;
    q->shape = Shape::Stats;
    q->command =
        view_ == StatsView::Version ? protocol::Command::Version : protocol::Command::Stats;
    while (q->fragments.size() < count) {
      q->fragments.emplace_back();
    }
    q->fragment_count = count;
    q->fragments_left = count;
    inflight_ = q;
    uint32_t failed_now = 0;
    for (uint32_t s = 0; s < count; ++s) {
      q->fragments[s].server = s;
      BackendServer* server = (*servers)[s];
      BackendConnection* conn = server->connectionFor(session_id);
      stats::bump(worker.counters().stats_fetches);
      if (conn == nullptr) {
        ++failed_now;  // backing off after a failure: left out at once
        continue;
      }
      conn->output().append(line_);
      conn->expect(*server, q, s, Delivery::Stats, Expect::OneUnit, line_.size());
    }
    if (inflight_ != q) {
      return;  // every answer came at once (cannot happen over sockets, but stay safe)
    }
    q->fragments_left -= failed_now;
    if (q->fragments_left == 0) {
      finalize();
      return;
    }
    if (!deadline_) {
      deadline_ = std::make_unique<net::Timer>(worker.loop(), [this] { finalize(); });
    }
    deadline_->start(deadline);
  }

  // The servers that answered in time are in: keep their answers and answer every waiter. A
  // server still owing its answer is left out; what it sends later is dropped (the detached
  // request no longer has an owner).
  void finalize() {
    PendingRequest* q = inflight_;
    if (q == nullptr) {
      return;
    }
    if (deadline_) {
      deadline_->stop();
    }
    answers_.assign(q->fragment_count, std::nullopt);
    for (uint32_t s = 0; s < q->fragment_count && error_.empty(); ++s) {
      Fragment& fr = q->fragments[s];
      if (fr.done && !q->refused) {
        answers_[s].emplace();
        takeAll(fr.values, &*answers_[s]);
      }
    }
    detach();
    have_ = true;
    fetched_ns_ = common::monotonicNs();
    if (!expiry_) {
      expiry_ = std::make_unique<net::Timer>(owner_.worker_.loop(), [this] { forget(); });
    }
    expiry_->start(kFreshMs);
    protocol::MergedStats merged;
    if (error_.empty()) {
      merged = compose(answers_, *pool_);
      stats::bump(owner_.worker_.counters().stats_fetch_failures, merged.failed);
      if (view_ == StatsView::General && merged.failed > 0 && !merged.too_large) {
        merged = compose(answers_, *pool_);  // its own counters then include this fetch's failures
      }
      if (merged.too_large) {
        error_ = merged.reply;  // cached as the view's answer for a second, like answers
      }
    }
    if (!error_.empty()) {
      answers_.clear();
      uncharge();
      merged.reply = error_;
      stats::bump(owner_.worker_.counters().stats_fetch_failures);
      MCRING_LOG_LIMITED(Warn, "stats answer too large", "pool %s: %.*s: %.*s", pool_name_.c_str(),
                         static_cast<int>(line_.size() - 2), line_.data(),
                         static_cast<int>(error_.size() - 2), error_.data());
    }
    if (!merged.version.empty()) {
      owner_.learnVersion(pool_name_, merged.version);
    }
    // Answered after the state above is settled: a waiter's session may read and dispatch its
    // next request, a view again, from inside onRequestComplete.
    std::vector<PendingRequest*> waiters;
    waiters.swap(waiters_);
    for (PendingRequest* w : waiters) {
      if (w->session != nullptr) {
        deliver(w, merged.reply);
      }
      owner_.worker_.requests().release(w);
    }
  }

  // `reply` is w's reply. A large one (a merged cachedump can be megabytes) is held under its
  // client's memory budget like any other reply: memcached's out-of-memory error if it does not
  // fit. One of a few KiB (`stats`, `stats settings`, ...) is answered as mcring's local answers
  // are, outside the budget: an operator reads stats exactly when the pool is over its budget,
  // and such a reply is no more memory than the request that asked for it.
  void deliver(PendingRequest* w, std::string_view reply) {
    RequestOwner* client = w->session;
    const bool fits = reply.size() <= kUnbudgetedReply || client->holdReply(*w, reply.size());
    if (!fits) {
      stats::bump(owner_.worker_.counters().client_oom_replies);
    }
    w->reply.append(fits ? reply : protocol::kOutOfMemoryLine);
    w->complete = true;
    client->onRequestComplete(w);
  }

  // Moves a fragment's answer into a string a piece at a time, so it is never held twice.
  static void takeAll(net::Buffer& from, std::string* to) {
    to->reserve(from.size());
    while (!from.empty()) {
      const std::string_view piece = from.contiguous(std::min<size_t>(from.size(), 64 * 1024));
      to->append(piece);
      from.drain(piece.size());
    }
  }

  // Gives up the detached request: the backend connections keep their references until their
  // answers come, and drop them.
  void detach() {
    if (inflight_ == nullptr) {
      return;
    }
    PendingRequest* q = inflight_;
    inflight_ = nullptr;
    q->session = nullptr;
    owner_.worker_.requests().release(q);
  }

  protocol::MergedStats compose(const std::vector<std::optional<std::string>>& answers,
                                const PoolRuntime& pool) const {
    std::vector<protocol::ServerAnswer> views;
    views.reserve(answers.size());
    for (const auto& a : answers) {
      views.push_back(a ? protocol::ServerAnswer(std::string_view(*a)) : std::nullopt);
    }
    protocol::StatList own;
    if (view_ == StatsView::General) {
      owner_.renderer_.renderOwn(&own);
      own.emplace_back("max_connections", std::to_string(maxConnections(pool)));
    }
    return protocol::mergeStats(view_, views, own, owner_.versionOf(pool_name_));
  }

  // The limit a client of this pool (or routed listener) meets (memcached's -c, next to
  // curr_connections): the pool's client_connections, or with none the process's limit on open
  // files.
  static uint64_t maxConnections(const PoolRuntime& pool) {
    const uint32_t limit = pool.config().client_connections;
    if (limit != 0) {
      return limit;
    }
    rlimit files{};
    return getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
               ? static_cast<uint64_t>(files.rlim_cur)
               : 0;
  }

  StatsViews& owner_;
  const std::string pool_name_;
  const StatsView view_;
  const std::string line_;  // what is sent to each server
  PoolRuntime* pool_ = nullptr;
  uint64_t session_id_ = 0;
  const void* topology_ = nullptr;  // the snapshot the answers are for
  // A routed listener's: its serving pools' snapshots the answers are for (empty otherwise).
  std::vector<const void*> pools_snapshot_;
  bool have_ = false;
  uint64_t fetched_ns_ = 0;
  std::vector<std::optional<std::string>> answers_;
  PendingRequest* inflight_ = nullptr;
  std::vector<PendingRequest*> waiters_;
  std::unique_ptr<net::Timer> deadline_;
  std::unique_ptr<net::Timer> expiry_;  // forgets the cached answers once they are stale
  std::string error_;   // a bound was passed: the view's answer (cached as answers are)
  uint64_t lines_ = 0;  // lines of the fetch in flight, all servers
  uint64_t max_lines_ = 0;
  uint64_t max_bytes_ = 0;
  uint64_t charged_ = 0;  // bytes charged to the pool: the answers arriving, or cached
};

StatsViews::StatsViews(WorkerContext& worker, const stats::StatsRenderer& renderer)
    : worker_(worker), renderer_(renderer) {}

StatsViews::~StatsViews() = default;

void StatsViews::answer(RequestSource& src, PoolRuntime& pool, PendingRequest* r, StatsView view,
                        std::string_view args) {
  std::string key = view == StatsView::Version ? std::string("version") : std::string(args);
  auto it = fetches_.find({pool.name, key});
  if (it == fetches_.end()) {
    // Views are a handful per pool; cachedump arguments are the client's, so idle fetches of
    // them are dropped rather than kept without bound.
    if (fetches_.size() >= 64) {
      for (auto i = fetches_.begin(); i != fetches_.end();) {
        if (i->second->inFlight()) {
          ++i;
        } else {
          i->second->forget();
          i = fetches_.erase(i);
        }
      }
    }
    std::string line = view == StatsView::Version ? std::string("version\r\n")
                       : key.empty()              ? std::string("stats\r\n")
                                                  : "stats " + key + "\r\n";
    it = fetches_
             .emplace(std::make_pair(pool.name, key),
                      std::make_unique<Fetch>(*this, pool.name, view, std::move(line)))
             .first;
  }
  it->second->answer(src, pool, r);
}

std::string StatsViews::versionOf(const std::string& pool) const {
  auto it = versions_.find(pool);
  return it != versions_.end() ? it->second : std::string(MCRING_MEMCACHED_VERSION);
}

void StatsViews::learnVersion(const std::string& pool, const std::string& version) {
  versions_[pool] = version;
}

}  // namespace mcring::core
