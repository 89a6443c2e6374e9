// HttpServer over evhttp: one generic callback, routing is the handler's job; connection cap and
// whole-request deadlines kept here, beside evhttp (see http_server.h).
#include "proxy/net/http_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "proxy/common/clock.h"
#include "proxy/net/accept_backoff.h"

namespace mcring::net {
namespace {

constexpr uint32_t kSweepMs = 100;

const char* reasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 421:
      return "Misdirected Request";
    case 422:
      return "Unprocessable Entity";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// The local end of the connection: which of the host's addresses the client asked for.
void localAddress(evhttp_connection* evcon, std::string* address, uint16_t* port) {
  bufferevent* bev = evhttp_connection_get_bufferevent(evcon);
  evutil_socket_t fd = bev != nullptr ? bufferevent_getfd(bev) : -1;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    return;
  }
  char text[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
    *port = ntohs(sin->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
    *port = ntohs(sin6->sin6_port);
  }
  *address = text;
}

}  // namespace

const char* HttpRequest::header(const char* name) const {
  if (headers == nullptr) {
    return nullptr;
  }
  return evhttp_find_header(static_cast<const evkeyvalq*>(headers), name);
}

HttpServer::~HttpServer() {
  backoff_.reset();  // before evhttp_free frees the listener it watches
  register_timer_.reset();
  sweep_timer_.reset();
  if (http_ != nullptr) {
    evhttp_free(http_);  // closes every connection (onClosed empties conns_)
  }
  for (bufferevent* bev : pending_) {
    bufferevent_decref(bev);
  }
}

std::unique_ptr<HttpServer> HttpServer::open(EventLoop& loop, const std::string& address,
                                             uint16_t port, Handler handler, std::string* error,
                                             HttpLimits limits, HttpServerEvents events,
                                             int inherited_fd) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->handler_ = std::move(handler);
  s->limits_ = limits;
  s->events_ = std::move(events);
  s->http_ = evhttp_new(loop.raw());
  if (s->http_ == nullptr) {
    *error = "evhttp_new failed";
    return nullptr;
  }
  evhttp_set_allowed_methods(s->http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
  evhttp_set_max_body_size(s->http_, 64 * 1024);
  evhttp_set_max_headers_size(s->http_, 16 * 1024);
  // evhttp's own timeout is between reads or writes; the deadlines (sweep) bound the whole.
  evhttp_set_timeout(s->http_,
                     static_cast<int>(std::max(
                         1u, std::max(limits.request_timeout_ms, limits.reply_timeout_ms) / 1000)));
  evhttp_set_gencb(s->http_, &HttpServer::onRequest, s.get());
  evhttp_set_bevcb(s->http_, &HttpServer::onNewConnection, s.get());
  HttpServer* self = s.get();
  s->register_timer_ = std::make_unique<Timer>(loop, [self] { self->registerPending(); });
  s->sweep_timer_ = std::make_unique<Timer>(loop, [self] { self->sweep(); });
  std::string host = address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  evhttp_bound_socket* bound = nullptr;
  if (inherited_fd >= 0) {
    // Accepts run until EAGAIN: the socket must not block.
    evutil_make_socket_nonblocking(inherited_fd);
    evutil_make_socket_closeonexec(inherited_fd);
    bound = evhttp_accept_socket_with_handle(s->http_, inherited_fd);
    if (bound == nullptr) {
      ::close(inherited_fd);
    }
  } else {
    bound = evhttp_bind_socket_with_handle(s->http_, host.c_str(), port);
  }
  if (bound == nullptr) {
    *error = "cannot listen on " + address + ":" + std::to_string(port);
    return nullptr;
  }
  s->bound_ = bound;
  s->port_ = port;
  sockaddr_storage bound_addr{};
  socklen_t bound_len = sizeof(bound_addr);
  if (::getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&bound_addr),
                    &bound_len) == 0) {
    s->port_ = ntohs(bound_addr.ss_family == AF_INET6
                         ? reinterpret_cast<sockaddr_in6*>(&bound_addr)->sin6_port
                         : reinterpret_cast<sockaddr_in*>(&bound_addr)->sin_port);
  }
  s->backoff_ = std::make_unique<AcceptBackoff>(loop, evhttp_bound_socket_get_listener(bound),
                                                "admin " + address + ":" + std::to_string(port));
  s->backoff_->setErrorHandler([self](int err) {
    if (self->events_.accept_error) {
      self->events_.accept_error(err);
    }
  });
  return s;
}

int HttpServer::listenFd() const {
  return bound_ != nullptr ? evhttp_bound_socket_get_fd(bound_) : -1;
}

void HttpServer::stopAccepting() {
  if (bound_ == nullptr) {
    return;
  }
  backoff_.reset();  // it watches the listener freed below
  evhttp_del_accept_socket(http_, bound_);
  bound_ = nullptr;
}

// evhttp asks for a bufferevent for each accepted socket before it builds the connection around
// it. We keep a reference so it cannot vanish before registerPending() looks at it (right after
// this accept callback): its callback argument is then the connection, or null if evhttp already
// gave up on it.
bufferevent* HttpServer::onNewConnection(event_base* base, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  if (self->backoff_) {
    self->backoff_->accepted();
  }
  bufferevent* bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    return nullptr;
  }
  bufferevent_incref(bev);
  self->pending_.push_back(bev);
  if (!self->register_timer_->pending()) {
    self->register_timer_->start(0);
  }
  return bev;
}

