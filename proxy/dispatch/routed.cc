// Routes (config `routes`, docs/design.md "Routes"): a routed listener's request goes through
// its key's route, a chain of route handlers (route_handler.h, built by route_tree.h) that ends
// in a pool, and on through that pool's own dispatch (replication, spread, warm-up, its
// unavailable_* answers). The Dispatcher is the handlers' RouteContext: they decide, it sends.
// A multi-get whose keys are all in one route is that pool's multi-get; one across routes is
// split by server over all their pools and reassembled in the client's key order (without the
// pools' warm-up, read failover and spread, which work within one pool).
#include <algorithm>
#include <ctime>

#include "proxy/backend/backend_server.h"
#include "proxy/common/clock.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/route_handler.h"
#include "proxy/protocol/exptime_cap.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

namespace {

constexpr std::string_view kNoRouteLine = "SERVER_ERROR no route for key\r\n";
constexpr std::string_view kBadLine = "CLIENT_ERROR bad command line format\r\n";

// Whether a command's TTL, if it sets one, is what a route's max_ttl caps: every keyed command
// (protocol::capLineExptime leaves those without a TTL alone); among reads, gat and gats.
bool setsTtl(Command c) {
  return protocol::commandClass(c) != CommandClass::Retrieval || c == Command::Gat ||
         c == Command::Gats;
}

}  // namespace

void Dispatcher::dispatchRouted(std::string_view line) {
  PoolRuntime& front = *pool_;
  switch (protocol::commandClass(req_->command)) {
    case CommandClass::Retrieval:
      routedRetrieval(line);
      break;
    case CommandClass::Storage:
    case CommandClass::Keyed:
    case CommandClass::Meta:
      routedKeyed(line);
      break;
    case CommandClass::Broadcast:  // flush_all: every pool of the routes (dispatchFlushAll)
    case CommandClass::MetaNoop:
      dispatchToPool(line);
      break;
    case CommandClass::Local:
      // memcached's stats views, version and lru_crawler metadump are merged over every pool
      // the routes serve from (answerLocal, serving_pools.h); the request is tagged with the
      // home pool (the default route's, else the first route's) for its other local answers.
      // mcring's own `stats` is the process's, as anywhere.
      if (front.home == nullptr) {
        answerRouted(kNoRouteLine);
        break;
      }
      pool_ = front.home;
      dispatchToPool(line);
      break;
  }
  ShadowProbe::release(probe_);  // a probe no request took (the read was answered here)
  for (KeyProbe& k : key_probes_) {
    ShadowProbe::release(k.probe);
  }
  key_probes_.clear();
  multiget_failover_.clear();
  route_ = nullptr;
}

// The pools of a routed listener's routes (their failover and shadow pools too), each server
// once: what flush_all reaches.
void Dispatcher::routedServers(std::vector<BackendServer*>& out) const {
  std::vector<const PoolRuntime*> pools;
  auto add = [&](const PoolRuntime* p) {
    if (p != nullptr && std::find(pools.begin(), pools.end(), p) == pools.end()) {
      pools.push_back(p);
      out.insert(out.end(), p->by_index.begin(), p->by_index.end());
    }
  };
  for (const RouteRuntime& route : pool_->routes) {
    add(route.pool);
    add(route.shadow);
    for (const PoolRuntime* p : route.failover) {
      add(p);
    }
  }
}

// A request answered by the route layer itself (no route, rate limited): its bytes are
// consumed and the reply is an error, which memcached sends even for noreply.
void Dispatcher::answerRouted(std::string_view reply) {
  PendingRequest* r = newRequest(req_->command);
  src_->input().drain(consumedLength());
  stats::bump(worker_.counters().server_errors);
  src_->completeWith(r, reply);
}

