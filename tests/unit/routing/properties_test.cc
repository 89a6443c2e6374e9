// Properties every distribution must have: minimal movement, weights, ownership, build errors.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {
namespace {

constexpr int kKeys = 60000;

std::vector<std::string> makeKeys(int n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (int i = 0; i < n; ++i) {
    keys.push_back("user:" + std::to_string(i * 7919) + ":profile");
  }
  return keys;
}

const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = makeKeys(kKeys);
  return k;
}

std::vector<ServerSpec> makeServers(int n, uint32_t weight = 1) {
  std::vector<ServerSpec> servers;
  for (int i = 0; i < n; ++i) {
    servers.push_back({"10.0.0." + std::to_string(i + 1), 11211, weight, ""});
  }
  return servers;
}

RouterOptions optionsFor(Distribution d) {
  RouterOptions o;
  o.distribution = d;
  o.hash = HashFunction::Xxh3;  // isolate the distribution from key-hash artifacts
  return o;
}

std::unique_ptr<const Router> mustBuild(const std::vector<ServerSpec>& servers,
                                        const RouterOptions& o) {
  std::string error;
  auto r = Router::build(servers, o, &error);
  REQUIRE_MESSAGE(r != nullptr, error);
  return r;
}

// Host of the server each key routes to.
std::vector<std::string> placement(const Router& r, const std::vector<ServerSpec>& servers) {
  std::vector<std::string> out;
  out.reserve(keys().size());
  for (const auto& k : keys()) {
    out.push_back(servers[r.route(k)].host);
  }
  return out;
}

const Distribution kConsistent[] = {Distribution::Ketama, Distribution::Jump,
                                    Distribution::Rendezvous, Distribution::Maglev};
const Distribution kHashed[] = {Distribution::Ketama, Distribution::Modula, Distribution::Jump,
                                Distribution::Rendezvous, Distribution::Maglev};

TEST_CASE("adding one server to N moves about 1/(N+1) of keys, all to the new server") {
  const int n = 10;
  const auto before = makeServers(n);
  const auto after = makeServers(n + 1);
  for (Distribution d : kConsistent) {
    CAPTURE(distributionName(d));
    const auto o = optionsFor(d);
    const auto a = placement(*mustBuild(before, o), before);
    const auto b = placement(*mustBuild(after, o), after);
    int moved = 0;
    int moved_elsewhere = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) {
        ++moved;
        moved_elsewhere += b[i] != after.back().host;
      }
    }
    const double fraction = static_cast<double>(moved) / kKeys;
    MESSAGE(distributionName(d) << " 10->11 moved " << fraction << " (theory 1/11 = 0.0909)");
    CHECK(fraction > 0.6 / (n + 1));
    CHECK(fraction < 1.5 / (n + 1));
    if (d == Distribution::Maglev) {
      // Maglev trades a little extra disruption for balance (paper, section 5.3).
      CHECK(moved_elsewhere < moved / 5);
    } else {
      CHECK(moved_elsewhere == 0);
    }
  }
}

TEST_CASE("adding one server to N moves about N/(N+1) of keys under modula") {
  const int n = 10;
  const auto before = makeServers(n);
  const auto after = makeServers(n + 1);
  const auto o = optionsFor(Distribution::Modula);
  const auto a = placement(*mustBuild(before, o), before);
  const auto b = placement(*mustBuild(after, o), after);
  int moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    moved += a[i] != b[i];
  }
  const double fraction = static_cast<double>(moved) / kKeys;
  MESSAGE("modula 10->11 moved " << fraction << " (theory 10/11 = 0.909)");
  CHECK(fraction == doctest::Approx(10.0 / 11.0).epsilon(0.03));
}

TEST_CASE("removing a server moves only its own keys (ketama, rendezvous)") {
  const auto before = makeServers(10);
  auto after = before;
  after.erase(after.begin() + 3);
  const std::string gone = before[3].host;
  for (Distribution d : {Distribution::Ketama, Distribution::Rendezvous}) {
    for (KetamaCompat k : {KetamaCompat::Twemproxy, KetamaCompat::Libmemcached,
                           KetamaCompat::Spymemcached, KetamaCompat::Libketama}) {
      if (d != Distribution::Ketama && k != KetamaCompat::Twemproxy) {
        continue;
      }
      CAPTURE(distributionName(d));
      CAPTURE(ketamaCompatName(k));
      auto o = optionsFor(d);
      o.ketama_compat = k;
      const auto a = placement(*mustBuild(before, o), before);
      const auto b = placement(*mustBuild(after, o), after);
      int moved_from_gone = 0;
      int moved_others = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == gone) {
          ++moved_from_gone;
        } else {
          moved_others += a[i] != b[i];
        }
      }
      CHECK(moved_from_gone > 0);
      CHECK(moved_others == 0);
    }
  }
}

TEST_CASE("weights give proportional shares") {
  std::vector<ServerSpec> servers = makeServers(4);
  for (size_t i = 0; i < servers.size(); ++i) {
    servers[i].weight = static_cast<uint32_t>(i + 1);  // 1:2:3:4
  }
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Random,
                         Distribution::Rendezvous, Distribution::Maglev}) {
    CAPTURE(distributionName(d));
    const auto r = mustBuild(servers, optionsFor(d));
    std::vector<int> count(servers.size(), 0);
    for (const auto& k : keys()) {
      ++count[r->route(k)];
    }
    for (size_t i = 0; i < servers.size(); ++i) {
      const double share = static_cast<double>(count[i]) / kKeys;
      const double expected = (i + 1) / 10.0;
      CAPTURE(i);
      // Ketama's 160-point-per-unit ring is the coarsest; 15% relative covers it.
      CHECK(share == doctest::Approx(expected).epsilon(0.15));
    }
  }
}

