// One cheap health check of a backend before it returns to the ring: connect, `version`, expect
// `VERSION ...` within a timeout. Main thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "proxy/common/socket_address.h"
#include "proxy/net/event_loop.h"
#include "proxy/net/tcp_connection.h"
#include "proxy/net/tls_context.h"

namespace mcring::core {

class HealthProbe : public net::ConnectionHandler {
 public:
  using Done = std::function<void(bool healthy)>;
  // Starts at once; `done` runs exactly once, from the loop (never from inside start()).
  // tls, auth: as the workers connect to this server (pool_security.h).
  HealthProbe(net::EventLoop& loop, const common::SocketAddress& address, uint32_t timeout_ms,
              Done done, const std::optional<net::TlsSetup>& tls = std::nullopt,
              const std::string& auth = {});
  ~HealthProbe() override;

  void onConnected() override;
  void onReadable() override;
  void onClosed(net::CloseReason reason, int error) override;

 private:
  void finish(bool healthy);
  net::EventLoop& loop_;
  std::unique_ptr<net::TcpConnection> tcp_;
  std::unique_ptr<net::Timer> deadline_;
  Done done_;
  uint32_t timeout_ms_;
  bool finished_ = false;
  bool auth_pending_ = false;  // the STORED of the authentication comes before VERSION
};

}  // namespace mcring::core
