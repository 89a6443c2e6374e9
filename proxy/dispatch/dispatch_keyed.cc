// Dispatcher: a keyed request (storage, delete/incr/decr/touch, meta) to its key's server, through
// its pool's handlers (pool_handler.h: replication, hot-key spread, warm-up).
#include <algorithm>
#include <array>
#include <span>

#include "proxy/dispatch/command_counters.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/unavailable.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

void Dispatcher::dispatchKeyed(std::string_view line) {
  auto& counters = worker_.counters();
  stats::bump(counters.*kWorkerCounterOf[effectIndex(req_->command)]);
  bool meta = protocol::commandClass(req_->command) == CommandClass::Meta;
  if (meta) {
    stats::bump(counters.cmd_meta);
  }
  PendingRequest* r = newRequest(req_->command);
  if (!meta) {
    r->noreply = req_->noreply;
  }
  KeyedCall call;
  call.r = r;
  call.line = line;
  call.key = req_->routingKey(line, 0);
  // Meta q is left for the backend to apply (which replies it hides depends on the item: an
  // autovivified `ma` still answers HD); an `mn` after it tells where its reply ends.
  call.quiet_meta = meta && req_->noreply;
  call.index = pool_->route(call.key);
  // The pool's features (pool_handler.h), phase by phase.
  const auto& handlers = pool_->handlers;
  for (const auto& h : handlers) {
    if (h->takeKeyed(*this, call)) {
      return;
    }
  }
  for (const auto& h : handlers) {
    h->placeKeyed(*this, call);
  }
  call.server = pool_->by_index[call.index];
  countForBackend(*call.server, call.key);
  prepareUnavailableAnswer(*r, *pool_, *req_, line);
  for (const auto& h : handlers) {
    h->placedKeyed(*this, call);
  }
  call.conn = call.server->connectionFor(src_->id());
  if (call.conn == nullptr) {
    for (const auto& h : handlers) {
      if (h->keyedUnavailable(*this, call)) {
        return;
      }
    }
    failUnavailable(r, *call.server, consumedLength());
    return;
  }
  for (const auto& h : handlers) {
    h->prepareKeyed(*this, call);
  }
  for (const auto& h : handlers) {
    if (h->sendKeyed(*this, call)) {
      return;
    }
  }
  sendDirect(call);
}

// The request to its server as one Direct request: the client's bytes moved, not copied (but
// for a classic noreply token, which mcring drops: it reads every reply itself).
void Dispatcher::sendDirect(KeyedCall& call) {
  PendingRequest* r = call.r;
  const std::string_view line = call.line;
  BackendConnection* conn = call.conn;
  net::Buffer& in = src_->input();
  net::Buffer& out = conn->output();
  uint64_t sent = consumedLength();
  if (call.quiet_meta) {
    in.moveTo(out, consumedLength());
    protocol::RequestWriter mn(out);
    mn.noop();
    conn->expect(*call.server, r, 0, Delivery::Direct, Expect::UntilNoop, sent + mn.written());
    return;
  }
  if (replayable(line)) {  // no data block: the line is the whole request
    r->resend.assign(line.substr(0, req_->line_length));
    if (!req_->noreply_token.empty()) {
      r->resend.erase(req_->noreply_token.offset, req_->noreply_token.length);
    }
  }
  if (req_->noreply_token.empty()) {
    in.moveTo(out, consumedLength());
  } else {
    sent -= req_->noreply_token.length;
    const protocol::Span& t = req_->noreply_token;
    out.append(line.substr(0, t.offset));
    out.append(line.substr(t.offset + t.length));
    in.drain(req_->line_length);
    if (req_->has_data) {
      in.moveTo(out, req_->value_length + 2);
    }
  }
  conn->expect(*call.server, r, 0, Delivery::Direct, Expect::OneUnit, sent);
}

// A keyed request that is safe to send twice if its backend connection closes under it
// (BackendConnection::replayable): touch (it sets the same TTL again) and an mg without N (creates
// the item on a miss, and only the first asker wins it) or R (wins a recache); its T sets the same
// TTL again. A quiet mg never gets here (it ends with the mn mcring adds).
bool Dispatcher::replayable(std::string_view line) const {
  if (req_->command == Command::Touch) {
    return true;
  }
  if (req_->command != Command::MetaGet) {
    return false;
  }
  std::string_view args = req_->args.in(line);
  size_t key_end = req_->keys[0].offset + req_->keys[0].length - req_->args.offset;
  std::string_view flags = args.substr(std::min(key_end, args.size()));
  for (size_t i = 0; i < flags.size(); ++i) {
    if ((i == 0 || flags[i - 1] == ' ') && (flags[i] == 'N' || flags[i] == 'R')) {
      return false;
    }
  }
  return true;
}

}  // namespace mcring::core
