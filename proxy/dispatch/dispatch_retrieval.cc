// Dispatcher: get/gets/gat/gats: the keys routed, a single-server get forwarded as-is, a multi-get
// split into per-server fragments (or shared get lines, coalesce_gets) and reassembled in key
// order (dispatch/multiget.h).
#include <algorithm>
#include <array>
#include <span>

#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/failover.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/dispatch/route_failover.h"
#include "proxy/dispatch/spread_fill.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

void Dispatcher::dispatchRetrieval(std::string_view line) {
  auto& counters = worker_.counters();
  size_t n = req_->keys.size();
  stats::bump(counters.cmd_get, n);
  if (req_->command == Command::Gat || req_->command == Command::Gats) {
    stats::bump(counters.cmd_touch);
  }
  routes_.resize(n);
  spread_reads_.clear();
  RetrievalCall call;
  call.line = line;
  call.servers = std::span<uint32_t>(routes_);
  call.spread_reads = &spread_reads_;
  // Each key's server: the ring's, unless the pool's handlers (pool_handler.h) place it.
  const auto& handlers = pool_->handlers;
  bool single = true;
  for (size_t i = 0; i < n; ++i) {
    routes_[i] = pool_->route(req_->keys[i].in(line));
    for (const auto& h : handlers) {
      h->placeKey(*this, call, i);
    }
    single = single && routes_[i] == routes_[0];
  }
  for (const auto& h : handlers) {
    h->placedKeys(*this, call);
  }
  if (!single || call.split || coalescing() || splitsLines(line.size()) || !key_probes_.empty() ||
      !multiget_failover_.empty()) {
    // Per-key bookkeeping: keys on several servers; a handler's (a moved key's second hop, a
    // key read at a spread copy, a replica's failover); a get whose keys share a line with
    // other requests' (coalesce_gets); a long gat/gats that goes to its server as several
    // lines; a routed get whose keys are compared with a shadow's answers, which needs each
    // key's hit or miss, or whose keys may fail over to other pools one by one.
    dispatchMultiget(line, &call);
    return;
  }
  // Every key lives on one backend: forward the line as-is and pass the reply through.
  PendingRequest* r = newRequest(req_->command);
  r->key_count = static_cast<uint32_t>(n);
  BackendServer* server = pool_->by_index[routes_[0]];
  for (size_t i = 0; i < n; ++i) {
    countForBackend(*server, req_->keys[i].in(line));
  }
  BackendConnection* conn = server->connectionFor(src_->id());
  if (conn == nullptr) {
    failUnavailable(r, *server, req_->line_length);
    return;
  }
  r->resend.assign(line.substr(0, req_->line_length));  // a retrieval may be sent again
  src_->input().moveTo(conn->output(), req_->line_length);
  conn->expect(*server, r, 0, Delivery::Direct, Expect::Retrieval, req_->line_length);
}

