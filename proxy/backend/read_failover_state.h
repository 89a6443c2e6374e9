// A replicated read's failover state (dispatch/failover.h): the session and snapshot its replicas
// were chosen by, and for a Direct mg what its next replica gets (its key, its bytes as sent) and
// why the last one did not serve it. A multi-get's failed parts are marked in its fragments.
// Kept out of PendingRequest, which holds one pointer to it (null: not a replicated read); pooled
// per worker (no allocation per read once warm) and returned when its request is recycled.
// Worker-thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/backend/backend_failure.h"
#include "proxy/backend/record_pool.h"

namespace mcring::core {

class BackendServer;
struct ReadFailover;
using ReadFailoverPool = RecordPool<ReadFailover>;

struct ReadFailover {
  ReadFailoverPool* owner = nullptr;  // its worker's pool
  uint64_t session = 0;               // the client's session id: which connection
  const void* topology = nullptr;     // the snapshot its replicas index into
  // Direct: the server that failed or missed (null: it was served), why, and whether it was a
  // miss (with read_failover_on_miss, or in that server's return window) rather than a failure.
  BackendServer* failed_at = nullptr;
  BackendFailure failure = BackendFailure::Unavailable;
  bool missed = false;
  std::string key;     // Direct: the routing key
  std::string line;    // Direct: the request as sent (with the mn of a quiet mg)
  bool quiet = false;  // Direct: a quiet mg (Expect::UntilNoop), else one unit

  // Returns it to its pool (the pointer is cleared).
  static void release(ReadFailover*& f);
};

inline void ReadFailover::release(ReadFailover*& f) {
  if (f == nullptr) {
    return;
  }
  f->session = 0;
  f->topology = nullptr;
  f->failed_at = nullptr;
  f->failure = BackendFailure::Unavailable;
  f->missed = false;
  f->key.clear();
  f->line.clear();
  f->quiet = false;
  f->owner->giveBack(f);
  f = nullptr;
}

}  // namespace mcring::core
