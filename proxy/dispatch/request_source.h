// What dispatch needs of the client session a request came from: a slot at the tail of its
// in-order reply FIFO, the bytes of the request at the front of its input, and a way to stop
// reading (quit). ClientSession implements it. Worker-thread only.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/backend/pending_request.h"
#include "proxy/net/buffer.h"
#include "proxy/protocol/command.h"

namespace mcring::core {

class RequestSource : public RequestOwner {
 public:
  // A new request at the tail of the FIFO, holding the FIFO's reference.
  virtual PendingRequest* newRequest(protocol::Command command) = 0;
  // `reply` is r's whole reply: r is complete.
  virtual void completeWith(PendingRequest* r, std::string_view reply) = 0;
  // The request being dispatched is at the front: dispatch forwards or drops exactly its bytes.
  virtual net::Buffer& input() = 0;
  // Nothing after the request being dispatched is read (quit).
  virtual void stopReading() = 0;
  // `watch` is allowed: from now on the connection receives the watch stream
  // (stats/request_watch.h) after the reply to it, and what it sends is ignored, as in
  // memcached. False, and nothing changed, when the most watchers there may be are watching.
  virtual bool beginWatch() = 0;
};

}  // namespace mcring::core
