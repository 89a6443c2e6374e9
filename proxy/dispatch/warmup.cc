// Warm migration: previous-owner lookups, second hops, copies.
#include "proxy/dispatch/warmup.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <string>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/replica_write.h"
#include "proxy/backend/worker_context.h"
#include "proxy/dispatch/direct_features.h"
#include "proxy/dispatch/multiget.h"
#include "proxy/protocol/meta_set_line.h"
#include "proxy/protocol/request_writer.h"

namespace mcring::core {
namespace {

// A warm-up fetch: the previous server's value, its client flags, TTL and cas (`mg <key> v f t
// c`); returns its length.
size_t writeWarmFetch(net::Buffer& out, std::string_view key) {
  protocol::RequestWriter mg(out);
  mg.verb(protocol::Command::MetaGet).arg(key).flag('v').flag('f').flag('t').flag('c').end();
  return mg.written();
}

// memcached reads a relative TTL above 30 days as an absolute unix time.
constexpr int64_t kMaxRelativeTtl = 60 * 60 * 24 * 30;

// Calls fn(token) for each space-separated token of s (meta flags, reply lines) until it
// returns false; returns false if fn did.
template <typename Fn>
bool forEachToken(std::string_view s, Fn fn) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = std::min(s.find(' ', pos), s.size());
    std::string_view token = s.substr(pos, end - pos);
    pos = end + 1;
    if (!token.empty() && !fn(token)) {
      return false;
    }
  }
  return true;
}

// What the previous server said about the key: "VA <len> f<flags> t<ttl> c<cas>".
struct WarmValue {
  uint64_t length = 0;
  std::string_view flags = "0";
  int64_t ttl = -1;  // -1: never expires
  std::string_view cas = "0";
};

bool parseWarmValue(std::string_view line, WarmValue* v) {
  if (line.ends_with("\r\n")) {
    line.remove_suffix(2);
  }
  int index = 0;
  bool ok = forEachToken(line, [&](std::string_view token) {
    if (index++ < 2) {  // "VA", then the length
      return index == 1 ||
             std::from_chars(token.data(), token.data() + token.size(), v->length).ec ==
                 std::errc();
    }
    std::string_view value = token.substr(1);
    switch (token[0]) {
      case 'f':
        v->flags = value;
        return true;
      case 'c':
        v->cas = value;
        return true;
      case 't':
        return std::from_chars(value.data(), value.data() + value.size(), v->ttl).ec == std::errc();
      default:
        return true;
    }
  });
  return ok && index >= 2;
}

// The TTL token for the copy: the remaining TTL (absolute when memcached would misread it as
// one), the client's gat exptime, or nothing to copy (the item expires now).
bool copyTtl(const PendingRequest& r, const WarmValue& v, std::string* out) {
  if (r.command == protocol::Command::Gat || r.command == protocol::Command::Gats) {
    out->assign(r.exptime.in(r.line));
    return true;
  }
  if (v.ttl < 0) {
    *out = "0";
    return true;
  }
  if (v.ttl == 0) {
    return false;
  }
  int64_t ttl = v.ttl;
  if (ttl > kMaxRelativeTtl) {
    ttl += static_cast<int64_t>(::time(nullptr));
  }
  *out = std::to_string(ttl);
  return true;
}

std::string_view keyOf(const PendingRequest& r, uint32_t i) {
  return multigetKey(r, i);
}

void onWarmupReply(PendingRequest& r, uint32_t i, const protocol::Reply& rep, std::string_view unit,
                   BackendServer& from);

