// Building a pool's TLS contexts and its authentication request.
#include "proxy/backend/pool_security.h"

namespace mcring::core {

namespace {

net::TlsVersion minVersion(const config::PoolConfig& pool) {
  return pool.tls_min_version == "1.3" ? net::TlsVersion::Tls13 : net::TlsVersion::Tls12;
}

// OpenSSL's message names the file; this adds which key of which pool it came from.
std::string keyOf(const std::string& error, const config::PoolConfig& pool, bool listener) {
  auto names = [&](const std::string& file) {
    return !file.empty() && error.find(file) != std::string::npos;
  };
  if (listener) {
    if (names(pool.tls_key) && !error.starts_with("certificate")) {
      return "tls_key";
    }
    if (names(pool.tls_cert)) {
      return "tls_cert";
    }
    return names(pool.tls_ca) ? "tls_ca" : "tls_ciphers";
  }
  if (names(pool.server_tls_key) && !error.starts_with("certificate")) {
    return "server_tls_key";
  }
  if (names(pool.server_tls_cert)) {
    return "server_tls_cert";
  }
  return names(pool.server_tls_ca) ? "server_tls_ca" : "tls_ciphers";
}

}  // namespace

std::shared_ptr<const PoolTlsMap> buildPoolTls(const config::Config& config,
                                               std::vector<std::string>* errors) {
  auto map = std::make_shared<PoolTlsMap>();
  bool ok = true;
  for (const config::PoolConfig& pool : config.pools) {
    PoolTls& tls = (*map)[pool.name];
    std::string error;
    if (pool.tlsListening()) {
      net::TlsServerOptions o;
      o.cert_file = pool.tls_cert;
      o.key_file = pool.tls_key;
      o.ca_file = pool.tls_ca;
      o.verify_client = pool.tls_verify_client;
      o.min_version = minVersion(pool);
      o.ciphers = pool.tls_ciphers;
      tls.listener = net::TlsContext::server(o, &error);
      if (!tls.listener) {
        errors->push_back("pool '" + pool.name + "': " + keyOf(error, pool, true) + ": " + error);
        ok = false;
      }
    }
    if (pool.anyServerTls()) {
      net::TlsClientOptions o;
      o.ca_file = pool.server_tls_ca;
      o.cert_file = pool.server_tls_cert;
      o.key_file = pool.server_tls_key;
      o.verify = pool.server_tls_verify;
      o.min_version = minVersion(pool);
      o.ciphers = pool.tls_ciphers;
      error.clear();
      tls.servers = net::TlsContext::client(o, &error);
      if (!tls.servers) {
        errors->push_back("pool '" + pool.name + "': " + keyOf(error, pool, false) + ": " + error);
        ok = false;
      }
    }
  }
  if (!ok) {
    return nullptr;
  }
  return map;
}

std::optional<net::TlsSetup> serverTlsSetup(const PoolTls& tls, const config::PoolConfig& pool,
                                            const config::ServerConfig& server) {
  if (!pool.serverUsesTls(server) || !tls.servers) {
    return std::nullopt;
  }
  net::TlsSetup setup;
  setup.context = tls.servers;
  setup.peer_name = !pool.server_tls_name.empty() ? pool.server_tls_name : server.address.host;
  return setup;
}

std::string serverAuthRequest(const config::PoolTopology& pool) {
  if (!pool.server_credentials) {
    return {};
  }
  const config::Credential& c = pool.server_credentials->first();
  const std::string token = c.user + " " + c.password;
  // A server that requires authentication takes this `set` as that and stores nothing. One that
  // does not (a misconfiguration) stores it, so the exptime is -1: already expired, never
  // readable (checked against memcached 1.6.18 both ways).
  return "set mcring:auth 0 -1 " + std::to_string(token.size()) + "\r\n" + token + "\r\n";
}

}  // namespace mcring::core
