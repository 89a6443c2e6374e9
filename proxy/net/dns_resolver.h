// A DNS name's addresses (A and AAAA), or an SRV name's servers, asked of a nameserver over
// libevent's evdns on one loop (SRV through SrvQuery: evdns 2.1 has no SRV queries).
//
// Control resolves each discovered pool's name with it on the main thread (servers_dns,
// servers_srv). An answer is all or nothing: every query must come back, and a query that failed
// (timeout, server failure, refused) fails the answer, so a half-answered name never reads as
// servers that left. A name with no record of one family (NODATA) is not a failure; no address
// at all (NXDOMAIN, or NODATA for both) is, and so is an SRV target without an address.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proxy/net/srv_query.h"

struct evdns_base;

namespace mcring::net {

class EventLoop;

struct DnsAnswer {
  bool ok = false;
  std::vector<std::string> addresses;  // sorted text ("10.0.0.5", "fd00::5"), no duplicates
  std::string error;                   // why not ok ("NXDOMAIN", "request timed out", ...)
};

// One server of an SRV answer: an address of a target, with the record's port and weight.
struct SrvServer {
  std::string address;
  uint16_t port = 0;
  uint16_t weight = 0;
  std::string target;
};

struct SrvAnswer {
  bool ok = false;
  std::vector<SrvServer> servers;  // sorted by address and port, no duplicates
  std::string error;
};

class DnsResolver {
 public:
  using Callback = std::function<void(DnsAnswer)>;
  using SrvCallback = std::function<void(SrvAnswer)>;

  // nameserver: an IP address and port ("127.0.0.1:5353", "[::1]:53"); "" for the nameservers
  // and search domains of /etc/resolv.conf (SRV asks the first nameserver). timeout_ms: per
  // try, two tries. nullptr (and *error) when the nameserver or resolv.conf cannot be used.
  static std::unique_ptr<DnsResolver> create(EventLoop& loop, const std::string& nameserver,
                                             uint32_t timeout_ms, std::string* error);
  ~DnsResolver();
  DnsResolver(const DnsResolver&) = delete;
  DnsResolver& operator=(const DnsResolver&) = delete;

  // Resolves `name`; `done` runs once, on the loop, later (never inside this call). One
  // resolution at a time: false, and nothing started, while one is in flight (or if no query
  // can be started). Destroying the resolver drops an answer still owed (`done` is not called).
  bool resolve(const std::string& name, Callback done);
  // The same for an SRV name ("_memcache._tcp.example.com"): its records, then each target's
  // A and AAAA addresses.
  bool resolveSrv(const std::string& name, SrvCallback done);
  bool busy() const { return query_ != nullptr; }

 private:
  struct Query;
  struct Part;
  DnsResolver(EventLoop& loop, evdns_base* base, uint32_t timeout_ms)
      : loop_(loop), base_(base), timeout_ms_(timeout_ms) {}
  // Starts the A and AAAA queries of `name` for target `index` (-1: a plain resolution).
  void ask(Query* q, const std::string& name, int index);
  void onSrv(bool ok, std::vector<SrvRecord> records, std::string error);
  static void onReply(int result, char type, int count, int ttl, void* addresses, void* arg);
  void finish(Query* query);

  EventLoop& loop_;
  evdns_base* base_;
  uint32_t timeout_ms_;
  std::vector<uint8_t> nameserver_;  // sockaddr of the nameserver SRV queries go to
  std::unique_ptr<SrvQuery> srv_;    // the last SRV query (kept: its callback may still be running)
  Query* query_ = nullptr;           // in flight; owned by its evdns callbacks (freed by the last)
};

}  // namespace mcring::net