// A second hop's `mg <key> v f t c` at the key's previous server (a multi-get's or an mg's;
// tag: the client key's index). Best effort: a previous server that fails is a miss, not an
// error (an mg keeps its new server's EN). A read: it changes no item.
class WarmFetchReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t i,
                     const protocol::Reply& rep, std::string_view unit) override {
    if (rep.isListItem()) {
      return UnitVerdict::Desync;
    }
    onWarmupReply(r, i, rep, unit, conn.server());
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest&, uint32_t, BackendFailure) override {
    stats::bump(conn.server().worker().counters().warmup_misses);
  }
  void onFinished(BackendConnection& conn, PendingRequest& r, uint32_t i) override {
    conn.server().worker().warmup().finished(keyOf(r, i), &r, i);
  }
  bool changesItem(const PendingRequest&, uint32_t) const override { return false; }
};

// The copy's `ms ... ME` on the key's new server: HD stored, NS refused (the new server already
// had a value).
class WarmCopyReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection& conn, PendingRequest&, uint32_t, const protocol::Reply& rep,
                     std::string_view) override {
    if (rep.isListItem() || rep.data_length > 0) {
      return UnitVerdict::Desync;
    }
    auto& c = conn.server().worker().counters();
    if (rep.kind == protocol::ReplyKind::MetaHit) {
      stats::bump(c.warmup_copies);
    } else if (rep.kind == protocol::ReplyKind::MetaNotStored) {
      stats::bump(c.warmup_copies_not_stored);
    } else {
      stats::bump(c.warmup_copy_errors);
    }
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection& conn, PendingRequest&, uint32_t, BackendFailure) override {
    stats::bump(conn.server().worker().counters().warmup_copy_errors);
  }
};

// See warmInvalidationHandler(). A replicated write's reply may be decided once it is over.
class WarmInvalidationReply final : public ReplyHandler {
 public:
  UnitVerdict onUnit(BackendConnection&, PendingRequest& r, uint32_t, const protocol::Reply& rep,
                     std::string_view) override {
    if (rep.isListItem() || rep.data_length > 0) {
      return UnitVerdict::Desync;
    }
    if (rep.kind == protocol::ReplyKind::MetaHit) {
      if (r.warm != nullptr) {
        r.warm->invalidated_hit = true;
      }
    }
    return UnitVerdict::Done;
  }
  void onFailure(BackendConnection&, PendingRequest&, uint32_t, BackendFailure) override {}
  void onFinished(BackendConnection& conn, PendingRequest& r, uint32_t) override {
    completeDecidedReplicaWrite(r, conn.server().worker().counters());
  }
};

WarmFetchReply warm_fetch_reply;
WarmCopyReply warm_copy_reply;
WarmInvalidationReply warm_invalidation_reply;

// Sends `ms <key> <len> F<flags> T<ttl> ME` with the value to the key's current server `to`;
// the request waits for its reply. Skipped when a write of the key came in meanwhile.
void sendCopy(PendingRequest& r, uint32_t i, const WarmValue& v, std::string_view data,
              BackendServer& from, BackendServer& to) {
  auto& c = from.worker().counters();
  if (r.warm->key_warm[i] == WarmState::CopyCancelled) {
    stats::bump(c.warmup_copies_cancelled);
    return;
  }
  std::string ttl;
  if (&to == &from || !copyTtl(r, v, &ttl)) {
    return;  // placement changed back meanwhile, or the item expires now
  }
  BackendConnection* conn = to.connectionFor(r.session->id());
  if (conn == nullptr) {
    stats::bump(c.warmup_copy_errors);
    return;
  }
  std::string_view key = keyOf(r, i);
  std::string line;
  protocol::appendMetaSetLine(line, key, v.length, v.flags, ttl, "ME");
  net::Buffer& out = conn->output();
  out.append(line);
  out.append(data);  // value and its "\r\n"
  ++r.fragments_left;
  conn->expect(to, &r, warm_copy_reply, i, Expect::OneUnit, line.size() + data.size());
}

