// HealthProbe: connect, send `version`, wait for a VERSION line.
#include "proxy/backend/health_probe.h"

namespace mcring::core {

HealthProbe::HealthProbe(net::EventLoop& loop, const common::SocketAddress& address,
                         uint32_t timeout_ms, Done done, const std::optional<net::TlsSetup>& tls,
                         const std::string& auth)
    : loop_(loop), done_(std::move(done)), timeout_ms_(timeout_ms == 0 ? 1000 : timeout_ms) {
  deadline_ = std::make_unique<net::Timer>(loop_, [this] { finish(false); });
  deadline_->start(timeout_ms_);
  tcp_ =
      net::TcpConnection::connect(loop_, address, this, timeout_ms_, false, tls ? &*tls : nullptr);
  if (tcp_) {
    auth_pending_ = !auth.empty();
    tcp_->output().append(auth);
    tcp_->output().append("version\r\n");
  } else {
    deadline_->start(0);  // report the failure from the loop, not from the constructor
  }
}

HealthProbe::~HealthProbe() = default;

void HealthProbe::onConnected() {}

void HealthProbe::onReadable() {
  net::Buffer& in = tcp_->input();
  size_t nl = in.findNewline(0, 256);
  if (nl == net::Buffer::npos) {
    if (in.size() > 256) {
      finish(false);
    }
    return;
  }
  if (auth_pending_) {
    if (in.contiguous(nl + 1) != "STORED\r\n") {
      finish(false);
      return;
    }
    auth_pending_ = false;
    in.drain(nl + 1);
    onReadable();
    return;
  }
  finish(in.contiguous(nl + 1).starts_with("VERSION "));
}

void HealthProbe::onClosed(net::CloseReason, int) {
  finish(false);
}

void HealthProbe::finish(bool healthy) {
  if (finished_) {
    return;
  }
  finished_ = true;
  deadline_->stop();
  if (tcp_) {
    tcp_->close();
  }
  // The owner may destroy this probe from `done`: post it so no member is touched afterwards.
  loop_.post([done = std::move(done_), healthy] { done(healthy); });
}

}  // namespace mcring::core
