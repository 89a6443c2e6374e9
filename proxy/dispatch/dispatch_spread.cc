// Dispatcher, as the PoolContext of SpreadHandler (pool_handlers.h; backend/hot_spread.h): which
// copy a read goes to, a write to every copy.
#include <algorithm>
#include <array>
#include <span>

#include "proxy/backend/spread_write.h"
#include "proxy/common/clock.h"
#include "proxy/dispatch/command_counters.h"
#include "proxy/dispatch/direct_features.h"
#include "proxy/dispatch/dispatcher.h"
#include "proxy/dispatch/spread_fill.h"

namespace mcring::core {

using protocol::Command;
using protocol::CommandClass;

// The copy a plain read of a spread key goes to: a random filled one (the primary while the
// key collapses, or during a warm-up window, whose second hops assume the key's own server).
// Starts a fill if a copy is unfilled and the pool's set has settled.
uint32_t Dispatcher::readCopy(const std::shared_ptr<SpreadEntry>& entry) {
  SpreadEntry& e = *entry;
  if (pool_->warmup) {
    return 0;
  }
  const uint64_t now = common::coarseMonotonicNs() / 1000000;
  if (e.phase.load() == SpreadPhase::Spreading && !e.allFilled(now) &&
      pool_->spread->settled(now)) {
    startSpreadFill(*pool_, entry, worker_, src_->id());
  }
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  uint32_t copy = e.pickRead(rng_, now);
  e.reads[copy].fetch_add(1, std::memory_order_relaxed);
  if (copy > 0) {
    stats::bump(worker_.counters().spread_reads);
  }
  return copy;
}

// A write of a spread key: to every copy (classic noreply dropped there, as for the primary:
// mcring reads every reply), the client's reply the primary's, sent once every copy answered
// (`rewrites`: never streamed before). A copy that answers otherwise loses its filled bit.
void Dispatcher::sendToCopies(KeyedCall& call) {
  PendingRequest* r = call.r;
  BackendConnection& primary = *call.conn;
  const std::shared_ptr<SpreadEntry>& entry = *call.spread;
  const std::string_view line = call.line;
  SpreadEntry& e = *entry;
  net::Buffer& in = src_->input();
  const std::string& head = lineAsSent(line, req_->noreply_token);
  if (req_->command == Command::Touch) {
    r->resend = head;  // replayable (see replayable())
  }
  r->rewrites = true;
  r->spread = worker_.spreadStates().acquire();
  r->spread->role = SpreadRole::Write;
  r->spread->entry = entry;
  r->spread->replies.assign(e.copies.size(), kSpreadPending);
  observeDirect(*r);  // the primary's reply is compared with the copies'
  e.writes_started.fetch_add(1);
  in.drain(req_->line_length);
  const uint64_t data_length = req_->has_data ? req_->value_length + 2 : 0;
  std::string_view data = data_length > 0 ? in.contiguous(data_length) : std::string_view();
  auto& counters = worker_.counters();
  for (uint32_t i = 1; i < e.copies.size(); ++i) {
    BackendServer* server = pool_->by_index[e.copies[i]];
    stats::bump(server->stats().*kBackendCounterOf[effectIndex(req_->command)]);
    BackendConnection* conn = server->connectionFor(src_->id());
    if (conn == nullptr) {
      continue;  // its reply stays pending: the copy is unfilled when the write settles
    }
    net::Buffer& out = conn->output();
    out.append(head);
    out.append(data);
    ++r->fragments_left;
    stats::bump(counters.spread_write_copies);
    conn->expect(*server, r, spreadCopyHandler(), i, Expect::OneUnit, head.size() + data.size());
  }
  net::Buffer& out = primary.output();
  out.append(head);
  if (data_length > 0) {
    in.moveTo(out, data_length);
  }
  primary.expect(*call.server, r, 0, Delivery::Direct, Expect::OneUnit, head.size() + data_length);
}

}  // namespace mcring::core
