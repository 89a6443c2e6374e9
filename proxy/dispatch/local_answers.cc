// Dispatcher: what the proxy answers itself or broadcasts: version, verbosity, quit, stats
// (mcring's own views here, memcached's from the servers: stats_views.h), lru_crawler metadump,
// flush_all.
#include <algorithm>
#include <array>
#include <iterator>
#include <span>

#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/stats_detail.h"
#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

void Dispatcher::dispatchFlushAll(std::string_view line) {
  stats::bump(worker_.counters().cmd_flush);
  PendingRequest* r = newRequest(req_->command);
  r->shape = Shape::Broadcast;
  r->noreply = req_->noreply;
  net::Buffer& in = src_->input();
  if (!pool_->config().allow_flush_all) {
    in.drain(req_->line_length);
    refuse(r);
    return;
  }
  const protocol::Span& t = req_->noreply_token;
  std::string forward(line.substr(0, t.empty() ? line.size() : t.offset));
  if (!t.empty()) {
    forward.append(line.substr(t.offset + t.length));
  }
  in.drain(req_->line_length);
  // A routed listener's flush_all reaches every pool its routes send to.
  flush_servers_.clear();
  if (pool_->routed()) {
    routedServers(flush_servers_);
  } else {
    flush_servers_.assign(pool_->by_index.begin(), pool_->by_index.end());
  }
  uint32_t count = static_cast<uint32_t>(flush_servers_.size());
  r->fragments_left = count;
  uint32_t failed_now = 0;
  for (uint32_t s = 0; s < count; ++s) {
    BackendServer* server = flush_servers_[s];
    BackendConnection* conn = server->connectionFor(src_->id());
    stats::bump(server->stats().other_commands);
    if (conn == nullptr) {
      server->countFailure(server->lastFailure());
      if (!r->failed) {
        r->failed = true;
        r->error_line.assign(backendFailureReply(server->lastFailure()));
      }
      ++failed_now;
      continue;
    }
    conn->output().append(forward);
    conn->expect(*server, r, s, Delivery::Broadcast, Expect::OneUnit, forward.size());
  }
  if (failed_now > 0) {
    r->fragments_left -= failed_now;
    if (r->fragments_left == 0) {
      src_->completeWith(r, r->error_line);
    }
  }
}

// memcached -F's answer (silent with noreply), counted as memcached counts it: in cmd_flush too.
void Dispatcher::refuse(PendingRequest* r) {
  stats::bump(worker_.counters().cmd_flush_refused);
  stats::bump(worker_.counters().client_errors);
  src_->completeWith(r, r->noreply ? std::string_view() : protocol::kFlushAllRefusedLine);
}

void Dispatcher::refuseFlushAll(RequestSource& src, PoolRuntime& pool,
                                const protocol::Request& req) {
  begin(src, pool, req);
  line_ = {};  // its line is gone (no key)
  stats::bump(worker_.counters().cmd_flush);
  PendingRequest* r = newRequest(req_->command);
  r->noreply = req_->noreply;
  refuse(r);
}

// `watch [names...]`: memcached's names, of which mcring's stream has proxyreqs lines only (a
// bare `watch` means proxyreqs); a name memcached does not know is its ERROR. The pool's
// allow_watch decides after the names parse.
std::string Dispatcher::watchAnswer(std::string_view args, bool allowed) {
  static constexpr std::string_view kNames[] = {
      "rawcmds",    "evictions", "fetchers",    "mutations", "sysevents",
      "connevents", "proxyreqs", "proxyevents", "proxyuser", "deletions"};
  size_t pos = 0;
  while (pos < args.size()) {
    const size_t start = args.find_first_not_of(' ', pos);
    if (start == std::string_view::npos) {
      break;
    }
    size_t end = args.find(' ', start);
    end = end == std::string_view::npos ? args.size() : end;
    const std::string_view name = args.substr(start, end - start);
    if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) {
      return "ERROR\r\n";
    }
    pos = end;
  }
  return allowed ? std::string(protocol::kOkLine) : std::string(protocol::kWatchRefusedLine);
}

void Dispatcher::answerLocal(std::string_view line) {
  PendingRequest* r = newRequest(req_->command);
  // A routed listener's views are of every pool its routes serve from (serving_pools.h), not
  // only of the pool routed.cc picked for the request.
  PoolRuntime& views_pool = client_pool_->routed() ? *client_pool_ : *pool_;
  // Build the reply while `line` (a view into the input buffer) is still valid.
  std::string out;
  // Answered from the pool's servers (stats_views.h) instead of here.
  bool from_servers = false;
  protocol::StatsView view = protocol::StatsView::Version;
  switch (req_->command) {
    case Command::Version:
      from_servers = true;
      break;
    case Command::Verbosity:
      out = req_->noreply ? "" : protocol::kOkLine;
      break;
    case Command::Quit:
      r->close_after = true;
      src_->stopReading();
      break;
    case Command::Stats:
      out = req_->args.in(line);  // the arguments, for now
      if (auto v = protocol::statsViewOf(out)) {
        view = *v;
        from_servers = true;
        if (view == protocol::StatsView::CacheDump && !client_pool_->config().allow_dump) {
          from_servers = false;
          out = protocol::kCacheDumpRefusedLine;
          stats::bump(worker_.counters().client_errors);
        }
      } else if (std::string args = std::move(out); answerStatsDetail(*pool_, args, &out)) {
        if (out.starts_with("CLIENT_ERROR")) {
          stats::bump(worker_.counters().client_errors);
        }
      } else {
        if (!views_.renderer().render(args, &out)) {
          stats::bump(worker_.counters().client_errors);
        }
      }
      break;
    case Command::LruCrawler:
      if (!client_pool_->config().allow_dump) {
        stats::bump(worker_.counters().client_errors);
        out = protocol::kMetadumpRefusedLine;
        break;
      }
      out = line.substr(0, req_->line_length);
      src_->input().drain(req_->line_length);
      dumps_.answer(views_pool, r, out);
      return;
    case Command::Watch:
      out = watchAnswer(req_->args.in(line), client_pool_->config().allow_watch);
      if (out == protocol::kOkLine) {
        src_->input().drain(req_->line_length);
        if (!src_->beginWatch()) {
          out = protocol::kWatchTooManyLine;
        }
        src_->completeWith(r, out);
        return;
      }
      stats::bump(worker_.counters().client_errors);
      break;
    default:
      out = "ERROR\r\n";
      break;
  }
  src_->input().drain(req_->line_length);
  if (from_servers) {
    views_.answer(*src_, views_pool, r, view, out);
    return;
  }
  src_->completeWith(r, out);
}

}  // namespace mcring::core