// max_ttl: the line with every TTL it sets capped (protocol/exptime_cap.h). The client's line
// is replaced in the input by the capped one, parsed again, so the rest of dispatch sees a
// request like any other; its data block, if any, stays where it is.
std::string_view Dispatcher::applyTtlCap(std::string_view line, uint32_t max_ttl) {
  const auto now = static_cast<int64_t>(std::time(nullptr));
  if (!protocol::capLineExptime(*req_, line, max_ttl, now, &capped_line_)) {
    return line;
  }
  if (pool_->parser.parse(capped_line_, capped_req_) != protocol::ParseStatus::Ok) {
    // Longer than a line may be (an ms near the limit given its T): without its padding.
    capped_line_ = protocol::compactLine(capped_line_);
    if (pool_->parser.parse(capped_line_, capped_req_) != protocol::ParseStatus::Ok) {
      return {};  // still too long: refused
    }
  }
  // A binary client's long key is routed by the key itself, not the parser's decoding.
  capped_req_.decoded_key = req_->decoded_key;
  net::Buffer& in = src_->input();
  in.drain(req_->line_length);
  in.prepend(capped_line_);
  req_ = &capped_req_;
  return capped_line_;
}

// The admit pass of every route in `routes` (the distinct routes of the request's keys, whose
// routes are key_routes), then the TTL cap they ask for. False if the request was answered
// here; else `line` is the line to send.
bool Dispatcher::admitRoutes(std::span<const uint32_t> routes, std::span<const uint32_t> key_routes,
                             std::string_view& line) {
  ttl_cap_ = 0;
  for (const uint32_t r : routes) {
    const RouteCall call{*req_, line, key_routes, r};
    if (!pool_->routes[r].root->admit(*this, call)) {
      return false;
    }
  }
  if (ttl_cap_ > 0 && setsTtl(req_->command)) {
    line = applyTtlCap(line, ttl_cap_);
    if (line.empty()) {
      answerRouted(kBadLine);
      return false;
    }
  }
  return true;
}

// The send pass of route r: its side copies and failover, and the pool its keys go to.
PoolRuntime* Dispatcher::sendRoute(uint32_t r, std::span<const uint32_t> key_routes,
                                   std::string_view line) {
  line_ = line;
  sent_to_ = nullptr;
  pool_->routes[r].root->send(*this, RouteCall{*req_, line, key_routes, r});
  return sent_to_;
}

// A one-key request through route `index` (of its key). False if it was answered here;
// else pool_ is the pool to dispatch `line` to.
bool Dispatcher::routeOne(uint32_t index, std::string_view& line) {
  if (index == routing::PrefixTable::kNoRoute) {
    answerRouted(kNoRouteLine);
    return false;
  }
  route_ = &pool_->routes[index];
  one_route_ = index;
  const std::span<const uint32_t> key_routes(&one_route_, 1);
  if (!admitRoutes(key_routes, key_routes, line)) {
    return false;
  }
  pool_ = sendRoute(index, key_routes, line);
  return true;
}

void Dispatcher::routedKeyed(std::string_view line) {
  if (routeOne(pool_->route_table.match(req_->routingKey(line, 0)), line)) {
    dispatchKeyed(line);
  }
}

