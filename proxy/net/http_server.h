// A small HTTP/1.1 server on an event loop (libevent's evhttp), for the admin endpoint.
//
// evhttp alone lets a client hold a connection for as long as it sends a byte before each
// inter-byte timeout, and accepts any number of connections. So HttpServer bounds both:
//   - at most HttpLimits::max_connections at once; one more arriving closes the connection that
//     has waited longest for its request to complete (a stalled client loses its place to one
//     that sends a whole request), or, if every connection is past its request, the new one;
//   - a deadline for the whole request (request_timeout_ms from accept, or from the previous
//     reply on a kept-alive connection, to the complete request) and another for the reply to be
//     written (reply_timeout_ms); a connection past either is closed.
// Its listener backs off on accept errors (accept_backoff.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "proxy/net/event_loop.h"

struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct evhttp_connection;
struct bufferevent;
struct event_base;

namespace mcring::net {

class AcceptBackoff;

struct HttpRequest {
  std::string method;  // "GET", "POST", "HEAD", ...
  std::string path;    // without the query string
  // The address and port the client connected to (IPv6 without brackets), "" if unknown.
  std::string local_address;
  uint16_t local_port = 0;
  std::string peer;  // the client's address
  std::string body;  // a POST's body (at most 64 KiB: evhttp refuses larger ones with 413)
  // A request header (case-insensitive name), nullptr if absent.
  const char* header(const char* name) const;

  const void* headers = nullptr;  // libevent's header list; read through header()
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
};

struct HttpLimits {
  size_t max_connections = 64;
  uint32_t request_timeout_ms = 5000;
  uint32_t reply_timeout_ms = 10000;
};

// What the owner may count; each may be empty.
struct HttpServerEvents {
  std::function<void()> connection_shed;       // closed to stay within max_connections
  std::function<void()> connection_timed_out;  // closed by a deadline
  std::function<void(int err)> accept_error;   // accept() failed (errno); the listener pauses
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest& request)>;

  ~HttpServer();
  // Binds address:port, or serves inherited_fd (a listening socket bound to it, inherited from
  // another process: an upgrade's hand-over) when it is not -1; nullptr and *error on failure.
  static std::unique_ptr<HttpServer> open(EventLoop& loop, const std::string& address,
                                          uint16_t port, Handler handler, std::string* error,
                                          HttpLimits limits = {}, HttpServerEvents events = {},
                                          int inherited_fd = -1);
  // The listening socket (-1 once stopAccepting() closed it).
  int listenFd() const;
  // Closes the listening socket; connections already accepted are served to their end.
  void stopAccepting();
  // Connections open and tracked (for tests and diagnostics). Loop thread.
  size_t connections() const { return conns_.size(); }
  // The port bound (the one asked for, or the one the kernel chose for 0).
  uint16_t port() const { return port_; }

 private:
  struct Conn {
    uint64_t phase_start_ns = 0;  // accept, previous reply sent, or request complete
    uint64_t deadline_ns = 0;
    bool awaiting_request = true;  // false from the complete request until its reply is sent
  };
  HttpServer() = default;
  static void onRequest(evhttp_request* req, void* arg);
  static void onReplySent(evhttp_request* req, void* arg);
  static bufferevent* onNewConnection(event_base* base, void* arg);
  static void onClosed(evhttp_connection* evcon, void* arg);
  void registerPending();
  void admit(evhttp_connection* evcon);
  void sweep();

  evhttp* http_ = nullptr;
  evhttp_bound_socket* bound_ = nullptr;
  uint16_t port_ = 0;
  Handler handler_;
  HttpLimits limits_;
  HttpServerEvents events_;
  std::unique_ptr<AcceptBackoff> backoff_;
  // Sockets accepted and handed to evhttp, whose connection object is looked up (and given a
  // close callback) once evhttp has built it: evhttp offers no hook with the connection itself.
  std::vector<bufferevent*> pending_;
  std::unique_ptr<Timer> register_timer_;
  std::unique_ptr<Timer> sweep_timer_;
  std::unordered_map<evhttp_connection*, Conn> conns_;
};

}  // namespace mcring::net
