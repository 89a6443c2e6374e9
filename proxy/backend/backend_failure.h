// Why a request could not be served by its backend: one table for enum, counter name, reply.
#pragma once

#include <cstdint>
#include <string_view>

namespace mcring::core {

#define MCRING_BACKEND_FAILURES(X)                                                   \
  X(ConnectFailed, "connect_failed", "SERVER_ERROR backend connect failed")          \
  X(ConnectionClosed, "connection_closed", "SERVER_ERROR backend connection closed") \
  X(Timeout, "timeout", "SERVER_ERROR backend timeout")                              \
  X(ProtocolError, "protocol_error", "SERVER_ERROR backend protocol error")          \
  X(Unavailable, "unavailable", "SERVER_ERROR backend unavailable")                  \
  X(Backlogged, "backlogged", "SERVER_ERROR backend backlog full")

enum class BackendFailure : uint8_t {
#define MCRING_X(id, name, reply) id,
  MCRING_BACKEND_FAILURES(MCRING_X)
#undef MCRING_X
};

constexpr std::string_view backendFailureName(BackendFailure f) {
  switch (f) {
#define MCRING_X(id, name, reply) \
  case BackendFailure::id:        \
    return name;
    MCRING_BACKEND_FAILURES(MCRING_X)
#undef MCRING_X
  }
  return "?";
}

// The reply line sent to the client, with "\r\n".
constexpr std::string_view backendFailureReply(BackendFailure f) {
  switch (f) {
#define MCRING_X(id, name, reply) \
  case BackendFailure::id:        \
    return reply "\r\n";
    MCRING_BACKEND_FAILURES(MCRING_X)
#undef MCRING_X
  }
  return "SERVER_ERROR\r\n";
}

}  // namespace mcring::core
