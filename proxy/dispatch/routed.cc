// Routes (config `routes`, docs/design.md "Routes"): a routed listener's request goes to the pool
// of its key's route, through that pool's own dispatch (replication, spread, warm-up, its
// unavailable_* answers), after the route's own steps: its rate limit, its TTL cap and its
// shadow copy. A multi-get whose keys are all in one route is that pool's multi-get; one across
// routes is split by server over all their pools and reassembled in the client's key order
// (without the pools' warm-up, read failover and spread, which work within one pool).
#include <algorithm>
#include <ctime>

#include "proxy/backend/backend_server.h"
#include "proxy/common/clock.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/failover.h"
#include "proxy/protocol/exptime_cap.h"
#include "proxy/protocol/reply_lines.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

namespace {

constexpr std::string_view kNoRouteLine = "SERVER_ERROR no route for key\r\n";
constexpr std::string_view kRateLimitedLine = "SERVER_ERROR rate limited\r\n";
constexpr std::string_view kBadLine = "CLIENT_ERROR bad command line format\r\n";

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
      // memcached's stats views, version and lru_crawler come from one pool: the default
      // route's, else the first route's. mcring's own `stats` is the process's, as anywhere.
      if (front.home == nullptr) {
        answerRouted(kNoRouteLine);
        break;
      }
      pool_ = front.home;
      dispatchToPool(line);
      break;
  }
  ShadowProbe::release(probe_);  // a probe no request took (the read was answered here)
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

// The route's rate limit: a token now, or the request is answered at once (never queued).
bool Dispatcher::admit(RouteRuntime& route) {
  if (route.limit == nullptr || route.limit->tryTake(common::monotonicNs())) {
    return true;
  }
  stats::bump(route.stats->rate_limited);
  return false;
}

