// The load generator's target: HOST:PORT parsed and checked to be a loopback address.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>
#include <string_view>

namespace mcring::bench {

struct Endpoint {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string text;  // as given, for reports
};

// Accepts "127.x.y.z:PORT", "[::1]:PORT" and "localhost:PORT" (= 127.0.0.1). Anything else is
// refused with a sentence in *error: the generator is meant for this machine only, and numeric
// parsing means no DNS query ever leaves it.
std::optional<Endpoint> parseLoopbackEndpoint(std::string_view spec, std::string* error);

}  // namespace mcring::bench
