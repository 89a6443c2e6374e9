// What a pool's TLS and authentication settings become at run time: the OpenSSL contexts of its
// TLS listeners and of its connections to TLS servers (built on the main thread when a config is
// loaded, shared by every worker), and the first bytes mcring sends on each backend connection
// when the servers require authentication.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "config/topology.h"
#include "proxy/net/tls_context.h"

namespace mcring::core {

struct PoolTls {
  std::shared_ptr<const net::TlsContext> listener;  // tls_cert/tls_key (null: no TLS listener)
  std::shared_ptr<const net::TlsContext> servers;   // toward servers with TLS (null: none)
};

// By pool name. Immutable once built; a reload builds a new one.
using PoolTlsMap = std::unordered_map<std::string, PoolTls>;

// Builds the contexts of every pool of `config`. On failure returns null and appends errors
// that name the pool, the key and the file ("pool 'a': tls_key: key /x.pem does not match
// certificate /y.pem").
std::shared_ptr<const PoolTlsMap> buildPoolTls(const config::Config& config,
                                               std::vector<std::string>* errors);

// How to connect to one server of the pool: null for plaintext.
std::optional<net::TlsSetup> serverTlsSetup(const PoolTls& tls, const config::PoolConfig& pool,
                                            const config::ServerConfig& server);

// The authentication mcring sends first on a connection to a server of this pool (memcached's
// ASCII authentication: a `set` carrying "user password"), or "" when the servers need none.
// Its reply is one line, STORED when accepted. Never logged.
std::string serverAuthRequest(const config::PoolTopology& pool);

}  // namespace mcring::core
