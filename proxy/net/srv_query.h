// One SRV query (RFC 2782) over UDP to one nameserver, on a loop: libevent 2.1's evdns resolves
// A, AAAA and PTR only. Two tries of `timeout_ms`; the records, or why there are none.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct event;

namespace mcring::net {

class EventLoop;

struct SrvRecord {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  std::string target;  // a host name, without the final dot
};

class SrvQuery {
 public:
  // ok: at least one record. error: "no such name (NXDOMAIN)", "no SRV records",
  // "request timed out", ...
  using Callback = std::function<void(bool ok, std::vector<SrvRecord>, std::string error)>;

  // nameserver: a sockaddr (IPv4 or IPv6) of `length` bytes. `done` runs once, on the loop,
  // unless the query is destroyed first.
  SrvQuery(EventLoop& loop, const void* nameserver, int length, uint32_t timeout_ms);
  ~SrvQuery();
  SrvQuery(const SrvQuery&) = delete;
  SrvQuery& operator=(const SrvQuery&) = delete;

  void start(const std::string& name, Callback done);

  // The records of a reply to query `id`, for tests: false and *error when it is not one.
  static bool parseReply(const uint8_t* data, size_t size, uint16_t id,
                         std::vector<SrvRecord>* records, std::string* error);

 private:
  static void onEvent(int fd, short what, void* arg);
  void send();
  void finish(bool ok, std::vector<SrvRecord> records, std::string error);

  EventLoop& loop_;
  std::vector<uint8_t> nameserver_;
  uint32_t timeout_ms_;
  int fd_ = -1;
  event* ev_ = nullptr;
  uint16_t id_ = 0;
  int tries_ = 0;
  std::vector<uint8_t> packet_;
  std::string start_error_;  // the socket could not be opened or connected
  Callback done_;
};

}  // namespace mcring::net
