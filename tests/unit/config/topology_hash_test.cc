// topologyHash: the same ring gives the same hash in every process; what moves keys changes it;
// what does not (listen, timeouts, options the distribution ignores, an order it ignores) does not.
#include "config/topology_hash.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/topology.h"
#include "proxy/routing/server_names.h"

namespace mcring::config {
namespace {

using routing::Distribution;
using routing::KetamaCompat;
using routing::RouterOptions;
using routing::ServerSpec;

std::vector<ServerSpec> threeServers() {
  return {{"10.0.0.1", 11211, 1, ""}, {"10.0.0.2", 11211, 1, ""}, {"10.0.0.3", 11212, 2, "c"}};
}

std::string hex(const std::vector<ServerSpec>& servers, const RouterOptions& options) {
  return topologyHashHex(topologyHash(servers, options));
}

// Which server (by host:port) each of 2,000 keys goes to: placement as a client sees it.
std::vector<std::string> placement(const std::vector<ServerSpec>& servers,
                                   const RouterOptions& options) {
  std::string err;
  auto router = routing::Router::build(servers, options, &err);
  REQUIRE_MESSAGE(router != nullptr, err);
  std::vector<std::string> out;
  for (int i = 0; i < 2000; ++i) {
    const ServerSpec& s = servers[router->route("key:" + std::to_string(i))];
    out.push_back(s.host + ":" + std::to_string(s.port));
  }
  return out;
}

std::string poolHash(const std::string& yaml, const std::string& pool = "alpha") {
  LoadResult r = loadConfigString(yaml);
  REQUIRE(r.ok());
  std::vector<std::string> errors;
  auto topo = Topology::build(*r.config, 1, &errors);
  REQUIRE(topo != nullptr);
  const PoolTopology* p = topo->findPool(pool);
  REQUIRE(p != nullptr);
  return p->topology_hash;
}

TEST_CASE("topology hash: fixed across runs and processes (a pinned value)") {
  // The encoding is versioned; this value changes only with it (and then every proxy of a
  // fleet must be upgraded before their hashes agree again, as docs/operations.md says).
  RouterOptions options;  // fnv1a_64, ketama (twemproxy), replicas 1
  CHECK(hex(threeServers(), options) == "2e6b267e534cfd15");
  CHECK(hex(threeServers(), options).size() == 16);
  CHECK(hex(threeServers(), options) == hex(threeServers(), options));
}

TEST_CASE("topology hash: every input that places keys changes it") {
  const RouterOptions base;
  const std::string h = hex(threeServers(), base);
  auto with = [&](auto change) {
    RouterOptions o = base;
    std::vector<ServerSpec> s = threeServers();
    change(o, s);
    return hex(s, o);
  };
  CHECK(with([](RouterOptions& o, auto&) { o.hash = routing::HashFunction::Md5; }) != h);
  CHECK(with([](RouterOptions& o, auto&) { o.hash_tag = "{}"; }) != h);
  CHECK(with([](RouterOptions& o, auto&) { o.distribution = Distribution::Rendezvous; }) != h);
  CHECK(with([](RouterOptions& o, auto&) { o.ketama_compat = KetamaCompat::Libketama; }) != h);
  CHECK(with([](RouterOptions& o, auto&) { o.replicas = 2; }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s[0].weight = 3; }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s[0].name = "a"; }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s[2].name = "d"; }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s[1].port = 11213; }) != h);
  // A named server moved to another address places the same hashes on another machine.
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s[2].host = "10.0.0.9"; }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) {
          s.push_back({"10.0.0.4", 11211, 1, ""});
        }) != h);
  CHECK(with([](auto&, std::vector<ServerSpec>& s) { s.pop_back(); }) != h);
}

TEST_CASE("topology hash: options the distribution ignores do not change it") {
  RouterOptions ketama;
  RouterOptions other_table = ketama;
  other_table.maglev_table_size = 131071;
  CHECK(hex(threeServers(), ketama) == hex(threeServers(), other_table));

  RouterOptions maglev;
  maglev.distribution = Distribution::Maglev;
  RouterOptions maglev_compat = maglev;
  maglev_compat.ketama_compat = KetamaCompat::Spymemcached;
  CHECK(hex(threeServers(), maglev) == hex(threeServers(), maglev_compat));
  RouterOptions maglev_table = maglev;
  maglev_table.maglev_table_size = 131071;
  CHECK(hex(threeServers(), maglev) != hex(threeServers(), maglev_table));
}

TEST_CASE("topology hash: reordering changes it exactly when the distribution reads the order") {
  std::vector<ServerSpec> servers;
  for (int i = 0; i < 8; ++i) {
    servers.push_back({"10.0.1." + std::to_string(i + 1), 11211, 1, ""});
  }
  std::vector<ServerSpec> reversed(servers.rbegin(), servers.rend());
  struct Case {
    Distribution d;
    KetamaCompat k;
    bool order_matters;
  };
  // twemproxy sorts servers by name before building ketama or modula; the others read the list
  // in config order (jump's buckets, maglev's table, and the winner of a tie).
  for (Case c : {Case{Distribution::Ketama, KetamaCompat::Twemproxy, false},
                 Case{Distribution::Modula, KetamaCompat::Twemproxy, false},
                 Case{Distribution::Ketama, KetamaCompat::Spymemcached, true},
                 Case{Distribution::Ketama, KetamaCompat::Libketama, true},
                 Case{Distribution::Jump, KetamaCompat::Twemproxy, true},
                 Case{Distribution::Maglev, KetamaCompat::Twemproxy, true},
                 Case{Distribution::Rendezvous, KetamaCompat::Twemproxy, true}}) {
    RouterOptions o;
    o.distribution = c.d;
    o.ketama_compat = c.k;
    CAPTURE(routing::distributionName(c.d));
    CAPTURE(routing::ketamaCompatName(c.k));
    const bool same_hash = hex(servers, o) == hex(reversed, o);
    CHECK(same_hash == !c.order_matters);
    if (same_hash) {
      // The hash promises the same placement: check it key by key.
      CHECK(placement(servers, o) == placement(reversed, o));
    }
  }
  // Where the order is read, it does move keys (jump and maglev at least).
  for (Distribution d : {Distribution::Jump, Distribution::Maglev}) {
    RouterOptions o;
    o.distribution = d;
    CHECK(placement(servers, o) != placement(reversed, o));
  }
}

TEST_CASE("topology hash: built into every pool with servers; listen and timeouts leave it") {
  const std::string servers = "  servers:\n    - 127.0.0.1:11211:1\n    - 127.0.0.1:11212:1\n";
  const std::string h = poolHash("alpha:\n  listen: 127.0.0.1:22122\n" + servers);
  CHECK(h.size() == 16);
  CHECK(poolHash("alpha:\n  listen: 127.0.0.1:22199\n  timeout: 250\n  server_retry_timeout: 5\n"
                 "  preconnect: true\n  hot_keys: false\n" +
                 servers) == h);
  CHECK(poolHash("alpha:\n  listen: 127.0.0.1:22122\n  distribution: jump\n" + servers) != h);
  CHECK(poolHash("alpha:\n  listen: 127.0.0.1:22122\n  servers:\n    - 127.0.0.1:11211:2\n"
                 "    - 127.0.0.1:11212:1\n") != h);
  // A listener with routes has no ring of its own: no hash.
  const std::string routed =
      "front:\n  listen: 127.0.0.1:22122\n  routes:\n    - default: back\n"
      "back:\n" +
      servers;
  CHECK(poolHash(routed, "front").empty());
  CHECK(poolHash(routed, "back").size() == 16);
}

}  // namespace
}  // namespace mcring::config
