// DnsResolver over evdns: one evdns_base per resolver, an A and an AAAA query per resolution.
#include "proxy/net/dns_resolver.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>

#include "proxy/net/event_loop.h"

namespace mcring::net {

// One resolution: both queries' callbacks point at it; the second to come back frees it.
// `owner` is cleared when the resolver goes first (evdns_base_free fails what is in flight, and
// those callbacks may still run afterwards).
struct DnsResolver::Query {
  DnsResolver* owner = nullptr;
  Callback done;
  int left = 2;
  std::vector<std::string> addresses;
  std::string failure;  // the first query that failed (not counting NODATA)
  std::string absent;   // why a query had no addresses (NXDOMAIN, NODATA)
};

std::unique_ptr<DnsResolver> DnsResolver::create(EventLoop& loop, const std::string& nameserver,
                                                 uint32_t timeout_ms, std::string* error) {
  // Without DISABLE_WHEN_INACTIVE the resolver's socket would keep a loop with nothing else to do
  // running; INITIALIZE_NAMESERVERS reads resolv.conf (nameservers, search, options).
  int flags = EVDNS_BASE_DISABLE_WHEN_INACTIVE;
  if (nameserver.empty()) {
    flags |= EVDNS_BASE_INITIALIZE_NAMESERVERS;
  }
  evdns_base* base = evdns_base_new(loop.raw(), flags);
  if (base == nullptr) {
    *error = nameserver.empty() ? "cannot read the nameservers of /etc/resolv.conf"
                                : "cannot create a DNS resolver";
    return nullptr;
  }
  if (!nameserver.empty() && evdns_base_nameserver_ip_add(base, nameserver.c_str()) != 0) {
    evdns_base_free(base, 0);
    *error = "cannot use nameserver '" + nameserver + "'";
    return nullptr;
  }
  // After resolv.conf, so that its `options timeout:` (seconds) do not stretch a resolution
  // past the interval it is repeated at.
  char timeout[32];
  snprintf(timeout, sizeof(timeout), "%.3f", timeout_ms / 1000.0);
  evdns_base_set_option(base, "timeout:", timeout);
  evdns_base_set_option(base, "attempts:", "2");
  return std::unique_ptr<DnsResolver>(new DnsResolver(base));
}

DnsResolver::~DnsResolver() {
  if (query_ != nullptr) {
    query_->owner = nullptr;
  }
  evdns_base_free(base_, /*fail_requests=*/1);
}

bool DnsResolver::resolve(const std::string& name, Callback done) {
  if (query_ != nullptr) {
    return false;
  }
  auto* q = new Query;
  q->owner = this;
  q->done = std::move(done);
  query_ = q;
  if (evdns_base_resolve_ipv4(base_, name.c_str(), 0, &DnsResolver::onReply, q) == nullptr) {
    q->failure = "cannot start the A query";
    --q->left;
  }
  if (evdns_base_resolve_ipv6(base_, name.c_str(), 0, &DnsResolver::onReply, q) == nullptr) {
    q->failure = q->failure.empty() ? "cannot start the AAAA query" : q->failure;
    --q->left;
  }
  if (q->left == 0) {  // neither started (out of memory): nothing to wait for
    query_ = nullptr;
    delete q;
    return false;
  }
  return true;
}

void DnsResolver::onReply(int result, char type, int count, int, void* addresses, void* arg) {
  auto* q = static_cast<Query*>(arg);
  if (result == DNS_ERR_NONE && count > 0) {
    char text[INET6_ADDRSTRLEN];
    for (int i = 0; i < count; ++i) {
      const void* one = type == DNS_IPv4_A
                            ? static_cast<const void*>(static_cast<const uint32_t*>(addresses) + i)
                            : static_cast<const void*>(static_cast<const in6_addr*>(addresses) + i);
      if (inet_ntop(type == DNS_IPv4_A ? AF_INET : AF_INET6, one, text, sizeof(text)) != nullptr) {
        q->addresses.emplace_back(text);
      }
    }
  } else if (result == DNS_ERR_NONE || result == DNS_ERR_NODATA) {
    q->absent = "no address records (NODATA)";
  } else if (result == DNS_ERR_NOTEXIST) {
    q->absent = "no such name (NXDOMAIN)";
  } else if (q->failure.empty()) {
    q->failure = evdns_err_to_string(result);
  }
  if (--q->left > 0) {
    return;
  }
  DnsResolver* owner = q->owner;
  if (owner == nullptr) {
    delete q;  // the resolver went first: nobody to tell
    return;
  }
  owner->finish(q);
}

void DnsResolver::finish(Query* q) {
  query_ = nullptr;
  DnsAnswer answer;
  std::sort(q->addresses.begin(), q->addresses.end());
  q->addresses.erase(std::unique(q->addresses.begin(), q->addresses.end()), q->addresses.end());
  if (!q->failure.empty()) {
    answer.error = q->failure;
  } else if (q->addresses.empty()) {
    answer.error = q->absent.empty() ? "no addresses" : q->absent;
  } else {
    answer.ok = true;
    answer.addresses = std::move(q->addresses);
  }
  Callback done = std::move(q->done);
  delete q;
  done(std::move(answer));  // last: it may destroy this resolver
}

}  // namespace mcring::net
