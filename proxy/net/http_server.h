// A small HTTP/1.1 server on an event loop (libevent's evhttp), for the admin endpoint.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "proxy/net/event_loop.h"

struct evhttp;
struct evhttp_request;

namespace mcring::net {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  // method: "GET" or "POST"; path without query string.
  using Handler = std::function<HttpResponse(const std::string& method, const std::string& path)>;

  ~HttpServer();
  // Binds address:port; nullptr and *error on failure.
  static std::unique_ptr<HttpServer> open(EventLoop& loop, const std::string& address,
                                          uint16_t port, Handler handler, std::string* error);

 private:
  HttpServer() = default;
  static void onRequest(evhttp_request* req, void* arg);
  evhttp* http_ = nullptr;
  Handler handler_;
};

}  // namespace mcring::net
