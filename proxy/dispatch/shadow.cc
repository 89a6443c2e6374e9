// Shadows: a route's copies to its shadow pool, and the agreement of shadowed reads.
#include "proxy/dispatch/shadow.h"

#include <functional>

#include "proxy/backend/backend_connection.h"
#include "proxy/backend/backend_server.h"
#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/request_writer.h"
#include "proxy/routing/hash.h"

namespace mcring::core {

namespace {

constexpr uint32_t kWriteTag = 0;       // one reply unit
constexpr uint32_t kQuietWriteTag = 1;  // units up to the mn that was added
constexpr uint32_t kReadTag = 2;

uint64_t digestOf(std::string_view value) {
  return std::hash<std::string_view>{}(value);
}

// What a complete reply to one read says: the first unit's kind, and its value's digest.
ShadowProbe::Answer answerOf(std::string_view reply, uint64_t* digest) {
  protocol::Reply rep;
  if (protocol::ReplyParser().parse(reply, rep) != protocol::ParseStatus::Ok ||
      rep.line_length + rep.data_length > reply.size()) {
    return ShadowProbe::Answer::Unusable;
  }
  switch (rep.kind) {
    case protocol::ReplyKind::Value:
    case protocol::ReplyKind::MetaValue:
      *digest = digestOf(reply.substr(rep.line_length, rep.data_length));
      return ShadowProbe::Answer::Hit;
    case protocol::ReplyKind::MetaHit:
      return ShadowProbe::Answer::HitNoValue;
    case protocol::ReplyKind::End:
    case protocol::ReplyKind::MetaMiss:
      return ShadowProbe::Answer::Miss;
    default:
      return ShadowProbe::Answer::Unusable;
  }
}

}  // namespace

Shadows::~Shadows() = default;

bool Shadows::shadows(const ShadowTarget& target, std::string_view key) {
  // One fixed hash (not the pools' own): the same keys are shadowed by every proxy.
  const uint64_t h = routing::hashKey(routing::HashFunction::Fnv1a_32, key);
  return h < target.below;
}

BackendConnection* Shadows::connectionFor(const ShadowTarget& target, std::string_view routing_key,
                                          uint64_t session, BackendServer*& server) {
  PoolRuntime& pool = *target.pool;
  server = pool.currentServer(routing_key);
  BackendConnection* conn = server != nullptr ? server->connectionFor(session) : nullptr;
  if (conn == nullptr || conn->inflightCount() >= kMaxInflight || conn->unsent() >= kMaxOutput) {
    stats::bump(target.stats->shadow_dropped);
    return nullptr;
  }
  stats::bump(target.stats->shadow_sent);
  return conn;
}

PendingRequest* Shadows::detached(protocol::Command command) {
  PendingRequest* r = worker_.requests().acquire();
  r->refs = 1;
  r->fragments_left = 1;
  r->command = command;
  return r;
}

ShadowProbe* Shadows::newProbe(stats::RouteStats* stats) {
  if (free_probes_.empty()) {
    all_probes_.push_back(std::make_unique<ShadowProbe>());
    all_probes_.back()->free_list = &free_probes_;
    free_probes_.push_back(all_probes_.back().get());
  }
  ShadowProbe* p = free_probes_.back();
  free_probes_.pop_back();
  p->stats = stats;
  return p;
}

void Shadows::sendWrite(const ShadowTarget& target, std::string_view routing_key, uint64_t session,
                        std::string_view line, const net::Buffer& in, uint64_t data_offset,
                        uint64_t data_length, bool quiet_meta) {
  BackendServer* server = nullptr;
  BackendConnection* conn = connectionFor(target, routing_key, session, server);
  if (conn == nullptr) {
    return;
  }
  PendingRequest* r = detached(protocol::Command::Set);
  net::Buffer& out = conn->output();
  protocol::RequestWriter copy(out);
  copy.raw(line);
  in.copyTo(out, data_offset, data_length);
  if (quiet_meta) {
    copy.noop();
  }
  conn->expect(*server, r, *this, quiet_meta ? kQuietWriteTag : kWriteTag,
               quiet_meta ? Expect::UntilNoop : Expect::OneUnit, copy.written() + data_length);
  worker_.requests().release(r);  // the connection's reference keeps it until the reply
}

ShadowProbe* Shadows::sendRead(const ShadowTarget& target, std::string_view routing_key,
                               std::string_view key, bool b64, uint64_t session, bool compare) {
  BackendServer* server = nullptr;
  BackendConnection* conn = connectionFor(target, routing_key, session, server);
  if (conn == nullptr) {
    return nullptr;
  }
  PendingRequest* r = detached(protocol::Command::MetaGet);
  ShadowProbe* probe = nullptr;
  if (compare) {
    probe = newProbe(target.stats);
    probe->refs = 2;
    r->route = worker_.routeStates().acquire();
    r->route->probe = probe;
  }
  protocol::RequestWriter mg(conn->output());
  mg.verb(protocol::Command::MetaGet).metaKey(key, b64).flag('v').end();
  conn->expect(*server, r, *this, kReadTag, Expect::OneUnit, mg.written());
  worker_.requests().release(r);
  return probe;
}

void Shadows::primaryAnswered(PendingRequest& r) {
  ShadowProbe* probe = r.route != nullptr ? r.route->probe : nullptr;
  if (probe == nullptr) {
    return;
  }
  uint64_t digest = 0;
  ShadowProbe::Answer a = ShadowProbe::Answer::Unusable;
  if (!r.refused && !r.failed && r.reply.size() > 0) {
    a = answerOf(r.reply.contiguous(r.reply.size()), &digest);
  }
  probe->answer(false, a, digest);
}

void Shadows::primaryAnsweredKeys(PendingRequest& r) {
  for (KeyProbe& k : r.route->key_probes) {
    ShadowProbe::Answer a = ShadowProbe::Answer::Unusable;
    if (!r.refused && !r.failed && r.shape == Shape::Multiget && k.key < r.key_count &&
        !r.fragments[r.key_fragment[k.key]].unavailable) {
      // The value's bytes may be streamed to the client already: hit or miss only.
      a = r.key_hit_length[k.key] != 0 ? ShadowProbe::Answer::HitNoValue
                                       : ShadowProbe::Answer::Miss;
    }
    k.probe->answer(false, a, 0);
  }
}

UnitVerdict Shadows::onUnit(BackendConnection&, PendingRequest& r, uint32_t tag,
                            const protocol::Reply& rep, std::string_view unit) {
  if (rep.isListItem()) {
    return UnitVerdict::Desync;
  }
  if (tag == kReadTag) {
    if (r.route != nullptr && r.route->probe != nullptr) {
      uint64_t digest = 0;
      const ShadowProbe::Answer a = answerOf(unit, &digest);
      r.route->probe->answer(true, a, digest);
    }
    return UnitVerdict::Done;
  }
  // A write's reply is nobody's; a quiet one ends with the mn that was added.
  return tag == kWriteTag || rep.kind == protocol::ReplyKind::MetaNoop ? UnitVerdict::Done
                                                                       : UnitVerdict::More;
}

bool Shadows::changesItem(const PendingRequest&, uint32_t tag) const {
  return tag != kReadTag;  // a copied write changes the item; a shadow read does not
}

void Shadows::onFailure(BackendConnection&, PendingRequest& r, uint32_t tag, BackendFailure) {
  if (tag == kReadTag && r.route != nullptr && r.route->probe != nullptr) {
    r.route->probe->answer(true, ShadowProbe::Answer::Unusable, 0);
  }
}

}  // namespace mcring::core
