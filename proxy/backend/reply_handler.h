// What a reply means, supplied by dispatch with the request it sends (the Routes architecture,
// docs/design.md): the backend connection frames reply units and matches them to requests in
// order; a request sent with a ReplyHandler has its units and its failure handed to it, and the
// connection knows nothing of the feature behind it. New capabilities (a route's shadow) use
// this; the older ones still go through BackendConnection's Delivery kinds, and move here one
// by one.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/backend_failure.h"
#include "proxy/protocol/reply.h"

namespace mcring::core {

struct PendingRequest;

enum class UnitVerdict : uint8_t {
  More,    // the request expects further units
  Done,    // its reply is over
  Desync,  // not a unit this request can have: the connection's replies no longer match
};

class ReplyHandler {
 public:
  virtual ~ReplyHandler() = default;
  // One whole unit of r's reply: `unit` is its bytes (line and data block, if any). The
  // connection drops them afterwards.
  virtual UnitVerdict onUnit(PendingRequest& r, uint32_t tag, const protocol::Reply& rep,
                             std::string_view unit) = 0;
  // r's reply will not come (the connection failed, closed or timed out).
  virtual void onFailure(PendingRequest& r, uint32_t tag, BackendFailure why) = 0;
};

}  // namespace mcring::core