// max_ttl: the line with every TTL it sets capped (protocol/exptime_cap.h). The client's line
// is replaced in the input by the capped one, parsed again, so the rest of dispatch sees a
// request like any other; its data block, if any, stays where it is.
std::string_view Dispatcher::capTtl(std::string_view line, uint32_t max_ttl) {
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

// A one-key request enters the route `index` (of the key it routed): counted, its token taken
// and, if `caps` (the request sets a TTL), its TTL capped. False if it was answered here (no
// route, rate limited, a capped line too long); else `line` is the line to dispatch.
bool Dispatcher::enterRoute(uint32_t index, std::string_view& line, bool caps) {
  if (index == routing::PrefixTable::kNoRoute) {
    answerRouted(kNoRouteLine);
    return false;
  }
  route_ = &pool_->routes[index];
  stats::bump(route_->stats->requests);
  if (!admit(*route_)) {
    answerRouted(kRateLimitedLine);
    return false;
  }
  if (caps && route_->config->max_ttl > 0) {
    line = capTtl(line, route_->config->max_ttl);
    if (line.empty()) {
      answerRouted(kBadLine);
      return false;
    }
  }
  return true;
}

void Dispatcher::routedKeyed(std::string_view line) {
  if (!enterRoute(pool_->route_table.match(req_->routingKey(line, 0)), line, /*caps=*/true)) {
    return;
  }
  const std::string_view key = req_->routingKey(line, 0);
  if (Shadows::shadows(*route_, key)) {
    shadowKeyed(line, key);
  }
  if (!route_->failover.empty()) {
    const bool quiet_meta =
        protocol::commandClass(req_->command) == CommandClass::Meta && req_->noreply;
    prepareRouteFailover(line, key, quiet_meta ? Expect::UntilNoop : Expect::OneUnit);
  }
  pool_ = route_->pool;
  dispatchKeyed(line);
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

// The shadow's copy of a keyed request, sent before the request itself moves its data block.
void Dispatcher::shadowKeyed(std::string_view line, std::string_view key) {
  const RouteRuntime& route = *route_;
  if (req_->command == Command::MetaGet) {
    if (!route.config->shadow->writes_only) {
      probe_ = shadows_.sendRead(route, key, req_->keys[0].in(line), req_->key_base64, src_->id(),
                                 /*compare=*/true);
    }
    return;
  }
  if (req_->command == Command::MetaDebug) {
    return;  // a read of the item's metadata: nothing to copy or compare
  }
  const bool quiet_meta =
      protocol::commandClass(req_->command) == CommandClass::Meta && req_->noreply;
  const std::string_view sent = quiet_meta
                                    ? line.substr(0, req_->line_length)
                                    : std::string_view(lineAsSent(line, req_->noreply_token));
  shadows_.sendWrite(route, key, src_->id(), sent, src_->input(), req_->line_length,
                     req_->has_data ? req_->value_length + 2 : 0, quiet_meta);
}

// The usual retrieval, one key: one match, no per-key bookkeeping.
void Dispatcher::routedRetrievalOne(std::string_view line) {
  const bool touches = req_->command == Command::Gat || req_->command == Command::Gats;
  if (!enterRoute(pool_->route_table.match(req_->keys[0].in(line)), line, touches)) {
    return;
  }
  if (route_->shadow != nullptr) {
    const std::string_view k = req_->keys[0].in(line);
    if (!route_->config->shadow->writes_only && Shadows::shadows(*route_, k)) {
      probe_ = shadows_.sendRead(*route_, k, k, false, src_->id(), /*compare=*/true);
    }
  }
  if (!route_->failover.empty()) {
    // A Direct get (not coalesced), which its route may send on.
    prepareRouteFailover(line, req_->keys[0].in(line), Expect::Retrieval);
  }
  pool_ = route_->pool;
  dispatchRetrieval(line);
}

void Dispatcher::routedRetrieval(std::string_view line) {
  const size_t n = req_->keys.size();
  if (n == 1) {
    routedRetrievalOne(line);
    return;
  }
  PoolRuntime& front = *pool_;
  key_routes_.resize(n);
  bool single = true;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t index = front.route_table.match(req_->keys[i].in(line));
    if (index == routing::PrefixTable::kNoRoute) {
      answerRouted(kNoRouteLine);
      return;
    }
    key_routes_[i] = index;
    single = single && index == key_routes_[0];
  }
  // Each route the request touches counts it once and takes one token; a gat's TTL is capped
  // by the smallest max_ttl among them.
  route_seen_.clear();  // the distinct routes, in first-seen order (a request touches few)
  uint32_t cap = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = key_routes_[i];
    if ((i > 0 && r == key_routes_[i - 1]) ||
        std::find(route_seen_.begin(), route_seen_.end(), r) != route_seen_.end()) {
      continue;
    }
    route_seen_.push_back(r);
    RouteRuntime& route = front.routes[r];
    stats::bump(route.stats->requests);
    if (!admit(route)) {
      answerRouted(kRateLimitedLine);
      return;
    }
    const uint32_t max_ttl = route.config->max_ttl;
    if (max_ttl > 0 && (cap == 0 || max_ttl < cap)) {
      cap = max_ttl;
    }
  }
  if (cap > 0 && (req_->command == Command::Gat || req_->command == Command::Gats)) {
    line = capTtl(line, cap);
    if (line.empty()) {
      answerRouted(kBadLine);
      return;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const RouteRuntime& route = front.routes[key_routes_[i]];
    const std::string_view key = req_->keys[i].in(line);
    if (route.shadow != nullptr && !route.config->shadow->writes_only &&
        Shadows::shadows(route, key)) {
      // Only a one-key read's answers are compared (a multi-get's reply is not kept whole).
      shadows_.sendRead(route, key, key, false, src_->id(), /*compare=*/false);
    }
  }
  if (single) {
    route_ = &front.routes[key_routes_[0]];
    pool_ = route_->pool;
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
  routes_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    PoolRuntime& pool = *front.routes[key_routes_[i]].pool;
    const std::string_view key = req_->keys[i].in(line);
    const uint32_t s = pool.config().routing.replicas > 1
                           ? readReplica(pool, worker_, key, src_->id())
                           : pool.route(key);
    BackendServer* server = pool.by_index[s];
    auto at = std::find(across_servers_.begin(), across_servers_.end(), server);
    routes_[i] = static_cast<uint32_t>(at - across_servers_.begin());
    if (at == across_servers_.end()) {
      across_servers_.push_back(server);
    }
  }
  across_ = &across_servers_;
  dispatchMultiget(line, /*warm=*/false);
  across_ = nullptr;
}

}  // namespace mcring::core
