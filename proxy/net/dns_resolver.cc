// DnsResolver over evdns: one evdns_base per resolver, an A and an AAAA query per name.
#include "proxy/net/dns_resolver.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "proxy/net/event_loop.h"

namespace mcring::net {

// One resolution: every evdns callback points at a Part of it; the last to come back frees it.
// `owner` is cleared when the resolver goes first (evdns_base_free fails what is in flight, and
// those callbacks may still run afterwards).
struct DnsResolver::Query {
  DnsResolver* owner = nullptr;
  Callback done;
  SrvCallback srv_done;
  int left = 0;
  std::vector<std::string> addresses;  // a plain resolution's
  struct Target {
    SrvRecord record;
    std::vector<std::string> addresses;
  };
  std::vector<Target> targets;  // an SRV resolution's
  std::string failure;          // the first query that failed (not counting NODATA)
  std::string absent;           // why a query had no addresses (NXDOMAIN, NODATA)
};

struct DnsResolver::Part {
  Query* query;
  int index;  // into targets; -1 for a plain resolution
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
  sockaddr_storage ss{};
  int length = sizeof(ss);
  bool usable = nameserver.empty()
                    ? evdns_base_get_nameserver_addr(base, 0, reinterpret_cast<sockaddr*>(&ss),
                                                     sizeof(ss)) > 0
                    : evutil_parse_sockaddr_port(nameserver.c_str(),
                                                 reinterpret_cast<sockaddr*>(&ss), &length) == 0 &&
                          evdns_base_nameserver_ip_add(base, nameserver.c_str()) == 0;
  if (!usable) {
    evdns_base_free(base, 0);
    *error = nameserver.empty() ? "no nameserver in /etc/resolv.conf"
                                : "cannot use nameserver '" + nameserver + "'";
    return nullptr;
  }
  if (nameserver.empty()) {
    length = ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  }
  // After resolv.conf, so that its `options timeout:` (seconds) do not stretch a resolution
  // past the interval it is repeated at.
  char timeout[32];
  snprintf(timeout, sizeof(timeout), "%.3f", timeout_ms / 1000.0);
  evdns_base_set_option(base, "timeout:", timeout);
  evdns_base_set_option(base, "attempts:", "2");
  std::unique_ptr<DnsResolver> r(new DnsResolver(loop, base, timeout_ms));
  const auto* bytes = reinterpret_cast<const uint8_t*>(&ss);
  r->nameserver_.assign(bytes, bytes + length);
  return r;
}

DnsResolver::~DnsResolver() {
  srv_.reset();  // an SRV query still out calls nothing now
  if (query_ != nullptr && query_->left == 0) {
    delete query_;  // no evdns query refers to it (its SRV query was still out)
  } else if (query_ != nullptr) {
    query_->owner = nullptr;
  }
  evdns_base_free(base_, /*fail_requests=*/1);
}

void DnsResolver::ask(Query* q, const std::string& name, int index) {
  q->left += 2;
  if (evdns_base_resolve_ipv4(base_, name.c_str(), 0, &DnsResolver::onReply, new Part{q, index}) ==
      nullptr) {
    q->failure = q->failure.empty() ? "cannot start the A query" : q->failure;
    --q->left;  // (the Part leaks: only when evdns is out of memory)
  }
  if (evdns_base_resolve_ipv6(base_, name.c_str(), 0, &DnsResolver::onReply, new Part{q, index}) ==
      nullptr) {
    q->failure = q->failure.empty() ? "cannot start the AAAA query" : q->failure;
    --q->left;
  }
}

bool DnsResolver::resolve(const std::string& name, Callback done) {
  if (query_ != nullptr) {
    return false;
  }
  auto* q = new Query;
  q->owner = this;
  q->done = std::move(done);
  query_ = q;
  ask(q, name, -1);
  if (q->left == 0) {  // neither started (out of memory): nothing to wait for
    query_ = nullptr;
    delete q;
    return false;
  }
  return true;
}

bool DnsResolver::resolveSrv(const std::string& name, SrvCallback done) {
  if (query_ != nullptr) {
    return false;
  }
  auto* q = new Query;
  q->owner = this;
  q->srv_done = std::move(done);
  query_ = q;
  srv_ = std::make_unique<SrvQuery>(loop_, nameserver_.data(), static_cast<int>(nameserver_.size()),
                                    timeout_ms_);
  srv_->start(name, [this](bool ok, std::vector<SrvRecord> records, std::string error) {
    onSrv(ok, std::move(records), std::move(error));
  });
  return true;
}

void DnsResolver::onSrv(bool ok, std::vector<SrvRecord> records, std::string error) {
  Query* q = query_;
  if (!ok) {
    q->failure = std::move(error);
    finish(q);
    return;
  }
  for (SrvRecord& r : records) {
    q->targets.push_back({std::move(r), {}});
  }
  for (size_t i = 0; i < q->targets.size(); ++i) {
    ask(q, q->targets[i].record.target, static_cast<int>(i));
  }
  if (q->left == 0) {
    finish(q);
  }
}

void DnsResolver::onReply(int result, char type, int count, int, void* addresses, void* arg) {
  auto* part = static_cast<Part*>(arg);
  Query* q = part->query;
  const int index = part->index;
  delete part;
  std::vector<std::string>& into = index < 0 ? q->addresses : q->targets[index].addresses;
  if (result == DNS_ERR_NONE && count > 0) {
    char text[INET6_ADDRSTRLEN];
    for (int i = 0; i < count; ++i) {
      const void* one = type == DNS_IPv4_A
                            ? static_cast<const void*>(static_cast<const uint32_t*>(addresses) + i)
                            : static_cast<const void*>(static_cast<const in6_addr*>(addresses) + i);
      if (inet_ntop(type == DNS_IPv4_A ? AF_INET : AF_INET6, one, text, sizeof(text)) != nullptr) {
        into.emplace_back(text);
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
  if (q->srv_done) {
    SrvAnswer answer;
    for (const Query::Target& t : q->targets) {
      if (t.addresses.empty() && q->failure.empty()) {
        q->failure = "SRV target " + t.record.target + " has no address";
      }
      for (const std::string& a : t.addresses) {
        answer.servers.push_back({a, t.record.port, t.record.weight, t.record.target});
      }
    }
    auto key = [](const SrvServer& s) { return std::tie(s.address, s.port); };
    std::stable_sort(answer.servers.begin(), answer.servers.end(),
                     [&](const SrvServer& a, const SrvServer& b) { return key(a) < key(b); });
    answer.servers.erase(
        std::unique(answer.servers.begin(), answer.servers.end(),
                    [&](const SrvServer& a, const SrvServer& b) { return key(a) == key(b); }),
        answer.servers.end());
    answer.ok = q->failure.empty() && !answer.servers.empty();
    answer.error = answer.ok ? "" : q->failure.empty() ? "no addresses" : q->failure;
    if (!answer.ok) {
      answer.servers.clear();
    }
    SrvCallback done = std::move(q->srv_done);
    delete q;
    done(std::move(answer));  // last: it may destroy this resolver
    return;
  }
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
