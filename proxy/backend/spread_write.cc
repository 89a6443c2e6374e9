// Spread writes compared copy by copy, copy misses, fill ends.
#include "proxy/backend/spread_write.h"

#include <algorithm>
#include <functional>

#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/common/clock.h"

namespace mcring::core {

namespace {

class SpreadCopyReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection&, PendingRequest& r, uint32_t copy,
                     const protocol::Reply& rep, std::string_view unit) override {
    if (rep.isListItem() || rep.data_length > 0) {
      return UnitVerdict::Desync;
    }
    recordSpreadReply(r, copy, rep, unit);
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection&, PendingRequest& r, uint32_t copy, BackendFailure) override {
    if (r.spread != nullptr && copy < r.spread->replies.size()) {
      r.spread->replies[copy] = kSpreadFailed;
    }
  }
};

SpreadCopyReply spread_copy_reply;

}  // namespace

ReplyHandler& spreadCopyHandler() {
  return spread_copy_reply;
}

void recordSpreadReply(PendingRequest& r, uint32_t copy, const protocol::Reply& rep,
                       std::string_view line) {
  if (r.spread == nullptr || copy >= r.spread->replies.size()) {
    return;
  }
  if (copy == 0) {
    r.spread->primary_ok = !rep.isError();
  }
  // The whole line: storage replies are fixed words, incr/decr's a number both must agree on.
  uint64_t h = std::hash<std::string_view>{}(line.substr(0, rep.line_length));
  r.spread->replies[copy] = h >= kSpreadPending ? h - 2 : h;
}

void missedAtCopy(SpreadEntry& entry, uint32_t copy, stats::WorkerCounters& c) {
  if (copy == 0) {
    return;
  }
  entry.clearCopy(copy);
  stats::bump(c.spread_copy_mismatches);
}

void settleSpreadWrite(PendingRequest& r, stats::WorkerCounters& c) {
  if (r.spread == nullptr) {
    return;
  }
  const SpreadState& s = *r.spread;
  for (const SpreadRead& read : s.reads) {
    if (read.copy == 0) {
      read.entry->writes_done.fetch_add(1);  // a gat/gats at the primary: its TTL change is done
    }
  }
  if (!s.entry) {
    return;
  }
  if (s.role == SpreadRole::Invalidate) {
    s.entry->writes_done.fetch_add(1);
    return;
  }
  if (s.role != SpreadRole::Write) {
    return;
  }
  SpreadEntry& e = *s.entry;
  const uint64_t primary = s.replies.empty() ? kSpreadFailed : s.replies[0];
  const bool primary_ok = s.primary_ok && primary != kSpreadFailed;
  for (uint32_t i = 1; i < s.replies.size(); ++i) {
    // A copy the request did not reach (no connection) is still pending: it differs too.
    if (!primary_ok || s.replies[i] != primary) {
      if ((e.filled.load() & (1u << i)) != 0) {
        stats::bump(c.spread_copy_mismatches);
      }
      e.clearCopy(i);
    }
  }
  // Only now, after the bits: a fill that starts next sees the copies as this write left them.
  e.writes_done.fetch_add(1);
}

void endSpreadFill(PendingRequest& r, bool ok, stats::WorkerCounters& c) {
  if (r.spread == nullptr || !r.spread->entry) {
    return;
  }
  const SpreadState& s = *r.spread;
  SpreadEntry& e = *s.entry;
  if (ok && s.role == SpreadRole::FillWrite && e.writes_started.load() == s.mark &&
      e.phase.load() == SpreadPhase::Spreading) {
    e.markFilled(s.copy, common::monotonicNs() / 1000000);
    e.fills.fetch_add(1);
    stats::bump(c.spread_fills);
  } else {
    e.fills_abandoned.fetch_add(1);
    stats::bump(c.spread_fills_abandoned);
  }
  e.fill_in_flight.store(false);
}

bool spreadStartsQuiet(const PoolRuntime& pool, const SpreadSet* current, const SpreadSet& next) {
  if (next.topology != pool.topology) {
    return false;  // routed by another snapshot: no telling which server holds what
  }
  for (const auto& e : next.entries) {
    if (current != nullptr && current->topology == next.topology &&
        std::any_of(current->entries.begin(), current->entries.end(),
                    [&](const std::shared_ptr<SpreadEntry>& c) { return c == e; })) {
      continue;  // already spread: its writes went to every copy, counted by the entry
    }
    const uint32_t primary = e->copies.empty() ? 0 : e->copies[0];
    if (primary >= pool.by_index.size() || pool.by_index[primary]->changesInFlight()) {
      return false;
    }
  }
  return true;
}

}  // namespace mcring::core
