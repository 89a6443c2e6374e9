// An OpenSSL context (SSL_CTX) built from certificate and key files: one for a TLS listener
// (the server side, optionally requiring client certificates) or one for connections to TLS
// backends (the client side, verifying the server's certificate and name).
//
// Built on the main thread when a config is loaded; shared, immutable, by every connection that
// starts while it is current. A connection keeps the context it started with (OpenSSL counts
// the references), so a reload that swaps certificates affects new connections only and drops
// none. Only net sees OpenSSL's SSL types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

struct ssl_ctx_st;

namespace mcring::net {

enum class TlsVersion : uint8_t { Tls12, Tls13 };

struct TlsServerOptions {
  std::string cert_file;       // PEM certificate chain
  std::string key_file;        // PEM private key
  std::string ca_file;         // PEM CAs that client certificates must chain to ("" = none)
  bool verify_client = false;  // require a client certificate signed by ca_file
  TlsVersion min_version = TlsVersion::Tls12;
  std::string ciphers;  // OpenSSL cipher list for TLS 1.2 ("" = the default below)
};

struct TlsClientOptions {
  std::string ca_file;    // "" = the system's trusted CAs
  std::string cert_file;  // client certificate for backends that require one ("" = none)
  std::string key_file;
  bool verify = true;  // verify the server's certificate and name
  TlsVersion min_version = TlsVersion::Tls12;
  std::string ciphers;
};

// Forward secrecy and AEAD ciphers only, for TLS 1.2 (TLS 1.3's suites are all of that kind
// and keep OpenSSL's default).
inline constexpr const char* kDefaultTlsCiphers = "ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM";

class TlsContext {
 public:
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // nullptr and *error (naming the file at fault and OpenSSL's reason) if a file cannot be
  // read, the key does not match the certificate, or an option is refused.
  static std::shared_ptr<const TlsContext> server(const TlsServerOptions& options,
                                                  std::string* error);
  static std::shared_ptr<const TlsContext> client(const TlsClientOptions& options,
                                                  std::string* error);

  ssl_ctx_st* raw() const { return ctx_; }
  bool isServer() const { return server_; }
  bool verifies() const { return verify_; }

 private:
  TlsContext(ssl_ctx_st* ctx, bool server, bool verify)
      : ctx_(ctx), server_(server), verify_(verify) {}
  ssl_ctx_st* ctx_;
  bool server_;
  bool verify_;
};

// What a connection's TLS is set up with: the context and, for the client side, the name to
// send as SNI and to verify the certificate against (a host name or an IP address); for the
// server side, how long an accepted client has to finish its handshake (0: for ever).
struct TlsSetup {
  std::shared_ptr<const TlsContext> context;
  std::string peer_name;
  uint32_t handshake_timeout_ms = 0;
};

// The most recent OpenSSL error queue as one line (and clears it).
std::string tlsErrorText();

}  // namespace mcring::net