// The client's own `mg` reply, from the previous server's value: return flags in the order the
// client asked for them, as memcached writes them.
std::string metaReply(const PendingRequest& r, const WarmValue& v) {
  bool value = false;
  std::string ret;
  forEachToken(r.warm->meta_flags, [&](std::string_view token) {
    switch (token[0]) {
      case 'v':
        value = true;
        break;
      case 'f':
        ret += " f";
        ret.append(v.flags);
        break;
      case 't':
        ret += " t" + std::to_string(v.ttl);
        break;
      case 'c':
        ret += " c";
        ret.append(v.cas);
        break;
      case 'k':
        ret += " k";
        ret.append(keyOf(r, 0));
        break;
      case 's':
        ret += " s" + std::to_string(v.length);
        break;
      case 'O':
        ret += " ";
        ret.append(token);
        break;
      default:
        break;
    }
    return true;
  });
  if (value) {
    return "VA " + std::to_string(v.length) + ret + "\r\n";
  }
  return "HD" + ret + "\r\n";
}

// The previous server's reply to a second hop (`unit` = reply line + data block, whole).
// `from` is the server that answered. Fills the client's reply and sends the copy.
void onWarmupReply(PendingRequest& r, uint32_t i, const protocol::Reply& rep, std::string_view unit,
                   BackendServer& from) {
  auto& c = from.worker().counters();
  WarmValue v;
  bool hit = rep.kind == protocol::ReplyKind::MetaValue &&
             parseWarmValue(unit.substr(0, rep.line_length), &v) && v.length + 2 == rep.data_length;
  if (!hit) {
    stats::bump(c.warmup_misses);
    return;  // an mg keeps its new server's EN
  }
  stats::bump(c.warmup_hits);
  std::string_view data = unit.substr(rep.line_length);
  if (r.shape == Shape::Direct) {
    r.reply.drain(r.reply.size());  // the new server's EN
    r.reply.append(metaReply(r, v));
    if (r.warm->meta_flags.find('v') != std::string::npos) {
      r.reply.append(data);
    }
  } else {
    std::string header = "VALUE ";
    header.append(keyOf(r, i));
    header += ' ';
    header.append(v.flags);
    header += ' ';
    header += std::to_string(v.length);
    if (r.command == protocol::Command::Gets || r.command == protocol::Command::Gats) {
      header += ' ';
      header.append(v.cas);
    }
    header += "\r\n";
    Fragment& fr = r.fragments[r.key_fragment[i]];
    fr.values.append(header);
    fr.values.append(data);
    r.key_hit_length[i] = header.size() + data.size();
    stats::bump(c.get_hits);
    if (r.pool != nullptr && r.pool->detailOn()) {
      r.pool->countDetail(keyOf(r, i), stats::PrefixOp::Hit);
    }
  }
  if (r.session != nullptr && r.pool != nullptr) {
    // Routed again now, not when the fetch was sent: a reload in between may have moved the key
    // or removed the pool (then there is nowhere to copy it, and the value is only answered).
    BackendServer* to = r.pool->currentServer(keyOf(r, i));
    if (to == nullptr) {
      return;
    }
    stats::bump(to->stats().warmup_hits);  // its miss was answered after all
    sendCopy(r, i, v, data, from, *to);
  }
}

}  // namespace

bool placementChanged(const config::PoolTopology& a, const config::PoolTopology& b) {
  const auto& sa = a.config.servers;
  const auto& sb = b.config.servers;
  if (sa.size() != sb.size()) {
    return true;
  }
  for (size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].identity() != sb[i].identity() || sa[i].spec.weight != sb[i].spec.weight ||
        sa[i].spec.name != sb[i].spec.name) {
      return true;
    }
  }
  const auto& ra = a.config.routing;
  const auto& rb = b.config.routing;
  return ra.hash != rb.hash || ra.distribution != rb.distribution || ra.hash_tag != rb.hash_tag ||
         ra.ketama_compat != rb.ketama_compat || ra.maglev_table_size != rb.maglev_table_size;
}

