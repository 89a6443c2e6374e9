// Parsing and loopback check of --server.
#include "bench/mcring_bench/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace mcring::bench {

std::optional<Endpoint> parseLoopbackEndpoint(std::string_view spec, std::string* error) {
  const std::string given(spec);
  std::string_view host;
  std::string_view port_text;
  if (!spec.empty() && spec.front() == '[') {
    const size_t close = spec.find(']');
    if (close == std::string_view::npos || close + 1 >= spec.size() || spec[close + 1] != ':') {
      *error = "--server " + given + ": expected [IPV6]:PORT";
      return std::nullopt;
    }
    host = spec.substr(1, close - 1);
    port_text = spec.substr(close + 2);
  } else {
    const size_t colon = spec.rfind(':');
    if (colon == std::string_view::npos) {
      *error = "--server " + given + ": expected HOST:PORT";
      return std::nullopt;
    }
    host = spec.substr(0, colon);
    port_text = spec.substr(colon + 1);
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    *error = "--server " + given + ": port must be 1..65535";
    return std::nullopt;
  }

  Endpoint endpoint;
  endpoint.text = given;
  const std::string host_text = host == "localhost" ? "127.0.0.1" : std::string(host);
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  if (inet_pton(AF_INET, host_text.c_str(), &v4.sin_addr) == 1) {
    if ((ntohl(v4.sin_addr.s_addr) >> 24) != 127) {
      *error = "--server " + given + ": refusing a non-loopback address (only 127.0.0.0/8, ::1)";
      return std::nullopt;
    }
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&endpoint.address, &v4, sizeof(v4));
    endpoint.length = sizeof(v4);
    return endpoint;
  }
  if (inet_pton(AF_INET6, host_text.c_str(), &v6.sin6_addr) == 1) {
    if (!IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr)) {
      *error = "--server " + given + ": refusing a non-loopback address (only 127.0.0.0/8, ::1)";
      return std::nullopt;
    }
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    std::memcpy(&endpoint.address, &v6, sizeof(v6));
    endpoint.length = sizeof(v6);
    return endpoint;
  }
  *error = "--server " + given +
           ": host must be a loopback address (127.0.0.0/8, ::1 or localhost); names are not "
           "resolved";
  return std::nullopt;
}

}  // namespace mcring::bench
