// Hot-key spread fills: read the primary, write the copy, mark it filled if nothing changed.
#include "proxy/dispatch/spread_fill.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <string>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/spread_write.h"
#include "proxy/common/clock.h"
#include "proxy/protocol/meta_set_line.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {

namespace {

constexpr int64_t kMaxRelativeTtl = 60 * 60 * 24 * 30;  // memcached reads more as a unix time

// "VA <len> f<flags> t<ttl>\r\n": the value's length, client flags and remaining TTL (-1: none).
struct FillValue {
  uint64_t length = 0;
  std::string_view flags = "0";
  int64_t ttl = -1;
};

bool parseFillValue(std::string_view line, FillValue* v) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.remove_suffix(1);
  }
  size_t index = 0;
  size_t pos = 0;
  bool ok = true;
  while (pos < line.size() && ok) {
    size_t end = std::min(line.find(' ', pos), line.size());
    std::string_view token = line.substr(pos, end - pos);
    pos = end + 1;
    if (token.empty()) {
      continue;
    }
    if (index == 0) {
      ok = token == "VA";
    } else if (index == 1) {
      ok = std::from_chars(token.data(), token.data() + token.size(), v->length).ec == std::errc();
    } else if (token[0] == 'f') {
      v->flags = token.substr(1);
    } else if (token[0] == 't') {
      std::string_view t = token.substr(1);
      ok = std::from_chars(t.data(), t.data() + t.size(), v->ttl).ec == std::errc();
    }
    ++index;
  }
  return ok && index >= 2;
}

PendingRequest* detached(WorkerContext& worker, const PendingRequest* like) {
  PendingRequest* r = worker.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->noreply = true;
  r->spread = worker.spreadStates().acquire();
  if (like != nullptr && like->spread != nullptr) {
    r->spread->entry = like->spread->entry;
    r->spread->copy = like->spread->copy;
    r->spread->mark = like->spread->mark;
    r->spread->pool = like->spread->pool;
  }
  return r;
}

void abandon(SpreadEntry& e, WorkerContext& worker) {
  e.fills_abandoned.fetch_add(1);
  stats::bump(worker.counters().spread_fills_abandoned);
  e.fill_in_flight.store(false);
}

void onSpreadFillReply(PendingRequest& r, const protocol::Reply& rep, std::string_view unit,
                       WorkerContext& worker);

// A fill's read of the primary (it then writes the copy) or its write of the copy (the
// request's spread role says which). A fill that fails is abandoned.
class SpreadFillReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t,
                     const protocol::Reply& rep, std::string_view unit) override {
    if (rep.isListItem()) {
      return UnitVerdict::Desync;
    }
    onSpreadFillReply(r, rep, unit, conn.server().worker());
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest& r, uint32_t, BackendFailure) override {
    endSpreadFill(r, false, conn.server().worker().counters());
  }
};

SpreadFillReply spread_fill_reply;

}  // namespace

void startSpreadFill(PoolRuntime& pool, const std::shared_ptr<SpreadEntry>& entry,
                     WorkerContext& worker, uint64_t session_id) {
  SpreadEntry& e = *entry;
  const uint64_t now = common::monotonicNs() / 1000000;
  if (e.phase.load() != SpreadPhase::Spreading || e.allFilled(now) || e.fill_in_flight.load()) {
    return;
  }
  bool idle = false;
  if (!e.fill_in_flight.compare_exchange_strong(idle, true)) {
    return;  // another worker's
  }
  const uint64_t mark = e.writes_started.load();
  const uint32_t copy = e.firstUnfilled(now);
  if (copy == 0 || mark != e.writes_done.load() || mark == e.missed_at.load()) {
    e.fill_in_flight.store(false);  // a write is in flight: the next read tries again
    return;
  }
  BackendServer& server = *pool.by_index[e.copies[0]];
  BackendConnection* conn = server.connectionFor(session_id);
  if (conn == nullptr) {
    abandon(e, worker);
    return;
  }
  PendingRequest* r = detached(worker, nullptr);
  r->spread->role = SpreadRole::FillRead;
  r->spread->entry = entry;
  r->spread->copy = copy;
  r->spread->mark = mark;
  r->spread->pool = &pool;
  protocol::RequestWriter mg(conn->output());
  mg.verb(protocol::Command::MetaGet).arg(e.key).flag('v').flag('f').flag('t').end();
  conn->expect(server, r, spread_fill_reply, 0, Expect::OneUnit, mg.written());
  worker.requests().release(r);  // the connection's reference keeps it until the reply
}

namespace {

// The primary's value read (then the copy is written), or the copy's write answered.
void onSpreadFillReply(PendingRequest& r, const protocol::Reply& rep, std::string_view unit,
                       WorkerContext& worker) {
  auto& c = worker.counters();
  if (r.spread == nullptr || !r.spread->entry) {
    return;
  }
  const SpreadState& s = *r.spread;
  SpreadEntry& e = *s.entry;
  if (s.role == SpreadRole::FillWrite) {
    endSpreadFill(r, rep.kind == protocol::ReplyKind::MetaHit, c);
    return;
  }
  // The primary's value. A miss leaves the copy unfilled: it is not read, and a miss at the
  // primary is what a read of the key answers anyway.
  FillValue v;
  if (rep.kind == protocol::ReplyKind::MetaMiss) {
    e.missed_at.store(s.mark);
  }
  PoolRuntime* pool = s.pool;
  const std::shared_ptr<SpreadEntry>* now = pool != nullptr ? pool->spreadEntry(e.key) : nullptr;
  if (rep.kind != protocol::ReplyKind::MetaValue ||
      !parseFillValue(unit.substr(0, rep.line_length), &v) || v.length + 2 != rep.data_length ||
      v.ttl == 0 || now == nullptr || now->get() != &e || e.writes_started.load() != s.mark) {
    // (Also when a reload moved the pool to another snapshot, whose copies are other servers.)
    abandon(e, worker);
    return;
  }
  // The primary's remaining TTL, at most hot_key_copy_ttl (and a second or two, so the item
  // outlives the time it may be read: memcached's clock has one-second steps).
  int64_t t = v.ttl;
  if (e.copy_ttl_ms > 0) {
    const int64_t bound = static_cast<int64_t>(e.copy_ttl_ms / 1000) + 2;
    t = t < 0 ? bound : std::min(t, bound);
  }
  std::string ttl = "0";
  if (t > 0) {
    if (t > kMaxRelativeTtl) {
      t += static_cast<int64_t>(::time(nullptr));
    }
    ttl = std::to_string(t);
  }
  BackendServer& server = *pool->by_index[e.copies[s.copy]];
  BackendConnection* conn = server.connectionFor(s.mark);
  if (conn == nullptr) {
    abandon(e, worker);
    return;
  }
  PendingRequest* w = detached(worker, &r);
  w->spread->role = SpreadRole::FillWrite;
  std::string line;
  protocol::appendMetaSetLine(line, e.key, v.length, v.flags, ttl);
  std::string_view data = unit.substr(rep.line_length);  // the value and its "\r\n"
  net::Buffer& out = conn->output();
  out.append(line);
  out.append(data);
  conn->expect(server, w, spread_fill_reply, 0, Expect::OneUnit, line.size() + data.size());
  worker.requests().release(w);
}

}  // namespace

}  // namespace mcring::core
