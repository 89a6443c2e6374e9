// Who may read or change the proxy through the admin endpoint. Every request whose Host header
// does not name this endpoint (as below) is refused, read-only views and /healthz included: a
// DNS-rebinding page would otherwise read /stats and /metrics (server addresses, key counts) from
// a browser inside the network. A read-only request with no Host at all is answered: browsers
// always send one, and HTTP/1.0 health checkers (haproxy's httpchk) may not. Kubernetes probes
// and Prometheus send the address they connected to, which matches. A mutating request
// (POST /reload) must
//   - name this endpoint in its Host header: the address the client connected to (with the
//     port), localhost/127.0.0.1/[::1] when that address is loopback, the address given with -a,
//     or a name of --admin-allowed-hosts. A DNS-rebinding page reaches the port under its own
//     name, so its Host never matches;
//   - carry no Origin header other than such a host: a browser adds one to a cross-site form
//     post or fetch, curl and scripts send none;
//   - when a token is configured (--admin-token-file, always required for an admin address that
//     is not loopback), carry `Authorization: Bearer <token>`, compared in constant time.
// The token is read from its file at start and again at each mutating request (so a rotated
// Kubernetes Secret applies without a restart; if the file cannot be read then, the token read
// last stays). It is never logged or shown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/net/http_server.h"

namespace mcring::core {

struct AdminAccessOptions {
  std::string address;  // as given with -a
  uint16_t port = 0;
  std::string token_file;                  // "" = no token
  std::vector<std::string> allowed_hosts;  // "name" (with the admin port) or "name:port"
};

class AdminAccess {
 public:
  // A token file's most bytes; a token's fewest.
  static constexpr size_t kMaxTokenFileBytes = 4096;
  static constexpr size_t kMinTokenBytes = 16;

  // Reads the token. False and *error if the file is configured but unusable, or if the address
  // is not loopback and there is no token file.
  bool init(AdminAccessOptions options, std::string* error);
  bool tokenRequired() const { return !options_.token_file.empty(); }

  struct Verdict {
    int status = 0;  // 0: allowed; else the HTTP status to answer
    std::string message;
  };
  // For a request to a read-only view (GET or HEAD): a Host, if any, must name this endpoint.
  Verdict checkView(const net::HttpRequest& request) const;
  // For a POST that computes and changes nothing (POST /whatif): Host and Origin as for a
  // mutation (a cross-site page may not make the proxy compute for it), no token.
  Verdict checkComputation(const net::HttpRequest& request) const;
  // For a request to a mutating endpoint: checkComputation, then the token.
  Verdict checkMutation(const net::HttpRequest& request);

  // 127.0.0.0/8, ::1 (also v4-mapped), "localhost"; brackets allowed.
  static bool isLoopbackAddress(const std::string& address);
  // Reads and validates a token file.
  static bool readToken(const std::string& path, std::string* token, std::string* error);
  // Whether the Host (or Origin's host[:port]) names this endpoint for a connection to
  // local_address:local_port.
  bool hostAllowed(const std::string& host, const net::HttpRequest& request) const;

 private:
  bool tokenMatches(const char* authorization);

  AdminAccessOptions options_;
  std::string token_;
};

}  // namespace mcring::core