void Dispatcher::routedRetrieval(std::string_view line) {
  const size_t n = req_->keys.size();
  if (n == 1) {
    // The usual retrieval: one match, no per-key bookkeeping.
    if (routeOne(pool_->route_table.match(req_->keys[0].in(line)), line)) {
      dispatchRetrieval(line);
    }
    return;
  }
  PoolRuntime& front = *pool_;
  key_routes_.resize(n);
  route_seen_.clear();  // the distinct routes, in first-seen order (a request touches few)
  for (size_t i = 0; i < n; ++i) {
    const uint32_t index = front.route_table.match(req_->keys[i].in(line));
    if (index == routing::PrefixTable::kNoRoute) {
      answerRouted(kNoRouteLine);
      return;
    }
    key_routes_[i] = index;
    if ((i == 0 || index != key_routes_[i - 1]) &&
        std::find(route_seen_.begin(), route_seen_.end(), index) == route_seen_.end()) {
      route_seen_.push_back(index);
    }
  }
  // Each route the request touches counts it once and may refuse it; a gat's TTL is capped by
  // the smallest max_ttl among them.
  if (!admitRoutes(route_seen_, key_routes_, line)) {
    return;
  }
  route_pools_.resize(front.routes.size());
  for (const uint32_t r : route_seen_) {
    route_pools_[r] = sendRoute(r, key_routes_, line);
  }
  if (route_seen_.size() == 1) {
    route_ = &front.routes[route_seen_[0]];
    pool_ = route_pools_[route_seen_[0]];
    dispatchRetrieval(line);
    return;
  }
  // Across routes: one server list for all the keys' pools, then the multi-get split over it.
  auto& counters = worker_.counters();
  stats::bump(counters.cmd_get, n);
  if (req_->command == Command::Gat || req_->command == Command::Gats) {
    stats::bump(counters.cmd_touch);
  }
  across_servers_.clear();
  key_servers_.clear();
  routes_.resize(n);
  // Keys of pools that share a server's link (backend_link.h) go to it as one fragment: one
  // expectation and one part of the reply to match instead of one per pool. Each key keeps its
  // own server for its counters (key_servers_). Not where a route's failover sends keys on by
  // fragment, nor between pools whose unavailable_reads differ (a fragment fails by one).
  const bool merge = multiget_failover_.empty();
  bool merged = false;
  for (size_t i = 0; i < n; ++i) {
    PoolRuntime& pool = *route_pools_[key_routes_[i]];
    const std::string_view key = req_->keys[i].in(line);
    const uint32_t s = pool.config().routing.replicas > 1
                           ? readReplica(pool, worker_, key, src_->id())
                           : pool.route(key);
    BackendServer* server = pool.by_index[s];
    auto at = std::find_if(across_servers_.begin(), across_servers_.end(), [&](BackendServer* b) {
      return b == server ||
             (merge && &b->link() == &server->link() &&
              b->pool().config().unavailable_reads == pool.config().unavailable_reads);
    });
    routes_[i] = static_cast<uint32_t>(at - across_servers_.begin());
    if (at == across_servers_.end()) {
      across_servers_.push_back(server);
    } else if (*at != server && !merged) {
      merged = true;
      key_servers_.resize(i);  // the keys before were each on their fragment's server
      for (size_t k = 0; k < i; ++k) {
        key_servers_[k] = across_servers_[routes_[k]];
      }
    }
    if (merged) {
      key_servers_.push_back(server);
    }
  }
  across_ = &across_servers_;
  dispatchMultiget(line, nullptr);
  across_ = nullptr;
  key_servers_.clear();
}

// RouteContext: what the route handlers ask of the request being routed.

void Dispatcher::refuse(std::string_view reply) {
  answerRouted(reply);
}

void Dispatcher::capTtl(uint32_t max_ttl) {
  if (ttl_cap_ == 0 || max_ttl < ttl_cap_) {
    ttl_cap_ = max_ttl;
  }
}

// A write's copy, sent before the request itself moves its data block: the line as sent to
// the primary (after max_ttl; a meta q write with the mn that ends its reply).
void Dispatcher::shadowWrite(const ShadowTarget& target, size_t) {
  const std::string_view line = line_;
  const bool quiet_meta =
      protocol::commandClass(req_->command) == CommandClass::Meta && req_->noreply;
  const std::string_view sent = quiet_meta
                                    ? line.substr(0, req_->line_length)
                                    : std::string_view(lineAsSent(line, req_->noreply_token));
  shadows_.sendWrite(target, req_->routingKey(line, 0), src_->id(), sent, src_->input(),
                     req_->line_length, req_->has_data ? req_->value_length + 2 : 0, quiet_meta);
}