void Dispatcher::dispatchMultiget(std::string_view line, const RetrievalCall* call) {
  auto& counters = worker_.counters();
  PendingRequest* r = newRequest(req_->command);
  r->shape = Shape::Multiget;
  r->exptime = req_->exptime;
  const bool warm = call != nullptr && call->warm;
  size_t n = req_->keys.size();
  r->key_count = static_cast<uint32_t>(n);
  r->line.assign(line);
  r->key_offsets.resize(2 * n);
  r->key_fragment.resize(n);
  r->key_hit_length.assign(n, 0);
  if (!key_servers_.empty()) {
    r->key_server.assign(key_servers_.begin(), key_servers_.end());
  }
  if (call != nullptr) {
    for (const auto& h : pool_->handlers) {
      h->prepareMultiget(*this, *call, *r);
    }
  }
  // A route's failover, unless the pool's own replica failover or warm-up handles its misses.
  const bool route_failover = !multiget_failover_.empty() && r->read_failover == nullptr && !warm;
  if (route_failover) {
    prepareMultigetFailover(*r);
  }
  size_t servers = across_ != nullptr ? across_->size() : pool_->by_index.size();
  fragment_of_.assign(servers, -1);
  fragment_bytes_.clear();
  const bool split = splitsLines(line.size());
  // "gat <exptime>" ... "\r\n": what every line of a fragment carries besides its keys.
  const size_t overhead = protocol::commandName(req_->command).size() + req_->exptime.length + 4;
  uint32_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    r->key_offsets[2 * i] = req_->keys[i].offset;
    r->key_offsets[2 * i + 1] = req_->keys[i].length;
    uint32_t s = routes_[i];
    const size_t add = 1 + req_->keys[i].length;
    if (fragment_of_[s] >= 0 && split &&
        fragment_bytes_[static_cast<size_t>(fragment_of_[s])] + add > kMaxBackendLine) {
      fragment_of_[s] = -1;  // this server's line is full: its next keys start another
    }
    if (fragment_of_[s] < 0) {
      fragment_of_[s] = static_cast<int32_t>(count);
      if (r->fragments.size() <= count) {
        r->fragments.emplace_back();
      }
      r->fragments[count].server = s;
      fragment_bytes_.push_back(overhead);
      ++count;
    }
    uint32_t f = static_cast<uint32_t>(fragment_of_[s]);
    fragment_bytes_[f] += add;
    countForBackend(key_servers_.empty() ? serverAt(s) : *key_servers_[i], req_->keys[i].in(line));
    r->key_fragment[i] = f;
    r->fragments[f].key_indices.push_back(static_cast<uint32_t>(i));
  }
  r->fragment_count = count;
  r->fragments_left = count;
  src_->input().drain(req_->line_length);
  if (route_failover) {
    // Its fragments name their servers in the request's own list, which failover extends.
    RouteState& st = *r->route;
    for (uint32_t f = 0; f < count; ++f) {
      BackendServer& server = serverAt(r->fragments[f].server);
      st.servers.push_back(&server);
      st.server_pools.push_back(&server.pool());
      r->fragments[f].server = f;
    }
  }

  std::string_view name = protocol::commandName(req_->command);
  // Send every fragment first, then account for immediate failures, so that a request that
  // completes synchronously is never touched again here.
  uint32_t failed_now = 0;
  bool errored_now = false;
  for (uint32_t f = 0; f < count; ++f) {
    Fragment& frag = r->fragments[f];
    BackendServer* server =
        route_failover ? r->route->servers[frag.server] : &serverAt(frag.server);
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      frag.done = true;
      countFragmentFailure(*server, *r, frag, server->lastFailure());
      if (r->read_failover != nullptr || route_failover) {
        // its keys go on to their next replicas (failover.h) or pools (route_failover.h)
        frag.failed = true;
        frag.failure = server->lastFailure();
        ++failed_now;
        continue;
      }
      // Its keys are misses (unavailable_reads: miss), or the whole reply is the failure.
      if (!answerUnavailable(*r, f, *server, server->lastFailure(), worker_)) {
        errored_now = true;
        if (!r->failed) {
          r->failed = true;
          r->error_line.assign(backendFailureReply(server->lastFailure()));
        }
      }
      ++failed_now;
      continue;
    }
    if (coalescing()) {
      conn->sendSharedKeys(*server, r, f, name);
      continue;
    }
    const size_t bytes = writeFragmentLine(conn->output(), *r, frag);
    conn->expect(*server, r, f, Delivery::Fragment, Expect::Retrieval, bytes);
  }
  if (failed_now > 0) {
    if (errored_now) {  // a replicated read: counted if no replica serves it (failover.h)
      stats::bump(counters.server_errors);
    }
    r->fragments_left -= failed_now;
    if (r->fragments_left == 0) {
      if (continueReadFailover(*r, worker_) || continueRouteMultiget(*r, worker_)) {
        return;  // the next replicas, or the routes' next pools, answer it
      }
      assembleMultiget(*r, counters);
      r->complete = true;
      src_->onRequestComplete(r);
    }
  }
}

}  // namespace mcring::core
