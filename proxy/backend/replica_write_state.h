// A replicated write's own state (dispatch/dispatch_replicated.cc sends it, backend/
// replica_write.h reads the replicas' replies): each replica's server, outcome and reply, a cas's
// follow-up, and the key for the `md` that replaces a flush. Kept out of PendingRequest, which
// holds one pointer to it (null: not a replicated write); pooled per worker (no allocation per
// write once warm) and returned when its request is recycled. Worker-thread only.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/record_pool.h"

namespace mcring::core {

// Replication (backend/replica_write.h, dispatch/failover.h): the most replicas of a key
// (routing::kMaxReplicas; checked where the dispatcher fills these arrays).
inline constexpr uint32_t kReplicaSlots = 8;

// What one replica did with a write sent to every replica of its key.
enum class ReplicaOutcome : uint8_t {
  Pending,  // sent, not answered yet
  Success,  // STORED, DELETED, TOUCHED, a number, OK, HD, VA, or nothing (meta q)
  Refusal,  // NOT_STORED, EXISTS, NOT_FOUND, NS, EX, NF, EN
  Error,    // ERROR, CLIENT_ERROR, SERVER_ERROR
  Failed,   // no reply: unavailable, connection failed or closed, timeout
  Skipped,  // not sent: a cas the primary did not store
};

struct ReplicaWrite;
using ReplicaWritePool = RecordPool<ReplicaWrite>;

struct ReplicaWrite {
  ReplicaWritePool* owner = nullptr;  // its worker's pool
  uint8_t count = 0;                  // replicas written
  bool all = false;                   // replica_write_reply: all (else primary)
  bool cas = false;                   // cas / ms with C: to the primary; then a set to the others
  bool quiet = false;                 // meta q: each replica's answer ends with the mn mcring added
  uint64_t session = 0;               // the client's session id: which connection
  const void* topology = nullptr;     // the snapshot `servers` index into
  std::array<uint32_t, kReplicaSlots> servers{};  // indexes in the snapshot's server list
  std::array<ReplicaOutcome, kReplicaSlots> outcome{};
  std::array<BackendFailure, kReplicaSlots> failure{};
  std::array<std::string, kReplicaSlots> units;  // each replica's reply bytes
  std::string followup;  // cas: the plain set (line and data) for the other replicas
  // The key as sent (base64 text with key_b64), for the `md` that replaces a flush when
  // memcached closed the connection under the write (replica_write.cc, onConnectionLost).
  std::string key;
  bool key_b64 = false;
  uint8_t invalidated = 0;  // bit i: replica i gets an md instead of being marked stale

  // Returns it to its pool (the pointer is cleared).
  static void release(ReplicaWrite*& w);
};

inline void ReplicaWrite::release(ReplicaWrite*& w) {
  if (w == nullptr) {
    return;
  }
  for (uint32_t i = 0; i < w->count; ++i) {
    w->units[i].clear();
  }
  w->count = 0;
  w->all = false;
  w->cas = false;
  w->quiet = false;
  w->session = 0;
  w->topology = nullptr;
  w->followup.clear();
  w->key.clear();
  w->key_b64 = false;
  w->invalidated = 0;
  w->owner->giveBack(w);
  w = nullptr;
}

}  // namespace mcring::core
