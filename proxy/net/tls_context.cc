// TlsContext: SSL_CTX construction and the checks that make a bad file a config error.
#include "proxy/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mcring::net {

namespace {

// OpenSSL's messages for a missing file ("system library::No such file or directory") do not
// say which file; this does, before OpenSSL is asked.
bool readable(const std::string& file, const char* what, std::string* error) {
  FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) {
    *error = std::string(what) + " " + file + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::fclose(f);
  return true;
}

bool fail(SSL_CTX* ctx, std::string* error, std::string message) {
  std::string why = tlsErrorText();
  *error = why.empty() ? std::move(message) : message + ": " + why;
  SSL_CTX_free(ctx);
  return false;
}

// What both sides share: protocol floor, ciphers, modes the connection's I/O relies on.
bool common(SSL_CTX* ctx, TlsVersion min_version, const std::string& ciphers, std::string* error) {
  SSL_CTX_set_min_proto_version(ctx,
                                min_version == TlsVersion::Tls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  const std::string list = ciphers.empty() ? kDefaultTlsCiphers : ciphers;
  if (SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
    return fail(ctx, error, "cipher list '" + list + "' selects no cipher");
  }
  // Writes come from an evbuffer's chunks: a retried SSL_write may see the same bytes at
  // another address, and may complete part of what it was given.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  // Read whole socket buffers, not a record header then its body: half the read syscalls.
  SSL_CTX_set_read_ahead(ctx, 1);
  // No renegotiation (TLS 1.2): a client cannot make the proxy redo handshakes. A peer that
  // closes without close_notify (most memcached clients) is an EOF, not an error.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
  return true;
}

bool loadPair(SSL_CTX* ctx, const std::string& cert, const std::string& key, std::string* error) {
  if (!readable(cert, "certificate", error) || !readable(key, "key", error)) {
    SSL_CTX_free(ctx);
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    return fail(ctx, error, "certificate " + cert + ": not a PEM certificate");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // OpenSSL compares the key with the certificate as it loads it.
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return fail(ctx, error, "key " + key + " does not match certificate " + cert);
    }
    return fail(ctx, error, "key " + key + ": not a PEM private key (or encrypted)");
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fail(ctx, error, "key " + key + " does not match certificate " + cert);
  }
  return true;
}

bool loadCa(SSL_CTX* ctx, const std::string& ca, std::string* error) {
  if (!readable(ca, "CA file", error)) {
    SSL_CTX_free(ctx);
    return false;
  }
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) {
    return fail(ctx, error, "CA file " + ca + ": no PEM certificate in it");
  }
  return true;
}

}  // namespace

std::string tlsErrorText() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    out = buf;  // the last is the most specific
  }
  return out;
}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
}

std::shared_ptr<const TlsContext> TlsContext::server(const TlsServerOptions& options,
                                                     std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + tlsErrorText();
    return nullptr;
  }
  if (!common(ctx, options.min_version, options.ciphers, error) ||
      !loadPair(ctx, options.cert_file, options.key_file, error)) {
    return nullptr;
  }
  if (!options.ca_file.empty()) {
    if (!loadCa(ctx, options.ca_file, error)) {
      return nullptr;
    }
    // Tell clients which CAs are accepted (openssl s_client shows them).
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.ca_file.c_str());
    if (names != nullptr) {
      SSL_CTX_set_client_CA_list(ctx, names);
    }
  }
  if (options.verify_client) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  // Resumed sessions skip the certificate exchange; tickets are keyed per context, so a reload
  // (a new context) simply makes clients do a full handshake once.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  static const unsigned char kSessionId[] = "mcring";
  SSL_CTX_set_session_id_context(ctx, kSessionId, sizeof(kSessionId) - 1);
  return std::shared_ptr<const TlsContext>(new TlsContext(ctx, true, options.verify_client));
}

std::shared_ptr<const TlsContext> TlsContext::client(const TlsClientOptions& options,
                                                     std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + tlsErrorText();
    return nullptr;
  }
  if (!common(ctx, options.min_version, options.ciphers, error)) {
    return nullptr;
  }
  if (!options.cert_file.empty() && !loadPair(ctx, options.cert_file, options.key_file, error)) {
    return nullptr;
  }
  if (!options.ca_file.empty()) {
    if (!loadCa(ctx, options.ca_file, error)) {
      return nullptr;
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    ERR_clear_error();  // no system store: verification will fail, and say so per connection
  }
  SSL_CTX_set_verify(ctx, options.verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
  return std::shared_ptr<const TlsContext>(new TlsContext(ctx, false, options.verify));
}

}  // namespace mcring::net
