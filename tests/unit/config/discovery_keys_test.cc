// servers_dns and the dns_ keys: what they set, and the errors that keep them consistent.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_diff.h"

namespace mcring::config {
namespace {

std::vector<std::string> errorsOf(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "t.yml");
  std::vector<std::string> out;
  for (const ConfigError& e : r.errors) {
    out.push_back(e.toString());
  }
  return out;
}

TEST_CASE("servers_dns replaces servers; the dns_ keys set their fields") {
  LoadResult r = loadConfigString(
      "p:\n  listen: 127.0.0.1:22122\n  servers_dns: memcached.cache.svc.cluster.local:11211\n"
      "  dns_resolver: 10.96.0.10\n  dns_interval: 250\n  dns_remove_after: 5\n",
      "t.yml");
  REQUIRE(r.ok());
  const PoolConfig& p = r.config->pools.at(0);
  REQUIRE(p.discovered());
  CHECK(p.servers.empty());
  CHECK(p.servers_dns->host == "memcached.cache.svc.cluster.local");
  CHECK(p.servers_dns->port == 11211);
  CHECK(p.dns_resolver->toString() == "10.96.0.10:53");
  CHECK(p.dns_interval_ms == 250u);
  CHECK(p.dns_remove_after == 5u);

  LoadResult v6 = loadConfigString(
      "p:\n  listen: 127.0.0.1:22122\n  servers_dns: mc.test:11211\n  dns_resolver: '[::1]:5353'\n",
      "t.yml");
  REQUIRE(v6.ok());
  CHECK(v6.config->pools.at(0).dns_resolver->toString() == "[::1]:5353");
  CHECK(v6.config->pools.at(0).dns_interval_ms == 5000u);
  CHECK(v6.config->pools.at(0).dns_remove_after == 3u);
}

TEST_CASE("servers_srv sets its field; exclusive with servers and servers_dns") {
  LoadResult r = loadConfigString(
      "p:\n  listen: 127.0.0.1:22122\n  servers_srv: _memcache._tcp.mc.example.com\n"
      "  dns_interval: 300\n",
      "t.yml");
  REQUIRE(r.ok());
  CHECK(r.config->pools.at(0).discovered());
  CHECK(r.config->pools.at(0).servers_srv == "_memcache._tcp.mc.example.com");
  CHECK_FALSE(r.config->pools.at(0).servers_dns.has_value());
  CHECK(
      errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:1\n"
               "  servers_srv: _memcache._tcp.mc.test\n") ==
      std::vector<std::string>{"t.yml:4:3: pool 'p': 'servers_srv' and 'servers_dns' (line 3) are "
                               "exclusive: choose one"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_srv: _memcache._tcp.mc.test\n"
                 "  servers: [127.0.0.1:2:1]\n") ==
        std::vector<std::string>{"t.yml:4:3: pool 'p': 'servers' and 'servers_srv' (line 3) are "
                                 "exclusive: a discovered pool's servers are its DNS answer"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_srv: mc.test:11211\n") ==
        std::vector<std::string>{"t.yml:3:16: pool 'p': servers_srv: expected an SRV name such as "
                                 "'_memcache._tcp.example.com', got 'mc.test:11211'"});
}

TEST_CASE("servers_dns: errors at their line and column") {
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:11211\n"
                 "  servers: [127.0.0.1:2:1]\n") ==
        std::vector<std::string>{"t.yml:4:3: pool 'p': 'servers' and 'servers_dns' (line 3) are "
                                 "exclusive: a discovered pool's servers are its DNS answer"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test\n") ==
        std::vector<std::string>{"t.yml:3:16: pool 'p': servers_dns: expected 'name:port' (the "
                                 "servers' port), got 'mc.test'"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: 10.0.0.1:11211\n") ==
        std::vector<std::string>{"t.yml:3:16: pool 'p': servers_dns: '10.0.0.1' is an address, "
                                 "not a DNS name: list it under 'servers' as '10.0.0.1:11211:1'"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:0\n") ==
        std::vector<std::string>{
            "t.yml:3:16: pool 'p': servers_dns: port 0 is out of range 1..65535"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:1\n"
                 "  dns_resolver: dns.example:53\n") ==
        std::vector<std::string>{"t.yml:4:17: pool 'p': dns_resolver: the resolver must be an IP "
                                 "address ('127.0.0.1:53', '[::1]:53'), got 'dns.example'"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:1\n  dns_interval: 50\n") ==
        std::vector<std::string>{
            "t.yml:4:17: pool 'p': dns_interval: 50 is out of range 100..2147483647"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:1\n  dns_remove_after: 0\n") ==
        std::vector<std::string>{
            "t.yml:4:21: pool 'p': dns_remove_after: 0 is out of range 1..1000"});
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  dns_interval: 200\n  servers: [127.0.0.1:2:1]\n") ==
        std::vector<std::string>{
            "t.yml:3:3: pool 'p': 'dns_interval' tunes discovery and needs 'servers_dns' or "
            "'servers_srv'"});
  // Neither: still the missing `servers` error.
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n") ==
        std::vector<std::string>{"t.yml:1:1: pool 'p': missing required key 'servers'"});
}

TEST_CASE("config/examples/discovery.yml loads and sets every discovery key") {
  LoadResult r = loadConfigFile("config/examples/discovery.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.ok());
  const PoolConfig& p = r.config->pools.at(0);
  CHECK(p.discovered());
  CHECK(p.dns_resolver.has_value());
  CHECK(p.dns_interval_ms != PoolConfig{}.dns_interval_ms);
  CHECK(p.dns_remove_after != PoolConfig{}.dns_remove_after);
}

TEST_CASE("config diff: the discovery keys") {
  auto load = [](const std::string& extra) {
    LoadResult r =
        loadConfigString("p:\n  listen: 127.0.0.1:1\n  servers_dns: mc.test:11211\n" + extra);
    REQUIRE(r.ok());
    return *r.config;
  };
  ConfigDiff d = diffConfigs(load(""), load("  dns_interval: 200\n  dns_resolver: 127.0.0.1\n"));
  REQUIRE(d.pools_changed.size() == 1);
  const auto& k = d.pools_changed[0].keys_changed;
  CHECK(std::find(k.begin(), k.end(), "dns_interval 5000->200") != k.end());
  CHECK(std::find(k.begin(), k.end(), "dns_resolver none->127.0.0.1:53") != k.end());
}

}  // namespace
}  // namespace mcring::config
