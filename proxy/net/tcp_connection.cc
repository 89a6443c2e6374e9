// TcpConnection and Listener over bufferevent / evconnlistener.
#include "proxy/net/tcp_connection.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcring::net {

TcpConnection::TcpConnection(bufferevent* bev, ConnectionHandler* handler)
    : bev_(bev),
      handler_(handler),
      input_(bufferevent_get_input(bev)),
      output_(bufferevent_get_output(bev)) {
  // bufferevent writes at most 16 KiB per writev by default: large values then cost many
  // syscalls per request (bench/RESULTS.md, workload 5).
  bufferevent_set_max_single_write(bev_, 256 * 1024);
  bufferevent_setcb(bev_, &TcpConnection::onRead, &TcpConnection::onWrite,
                    &TcpConnection::onEvent, this);
}

TcpConnection::~TcpConnection() { close(); }

void TcpConnection::close() {
  if (bev_ != nullptr) {
    bufferevent_free(bev_);
    bev_ = nullptr;
  }
  handler_ = nullptr;
}

std::unique_ptr<TcpConnection> TcpConnection::adopt(EventLoop& loop, int fd,
                                                    ConnectionHandler* handler, bool keepalive) {
  evutil_make_socket_nonblocking(fd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (keepalive) {
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  }
  bufferevent* bev = bufferevent_socket_new(loop.raw(), fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<TcpConnection> conn(new TcpConnection(bev, handler));
  bufferevent_enable(bev, EV_READ | EV_WRITE);
  return conn;
}

std::unique_ptr<TcpConnection> TcpConnection::connect(EventLoop& loop,
                                                      const common::SocketAddress& address,
                                                      ConnectionHandler* handler,
                                                      uint32_t timeout_ms, bool keepalive) {
  int fd = ::socket(address.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return nullptr;
  }
  int one = 1;
  if (!address.isUnix()) {
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (keepalive) {
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    }
  }
  bufferevent* bev = bufferevent_socket_new(loop.raw(), fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<TcpConnection> conn(new TcpConnection(bev, handler));
  if (timeout_ms > 0) {
    // While connecting, the write timeout is the connect timeout.
    timeval tv{static_cast<time_t>(timeout_ms / 1000),
               static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
    bufferevent_set_timeouts(bev, nullptr, &tv);
  }
  bufferevent_enable(bev, EV_READ | EV_WRITE);
  if (bufferevent_socket_connect(bev, const_cast<sockaddr*>(address.get()),
                                 static_cast<int>(address.length)) != 0) {
    // Immediate failure (e.g. unix socket missing): reported via onEvent as well in libevent,
    // but not always; the caller treats nullptr as a failed connect.
    return nullptr;
  }
  return conn;
}

void TcpConnection::enableReading(bool on) {
  if (on) {
    bufferevent_enable(bev_, EV_READ);
  } else {
    bufferevent_disable(bev_, EV_READ);
  }
}

void TcpConnection::setReadTimeout(uint32_t ms) {
  if (ms == 0) {
    bufferevent_set_timeouts(bev_, nullptr, nullptr);
    return;
  }
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  bufferevent_set_timeouts(bev_, &tv, nullptr);
}

void TcpConnection::setWriteLowWatermark(size_t bytes) {
  bufferevent_setwatermark(bev_, EV_WRITE, bytes, 0);
}

void TcpConnection::setReadHighWatermark(size_t bytes) {
  bufferevent_setwatermark(bev_, EV_READ, 0, bytes);
}

int TcpConnection::fd() const { return bev_ == nullptr ? -1 : bufferevent_getfd(bev_); }

void TcpConnection::onRead(bufferevent*, void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (self->handler_ != nullptr) {
    self->handler_->onReadable();
  }
}

void TcpConnection::onWrite(bufferevent*, void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (self->handler_ != nullptr) {
    self->handler_->onWritable();
  }
}

void TcpConnection::onEvent(bufferevent* bev, short what, void* arg) {
  auto* self = static_cast<TcpConnection*>(arg);
  if (self->handler_ == nullptr) {
    return;
  }
  if (what & BEV_EVENT_CONNECTED) {
    // The connect timeout is over; read timeouts are set per request by the owner.
    bufferevent_set_timeouts(bev, nullptr, nullptr);
    self->handler_->onConnected();
    return;
  }
  int err = EVUTIL_SOCKET_ERROR();
  CloseReason reason = CloseReason::Error;
  if (what & BEV_EVENT_TIMEOUT) {
    reason = CloseReason::Timeout;
  } else if (what & BEV_EVENT_EOF) {
    reason = CloseReason::Eof;
  }
  // After EOF the peer may still read: keep writing so pending replies reach it.
  bufferevent_disable(bev, reason == CloseReason::Eof ? EV_READ : (EV_READ | EV_WRITE));
  ConnectionHandler* h = self->handler_;
  h->onClosed(reason, err);
}

Listener::~Listener() {
  if (listener_ != nullptr) {
    evconnlistener_free(listener_);
  }
  if (!unix_path_.empty()) {
    ::unlink(unix_path_.c_str());
  }
}

std::unique_ptr<Listener> Listener::open(EventLoop& loop, const common::SocketAddress& address,
                                         int backlog, bool reuseport, uint32_t unix_mode,
                                         AcceptFn fn, std::string* error) {
  std::unique_ptr<Listener> l(new Listener());
  l->fn_ = std::move(fn);
  unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
  if (!address.isUnix()) {
    flags |= LEV_OPT_REUSEABLE;
    if (reuseport) {
      flags |= LEV_OPT_REUSEABLE_PORT;
    }
  } else {
    l->unix_path_ = address.toString();
    ::unlink(l->unix_path_.c_str());
  }
  l->listener_ = evconnlistener_new_bind(
      loop.raw(),
      [](evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
        static_cast<Listener*>(arg)->fn_(fd);
      },
      l.get(), flags, backlog, address.get(), static_cast<int>(address.length));
  if (l->listener_ == nullptr) {
    if (error != nullptr) {
      *error = "cannot listen on " + address.toString() + ": " + std::strerror(errno);
    }
    l->unix_path_.clear();
    return nullptr;
  }
  if (address.isUnix() && unix_mode != 0) {
    ::chmod(l->unix_path_.c_str(), unix_mode);
  }
  return l;
}

void Listener::pause() { evconnlistener_disable(listener_); }
void Listener::resume() { evconnlistener_enable(listener_); }

}  // namespace mcring::net