void startWarmRead(PendingRequest& r, WorkerContext& worker) {
  if (r.warm == nullptr) {
    r.warm = worker.warmRequests().acquire();
  }
  r.warm->hops = true;
  observeDirect(r);  // an mg's miss takes its second hop; a warm-up read is never replayed
}

bool launchMultigetWarmup(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker,
                          uint64_t session_id) {
  r.warm->hop_started = true;
  if (!pool.warmup || r.failed) {
    return false;  // a failed fragment fails the whole reply anyway
  }
  auto& c = worker.counters();
  WarmupRegistry& registry = worker.warmup();
  uint32_t limit = pool.config().warmup_max_inflight;
  uint32_t first_warm_fragment = r.fragment_count;
  uint32_t sent = 0;
  r.warm->key_warm.assign(r.key_count, WarmState::None);
  for (uint32_t i = 0; i < r.key_count; ++i) {
    if (r.key_hit_length[i] != 0 || r.fragments[r.key_fragment[i]].unavailable) {
      continue;  // a hit, or its server was unavailable: a miss (unavailable.h)
    }
    std::string_view key = keyOf(r, i);
    BackendServer* prev = pool.warmup->previousOwner(key, pool.by_index[pool.route(key)]);
    if (prev == nullptr) {
      continue;  // not moved: a plain miss
    }
    BackendConnection* conn =
        registry.inflight() < limit ? prev->connectionFor(session_id) : nullptr;
    if (conn == nullptr) {
      stats::bump(c.warmup_skips);
      continue;
    }
    // One fragment per previous server: its replies arrive in the order its keys were sent,
    // which is the client's order, so assembleMultiget can take them like any fragment's.
    uint32_t f = first_warm_fragment;
    for (; f < r.fragment_count; ++f) {
      if (r.fragments[f].warm_from == prev) {
        break;
      }
    }
    if (f == r.fragment_count) {
      if (r.fragments.size() <= f) {
        r.fragments.emplace_back();
      }
      r.fragments[f].warm_from = prev;
      ++r.fragment_count;
    }
    r.fragments[f].key_indices.push_back(i);
    r.key_fragment[i] = f;
    r.warm->key_warm[i] = WarmState::Fetching;
    const size_t bytes = writeWarmFetch(conn->output(), key);
    ++r.fragments_left;
    ++sent;
    registry.started(key, &r, i);
    stats::bump(c.warmup_fetches);
    conn->expect(*prev, &r, warm_fetch_reply, i, Expect::OneUnit, bytes);
  }
  return sent > 0;
}

bool launchMetaWarmup(PendingRequest& r, PoolRuntime& pool, WorkerContext& worker,
                      uint64_t session_id) {
  r.warm->hop_started = true;
  if (!pool.warmup) {
    return false;
  }
  auto& c = worker.counters();
  std::string_view key = keyOf(r, 0);
  BackendServer* prev = pool.warmup->previousOwner(key, pool.by_index[pool.route(key)]);
  if (prev == nullptr) {
    return false;
  }
  WarmupRegistry& registry = worker.warmup();
  BackendConnection* conn = registry.inflight() < pool.config().warmup_max_inflight
                                ? prev->connectionFor(session_id)
                                : nullptr;
  if (conn == nullptr) {
    stats::bump(c.warmup_skips);
    return false;
  }
  r.warm->key_warm.assign(1, WarmState::Fetching);
  const size_t bytes = writeWarmFetch(conn->output(), key);
  ++r.fragments_left;
  registry.started(key, &r, 0);
  stats::bump(c.warmup_fetches);
  conn->expect(*prev, &r, warm_fetch_reply, 0, Expect::OneUnit, bytes);
  return true;
}

ReplyHandler& warmInvalidationHandler() {
  return warm_invalidation_reply;
}

bool metaFlagsWarmable(std::string_view flags) {
  return forEachToken(flags, [](std::string_view token) {
    return std::string_view("vftcksO").find(token[0]) != std::string_view::npos;
  });
}

}  // namespace mcring::core