TEST_CASE("ownership sums to 1 and matches sampled routing") {
  std::vector<ServerSpec> servers = makeServers(7);
  servers[2].weight = 3;
  servers[5].weight = 2;
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Random,
                         Distribution::Jump, Distribution::Rendezvous, Distribution::Maglev}) {
    for (bool weighted : {false, true}) {
      if (d == Distribution::Jump && weighted) {
        continue;
      }
      CAPTURE(distributionName(d));
      CAPTURE(weighted);
      const auto& s = weighted ? servers : makeServers(7);
      const auto r = mustBuild(s, optionsFor(d));
      const auto own = r->ownership();
      REQUIRE(own.size() == s.size());
      CHECK(std::accumulate(own.begin(), own.end(), 0.0) == doctest::Approx(1.0).epsilon(1e-12));
      std::vector<int> count(s.size(), 0);
      for (const auto& k : keys()) {
        ++count[r->route(k)];
      }
      for (size_t i = 0; i < s.size(); ++i) {
        CAPTURE(i);
        // 60k samples: one share's standard error is < 0.002.
        CHECK(std::abs(static_cast<double>(count[i]) / kKeys - own[i]) < 0.01);
      }
    }
  }
}

TEST_CASE("modula and ketama ownership are exact over the 2^32 hash space") {
  // 3 slots: 2^32 = 3 * 1431655765 + 1, so slot 0 gets one extra value.
  const auto servers = makeServers(3);
  const auto r = mustBuild(servers, optionsFor(Distribution::Modula));
  const auto own = r->ownership();
  CHECK(own[0] * 4294967296.0 == 1431655766.0);
  CHECK(own[1] * 4294967296.0 == 1431655765.0);
  CHECK(own[2] * 4294967296.0 == 1431655765.0);
}

TEST_CASE("keys sharing a hash tag go to the same server") {
  for (Distribution d : kHashed) {
    auto o = optionsFor(d);
    o.hash_tag = "{}";
    const auto servers = makeServers(9);
    const auto r = mustBuild(servers, o);
    const uint32_t home = r->route("{user42}");
    for (int i = 0; i < 50; ++i) {
      CHECK(r->route("item:" + std::to_string(i) + ":{user42}") == home);
    }
    CHECK(r->hashOf("a{user42}b") == hashKey(HashFunction::Xxh3, "user42"));
  }
}

TEST_CASE("random spreads requests over every server") {
  const auto servers = makeServers(5);
  const auto r = mustBuild(servers, optionsFor(Distribution::Random));
  std::vector<int> count(servers.size(), 0);
  for (int i = 0; i < 50000; ++i) {
    ++count[r->route("same-key")];
  }
  for (int c : count) {
    CHECK(c == doctest::Approx(10000).epsilon(0.1));
  }
}

TEST_CASE("build errors are reported, never silently ignored") {
  std::string error;
  auto servers = makeServers(4);
  servers[1].weight = 2;
  CHECK(Router::build(servers, optionsFor(Distribution::Jump), &error) == nullptr);
  CHECK(error.find("weight") != std::string::npos);

  auto maglev = optionsFor(Distribution::Maglev);
  maglev.maglev_table_size = 65536;  // not prime
  CHECK(Router::build(makeServers(4), maglev, &error) == nullptr);
  maglev.maglev_table_size = 3;  // prime, but not larger than the server count
  CHECK(Router::build(makeServers(4), maglev, &error) == nullptr);
  maglev.maglev_table_size = 5;
  CHECK(Router::build(makeServers(4), maglev, &error) != nullptr);

  CHECK(Router::build({}, RouterOptions{}, &error) == nullptr);
  auto zero = makeServers(2);
  zero[0].weight = 0;
  CHECK(Router::build(zero, RouterOptions{}, &error) == nullptr);
  auto tag = RouterOptions{};
  tag.hash_tag = "{";
  CHECK(Router::build(makeServers(2), tag, &error) == nullptr);
  auto dup = makeServers(2);
  dup.push_back(dup[0]);
  CHECK(Router::build(dup, RouterOptions{}, &error) == nullptr);
}

TEST_CASE("maglev fills its table in proportion to weights") {
  std::vector<ServerSpec> servers = makeServers(3);
  servers[0].weight = 1;
  servers[1].weight = 2;
  servers[2].weight = 5;
  auto o = optionsFor(Distribution::Maglev);
  o.maglev_table_size = 65537;
  const auto own = mustBuild(servers, o)->ownership();
  CHECK(own[0] == doctest::Approx(1.0 / 8).epsilon(0.01));
  CHECK(own[1] == doctest::Approx(2.0 / 8).epsilon(0.01));
  CHECK(own[2] == doctest::Approx(5.0 / 8).epsilon(0.01));
}

TEST_CASE("an empty key hashes to 0, as in twemproxy") {
  const auto r = mustBuild(makeServers(3), RouterOptions{});
  CHECK(r->hashOf("") == 0);
  CHECK(r->hashOf("{}") == hashKey(HashFunction::Fnv1a_64, "{}"));
}

TEST_CASE("every distribution and ketama flavour has a config name that parses back") {
  for (int i = 0; i <= static_cast<int>(Distribution::Maglev); ++i) {
    const auto d = static_cast<Distribution>(i);
    CHECK(parseDistribution(distributionName(d)) == d);
  }
  for (int i = 0; i <= static_cast<int>(KetamaCompat::Libketama); ++i) {
    const auto k = static_cast<KetamaCompat>(i);
    CHECK(parseKetamaCompat(ketamaCompatName(k)) == k);
  }
}

}  // namespace
}  // namespace mcring::routing
