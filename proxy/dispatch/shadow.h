// A route's shadow (config `shadow`): copies of the route's requests sent to another pool, for
// `percent` of keys chosen by key hash (a key is always or never shadowed). Their replies are
// read and dropped, so the client never waits for the shadow pool and never sees it fail; for
// reads, the shadow's answer is compared with the primary's (ShadowProbe): the route's shadow
// agreement, how warm the new pool is.
//
// Bounded: a copy goes to the key's server in the shadow pool (its first replica: the shadow
// pool's replication, spread and warm-up are not applied to copies) over the worker's
// connection to it, unless that connection already has kMaxInflight requests unanswered or
// kMaxOutput bytes unsent; then it is dropped and counted. A frozen shadow server thus holds
// at most that much per worker until the pool's `timeout` fails its connection, and a dead one
// takes no copy at all (its connect backs off). A write is copied as sent to the primary (after
// max_ttl); a read is sent as `mg <key> v` whatever the client asked, so that the two answers
// compare by hit or miss and the value's digest. Per worker; worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "proxy/backend/pending_request.h"
#include "proxy/backend/pool_runtime.h"
#include "proxy/backend/reply_handler.h"
#include "proxy/backend/shadow_probe.h"
#include "proxy/backend/worker_context.h"
#include "proxy/net/buffer.h"

namespace mcring::core {

// Where a route's copies go (built into its ShadowRoute, route_handlers.h).
struct ShadowTarget {
  PoolRuntime* pool = nullptr;
  stats::RouteStats* stats = nullptr;  // the route's: copies sent, dropped, agreement
  uint64_t below = 0;  // keys whose 32-bit hash falls below this are shadowed (percent)
  bool writes_only = false;
};

class Shadows final : public ReplyHandler {
 public:
  static constexpr size_t kMaxInflight = 1024;
  static constexpr size_t kMaxOutput = 1024 * 1024;

  explicit Shadows(WorkerContext& worker) : worker_(worker) {}
  ~Shadows() override;
  Shadows(const Shadows&) = delete;
  Shadows& operator=(const Shadows&) = delete;

  // Whether `key` is among the target's shadowed keys (its percent, by key hash).
  static bool shadows(const ShadowTarget& target, std::string_view key);

  // Copies a write: `line` as sent to the primary (no classic noreply token), then, if the
  // request has one, its data block: `data_length` bytes at `data_offset` in `in`. A meta q
  // write gets an `mn` after it, which ends its reply.
  void sendWrite(const ShadowTarget& target, std::string_view routing_key, uint64_t session,
                 std::string_view line, const net::Buffer& in, uint64_t data_offset,
                 uint64_t data_length, bool quiet_meta);
  // Sends `mg <key> [b] v` for a read of `key` (as the client wrote it; base64 with b64) and,
  // if `compare`, returns a probe holding one reference for the primary request (null when
  // the copy was dropped or not compared).
  ShadowProbe* sendRead(const ShadowTarget& target, std::string_view routing_key,
                        std::string_view key, bool b64, uint64_t session, bool compare);

  // The primary's complete reply to a shadowed read (r.reply, never streamed: dispatch set
  // r.rewrites), for its probe.
  static void primaryAnswered(PendingRequest& r);
  // A multi-get's (r.shape Multiget) answers for its shadowed keys: hit or miss each.
  static void primaryAnsweredKeys(PendingRequest& r);

  UnitVerdict onUnit(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                     const protocol::Reply& rep, std::string_view unit) override;
  void onFailure(BackendConnection& conn, PendingRequest& r, uint32_t tag,
                 BackendFailure why) override;
  bool changesItem(const PendingRequest& r, uint32_t tag) const override;

 private:
  // The connection a copy goes on, or null (counted as dropped); `server`: the shadow pool's
  // server it is for.
  BackendConnection* connectionFor(const ShadowTarget& target, std::string_view routing_key,
                                   uint64_t session, BackendServer*& server);
  PendingRequest* detached(protocol::Command command);
  ShadowProbe* newProbe(stats::RouteStats* stats);

  WorkerContext& worker_;
  std::vector<ShadowProbe*> free_probes_;
  std::vector<std::unique_ptr<ShadowProbe>> all_probes_;
};

}  // namespace mcring::core