void Dispatcher::shadowRead(const ShadowTarget& target, size_t i) {
  const std::string_view line = line_;
  if (req_->command == Command::MetaGet) {
    probe_ = shadows_.sendRead(target, req_->routingKey(line, 0), req_->keys[0].in(line),
                               req_->key_base64, src_->id(), /*compare=*/true);
    return;
  }
  const std::string_view k = req_->keys[i].in(line);
  ShadowProbe* probe = shadows_.sendRead(target, k, k, false, src_->id(), /*compare=*/true);
  if (req_->keys.size() == 1) {
    probe_ = probe;  // the whole reply is compared (Shadows::primaryAnswered)
  } else if (probe != nullptr) {
    key_probes_.push_back({static_cast<uint32_t>(i), probe});  // by the key's hit or miss
  }
}

void Dispatcher::failOverTo(const RouteCall& call, std::span<PoolRuntime* const> pools,
                            bool on_miss) {
  if (!call.oneKey()) {
    multiget_failover_.push_back({call.route, pools, on_miss});
    return;
  }
  const std::string_view line = line_;
  Expect expect = Expect::Retrieval;  // a Direct get (not coalesced), which its route may send on
  if (protocol::commandClass(req_->command) != CommandClass::Retrieval) {
    const bool quiet_meta =
        protocol::commandClass(req_->command) == CommandClass::Meta && req_->noreply;
    expect = quiet_meta ? Expect::UntilNoop : Expect::OneUnit;
  }
  prepareRouteFailover(line, req_->routingKey(line, 0), expect);
  failover_pools_ = pools;
  failover_on_miss_ = on_miss;
}

void Dispatcher::sendTo(PoolRuntime& pool) {
  sent_to_ = &pool;
}

// A routed multi-get with failover on some of its routes (r: its request, before its fragments
// are built): which pools each key may go on to.
void Dispatcher::prepareMultigetFailover(PendingRequest& r) {
  RouteState& st = *r.route;
  st.key_failover.assign(key_routes_.size(), {});
  for (const MultigetFailover& m : multiget_failover_) {
    const auto offset = static_cast<uint32_t>(st.key_pools.size());
    st.key_pools.insert(st.key_pools.end(), m.pools.begin(), m.pools.end());
    for (size_t i = 0; i < key_routes_.size(); ++i) {
      if (key_routes_[i] == m.route) {
        st.key_failover[i] = {offset, static_cast<uint8_t>(m.pools.size()), 0, m.on_miss,
                              client_pool_->routes[m.route].stats.get()};
      }
    }
  }
  r.rewrites = true;  // assembled whole: a key may still move when later keys have answered
}

// The request as its route's next pool would get it: the line as sent (no classic noreply
// token; a meta q request with the mn that ends its reply), then its data block.
void Dispatcher::prepareRouteFailover(std::string_view line, std::string_view key, Expect expect) {
  // The copies are bounded per worker (a quarter of the listener's buffer_limit): past it, a
  // request goes without one and is not failed over, so a burst of large writes toward a
  // frozen pool does not double what it holds.
  const uint64_t size = consumedLength() + 4;
  if (worker_.routeStates().copyBytes() + size > client_pool_->config().buffer_limit / 4) {
    return;
  }
  if (expect == Expect::UntilNoop) {
    failover_bytes_.assign(line.substr(0, req_->line_length));
  } else {
    failover_bytes_.assign(lineAsSent(line, req_->noreply_token));
  }
  if (req_->has_data) {
    const uint64_t n = req_->value_length + 2;
    const size_t at = failover_bytes_.size();
    failover_bytes_.resize(at + n);
    src_->input().copyOut(req_->line_length, n, failover_bytes_.data() + at);
  }
  if (expect == Expect::UntilNoop) {
    protocol::RequestWriter(failover_bytes_).noop();
  }
  failover_key_.assign(key);
  failover_expect_ = expect;
  failover_ready_ = true;
}

}  // namespace mcring::core