void HttpServer::registerPending() {
  std::vector<bufferevent*> pending;
  pending.swap(pending_);
  for (bufferevent* bev : pending) {
    void* cbarg = nullptr;
    bufferevent_getcb(bev, nullptr, nullptr, nullptr, &cbarg);
    if (cbarg != nullptr) {
      admit(static_cast<evhttp_connection*>(cbarg));
    }
    bufferevent_decref(bev);
  }
}

void HttpServer::admit(evhttp_connection* evcon) {
  if (conns_.count(evcon) > 0) {
    return;
  }
  evhttp_connection_set_closecb(evcon, &HttpServer::onClosed, this);
  // evhttp writes a reply's head and body separately: with Nagle, a body past one segment waited
  // for the client's delayed ACK, 40 ms per reply of /metrics or the console's page.
  if (bufferevent* bev = evhttp_connection_get_bufferevent(evcon); bev != nullptr) {
    const int one = 1;
    ::setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  const uint64_t now = common::monotonicNs();
  if (conns_.size() >= limits_.max_connections) {
    // Full: the connection that has waited longest for its request goes; a client that sends
    // its request at once is answered before anyone can push it out.
    evhttp_connection* victim = nullptr;
    uint64_t oldest = UINT64_MAX;
    for (const auto& [c, state] : conns_) {
      if (state.awaiting_request && state.phase_start_ns < oldest) {
        oldest = state.phase_start_ns;
        victim = c;
      }
    }
    if (events_.connection_shed) {
      events_.connection_shed();
    }
    if (victim == nullptr) {
      evhttp_connection_free(evcon);  // every slot is answering a request: refuse this one
      return;
    }
    evhttp_connection_free(victim);  // onClosed erases it
    conns_.erase(victim);            // in case evhttp did not call back (already disconnected)
  }
  Conn& c = conns_[evcon];
  c.phase_start_ns = now;
  c.deadline_ns = now + uint64_t{limits_.request_timeout_ms} * 1000000ULL;
  c.awaiting_request = true;
  if (!sweep_timer_->pending()) {
    sweep_timer_->start(kSweepMs, /*periodic=*/true);
  }
}

void HttpServer::onClosed(evhttp_connection* evcon, void* arg) {
  static_cast<HttpServer*>(arg)->conns_.erase(evcon);
}

void HttpServer::sweep() {
  if (conns_.empty()) {
    sweep_timer_->stop();
    return;
  }
  const uint64_t now = common::monotonicNs();
  std::vector<evhttp_connection*> expired;
  for (const auto& [c, state] : conns_) {
    if (state.deadline_ns <= now) {
      expired.push_back(c);
    }
  }
  for (evhttp_connection* c : expired) {
    if (conns_.count(c) == 0) {
      continue;
    }
    if (events_.connection_timed_out) {
      events_.connection_timed_out();
    }
    evhttp_connection_free(c);  // onClosed erases it
    conns_.erase(c);            // in case evhttp did not call back (already disconnected)
  }
}

void HttpServer::onReplySent(evhttp_request* req, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  auto it = self->conns_.find(evhttp_request_get_connection(req));
  if (it != self->conns_.end()) {
    // A kept-alive connection waits for its next request under a new deadline.
    const uint64_t now = common::monotonicNs();
    it->second.awaiting_request = true;
    it->second.phase_start_ns = now;
    it->second.deadline_ns = now + uint64_t{self->limits_.request_timeout_ms} * 1000000ULL;
  }
}

void HttpServer::onRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  evhttp_connection* evcon = evhttp_request_get_connection(req);
  auto it = self->conns_.find(evcon);
  if (it != self->conns_.end()) {
    const uint64_t now = common::monotonicNs();
    it->second.awaiting_request = false;
    it->second.phase_start_ns = now;
    it->second.deadline_ns = now + uint64_t{self->limits_.reply_timeout_ms} * 1000000ULL;
  }
  evhttp_request_set_on_complete_cb(req, &HttpServer::onReplySent, self);

  HttpRequest request;
  switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET:
      request.method = "GET";
      break;
    case EVHTTP_REQ_POST:
      request.method = "POST";
      break;
    case EVHTTP_REQ_HEAD:
      request.method = "HEAD";
      break;
    default:
      request.method = "OTHER";
      break;
  }
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  request.path = path != nullptr && *path != '\0' ? path : "/";
  request.headers = evhttp_request_get_input_headers(req);
  if (evbuffer* in = evhttp_request_get_input_buffer(req); in != nullptr) {
    request.body.resize(evbuffer_get_length(in));
    evbuffer_copyout(in, request.body.data(), request.body.size());
  }
  if (evcon != nullptr) {
    localAddress(evcon, &request.local_address, &request.local_port);
    char* peer = nullptr;
    ev_uint16_t peer_port = 0;
    evhttp_connection_get_peer(evcon, &peer, &peer_port);
    request.peer = peer != nullptr ? peer : "";
  }
  HttpResponse resp = self->handler_(request);
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", resp.content_type.c_str());
  // A browser must take every answer as its Content-Type says: a JSON view holding a client's
  // key must never be sniffed into HTML or script.
  evhttp_add_header(headers, "X-Content-Type-Options", "nosniff");
  for (const auto& [name, value] : resp.headers) {
    evhttp_add_header(headers, name.c_str(), value.c_str());
  }
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, resp.body.data(), resp.body.size());
  evhttp_send_reply(req, resp.status, reasonPhrase(resp.status), body);
  evbuffer_free(body);
}

}  // namespace mcring::net
