// A DNS name's addresses (A and AAAA), asked of a nameserver over libevent's evdns on one loop.
//
// Control resolves each discovered pool's name with it on the main thread (servers_dns). An
// answer is all or nothing: both queries must come back, and a query that failed (timeout,
// server failure, refused) fails the answer, so a half-answered name never reads as servers
// that left. A name with no record of one family (NODATA) is not a failure; no address at all
// (NXDOMAIN, or NODATA for both) is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct evdns_base;

namespace mcring::net {

class EventLoop;

struct DnsAnswer {
  bool ok = false;
  std::vector<std::string> addresses;  // sorted text ("10.0.0.5", "fd00::5"), no duplicates
  std::string error;                   // why not ok ("NXDOMAIN", "request timed out", ...)
};

class DnsResolver {
 public:
  using Callback = std::function<void(DnsAnswer)>;

  // nameserver: an IP address and port ("127.0.0.1:5353", "[::1]:53"); "" for the nameservers
  // and search domains of /etc/resolv.conf. timeout_ms: per try, two tries. nullptr (and
  // *error) when the nameserver or resolv.conf cannot be used.
  static std::unique_ptr<DnsResolver> create(EventLoop& loop, const std::string& nameserver,
                                             uint32_t timeout_ms, std::string* error);
  ~DnsResolver();
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;

  // Resolves `name`; `done` runs once, on the loop, later (never inside this call). One
  // resolution at a time: false, and nothing started, while one is in flight (or if neither query
  // can be started). Destroying the
  // resolver drops an answer still owed (`done` is not called).
  bool resolve(const std::string& name, Callback done);
  bool busy() const { return query_ != nullptr; }

 private:
  struct Query;
  explicit DnsResolver(evdns_base* base) : base_(base) {}
  static void onReply(int result, char type, int count, int ttl, void* addresses, void* arg);
  void finish(Query* query);

  evdns_base* base_;
  Query* query_ = nullptr;  // in flight; owned by its evdns callbacks (freed by the last)
};

}  // namespace mcring::net
