// HttpServer over evhttp: one generic callback, routing is the handler's job.
#include "proxy/net/http_server.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

namespace mcring::net {

HttpServer::~HttpServer() {
  if (http_ != nullptr) {
    evhttp_free(http_);
  }
}

std::unique_ptr<HttpServer> HttpServer::open(EventLoop& loop, const std::string& address,
                                             uint16_t port, Handler handler, std::string* error) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->handler_ = std::move(handler);
  s->http_ = evhttp_new(loop.raw());
  if (s->http_ == nullptr) {
    *error = "evhttp_new failed";
    return nullptr;
  }
  evhttp_set_allowed_methods(s->http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
  evhttp_set_max_body_size(s->http_, 64 * 1024);
  evhttp_set_max_headers_size(s->http_, 16 * 1024);
  evhttp_set_timeout(s->http_, 10);
  evhttp_set_gencb(s->http_, &HttpServer::onRequest, s.get());
  std::string host = address;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (evhttp_bind_socket(s->http_, host.c_str(), port) != 0) {
    *error = "cannot listen on " + address + ":" + std::to_string(port);
    return nullptr;
  }
  return s;
}

void HttpServer::onRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  const char* method = "GET";
  switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_POST:
      method = "POST";
      break;
    case EVHTTP_REQ_HEAD:
      method = "HEAD";
      break;
    default:
      break;
  }
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  HttpResponse resp = self->handler_(method, path != nullptr ? path : "/");
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Content-Type", resp.content_type.c_str());
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, resp.body.data(), resp.body.size());
  evhttp_send_reply(req, resp.status, resp.status == 200 ? "OK" : "Error", body);
  evbuffer_free(body);
}

}  // namespace mcring::net
