// Discovery: resolves each discovered pool's name (servers_dns, servers_srv) every dns_interval on
// the main thread, and keeps what its answers make of the pool's servers (DiscoveredServers).
//
// The Proxy turns a changed list into a reload of the config in force with that list (source
// `dns`): the same validation, diff, membership event and warm-up as a file reload. A pool is
// known by its name and discovery keys: a reload that changes them starts a new resolution, and
// the pool's servers come from that one once it has answered.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/control/discovered_servers.h"
#include "proxy/net/dns_resolver.h"
#include "proxy/net/event_loop.h"

namespace mcring::core {

class Discovery {
 public:
  // After every answer to a pool's name, good or not: `changed` when its server list changed
  // (including its first good answer).
  using Handler = std::function<void(const std::string& pool, bool changed)>;
  Discovery(net::EventLoop& loop, Handler handler) : loop_(loop), handler_(std::move(handler)) {}

  // Starts resolving the discovered pools of `config` that are not known yet; the first query
  // goes out at once.
  void add(const config::Config& config);
  // Forgets the pools (and discovery keys) `config`, now in force, no longer has.
  void retain(const config::Config& config);
  // Sets each discovered pool's servers to its list. A pool with no good answer yet is an
  // error (with its last failure, if it had one), and the config is not usable.
  bool fill(config::Config& config, std::vector<std::string>* errors) const;
  // Pools of add() with no answer at all yet (startup waits for them).
  size_t unanswered() const;

 private:
  struct Pool {
    std::string name;
    std::string what;                         // "servers_dns name:port" or "servers_srv name"
    config::Address target;                   // servers_dns
    std::string srv;                          // servers_srv
    std::map<std::string, uint32_t> weights;  // SRV weights by identity (else 1)
    std::unique_ptr<net::DnsResolver> resolver;
    std::unique_ptr<net::Timer> timer;
    DiscoveredServers servers;
    bool answered = false;  // good or not
    bool failing = false;   // the last answer failed (logged once per run of failures)
    uint64_t failures = 0;
    std::string last_error;
    explicit Pool(uint32_t remove_after) : servers(remove_after) {}
  };
  static std::string keyOf(const config::PoolConfig& pool);
  void resolve(const std::string& key);
  void onAnswer(const std::string& key, net::DnsAnswer answer);
  void onSrvAnswer(const std::string& key, net::SrvAnswer answer);
  void onResult(const std::string& key, bool ok, std::vector<std::string> identities,
                std::map<std::string, uint32_t> weights, const std::string& error);
  void notify(const std::string& pool, bool changed);

  net::EventLoop& loop_;
  Handler handler_;
  std::map<std::string, std::unique_ptr<Pool>> pools_;  // by keyOf
};

}  // namespace mcring::core
