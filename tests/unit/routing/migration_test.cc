// Migration plans: exact where claimed, consistent with routing real keys, matched by identity.
#include "proxy/routing/migration.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {
namespace {

constexpr int kKeys = 1000000;
constexpr double kPp = 0.002;  // 0.2 percentage points

// Random keys of mixed length and alphabet, fixed seed.
const std::vector<std::string>& randomKeys() {
  static const std::vector<std::string> keys = [] {
    std::mt19937_64 rng(20240601);
    std::uniform_int_distribution<int> length(6, 40);
    std::uniform_int_distribution<int> byte(33, 126);
    std::vector<std::string> k;
    k.reserve(kKeys);
    for (int i = 0; i < kKeys; ++i) {
      std::string s(static_cast<size_t>(length(rng)), ' ');
      for (char& c : s) {
        c = static_cast<char>(byte(rng));
      }
      k.push_back(std::move(s));
    }
    return k;
  }();
  return keys;
}

std::vector<ServerSpec> makeServers(int n, uint32_t weight = 1) {
  std::vector<ServerSpec> servers;
  for (int i = 0; i < n; ++i) {
    servers.push_back({"10.0.0." + std::to_string(i + 1), 11211, weight, ""});
  }
  return servers;
}

std::vector<std::string> identities(const std::vector<ServerSpec>& servers) {
  std::vector<std::string> ids;
  for (const auto& s : servers) {
    ids.push_back(s.host + ":" + std::to_string(s.port));
  }
  return ids;
}

std::unique_ptr<const Router> mustBuild(const std::vector<ServerSpec>& servers,
                                        const RouterOptions& o) {
  std::string error;
  auto r = Router::build(servers, o, &error);
  REQUIRE_MESSAGE(r != nullptr, error);
  return r;
}

RouterOptions optionsFor(Distribution d, HashFunction h = HashFunction::Fnv1a_64) {
  RouterOptions o;
  o.distribution = d;
  o.hash = h;
  return o;
}

struct Change {
  std::vector<ServerSpec> before;
  std::vector<ServerSpec> after;
};

MigrationPlan plan(const Change& c, const RouterOptions& o, const MigrationOptions& m = {}) {
  const auto a = mustBuild(c.before, o);
  const auto b = mustBuild(c.after, o);
  return planMigration(*a, identities(c.before), *b, identities(c.after), m);
}

double sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}

// Routes every random key through both routers (by key, as the proxy does) and checks the plan's
// ownership on both sides and its moved fraction against what the keys did.
void checkAgainstKeys(const Change& c, const RouterOptions& o, const MigrationPlan& p) {
  const auto a = mustBuild(c.before, o);
  const auto b = mustBuild(c.after, o);
  const auto ids_a = identities(c.before);
  const auto ids_b = identities(c.after);
  std::vector<double> own_a(ids_a.size(), 0);
  std::vector<double> own_b(ids_b.size(), 0);
  double moved = 0;
  const double unit = 1.0 / kKeys;
  for (const std::string& key : randomKeys()) {
    const uint32_t i = a->route(key);
    const uint32_t j = b->route(key);
    own_a[i] += unit;
    own_b[j] += unit;
    moved += ids_a[i] != ids_b[j] ? unit : 0;
  }
  for (size_t i = 0; i < own_a.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(p.ownership_before[i] - own_a[i]) < kPp);
  }
  for (size_t j = 0; j < own_b.size(); ++j) {
    CAPTURE(j);
    CHECK(std::abs(p.ownership_after[j] - own_b[j]) < kPp);
  }
  CHECK(std::abs(p.moved - moved) < kPp);
}

TEST_CASE("10 -> 11 servers: sums, methods, and agreement with 1M routed keys") {
  const Change grow{makeServers(10), makeServers(11)};
  const struct {
    Distribution d;
    MigrationMethod method;
  } cases[] = {
      {Distribution::Ketama, MigrationMethod::Exact},
      {Distribution::Modula, MigrationMethod::Exact},
      {Distribution::Maglev, MigrationMethod::Exact},
      {Distribution::Jump, MigrationMethod::Sampled},
      {Distribution::Rendezvous, MigrationMethod::Sampled},
  };
  for (const auto& tc : cases) {
    CAPTURE(distributionName(tc.d));
    const RouterOptions o = optionsFor(tc.d);
    const MigrationPlan p = plan(grow, o);
    CHECK(p.method == tc.method);
    CHECK(sum(p.ownership_before) == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(sum(p.ownership_after) == doctest::Approx(1.0).epsilon(1e-12));
    double cells = 0;
    for (const MigrationCell& cell : p.cells()) {
      cells += cell.fraction;
    }
    CHECK(cells == doctest::Approx(1.0).epsilon(1e-12));
    checkAgainstKeys(grow, o, p);
  }
}

TEST_CASE("ketama 10 -> 11 moves about 1/11, all to the new server; modula about 10/11") {
  const Change grow{makeServers(10), makeServers(11)};
  const MigrationPlan ketama = plan(grow, optionsFor(Distribution::Ketama));
  CHECK(ketama.method == MigrationMethod::Exact);
  // The new server's exact ring share is what moves, and only to it.
  CHECK(ketama.moved == doctest::Approx(ketama.ownership_after[10]).epsilon(1e-12));
  CHECK(std::abs(ketama.moved - 1.0 / 11) < 0.02);
  for (const MigrationCell& cell : ketama.cells()) {
    if (cell.moved) {
      CHECK(cell.to == 10);
    }
  }
  for (size_t i = 0; i < 10; ++i) {
    CHECK(ketama.movedIn(i) == 0.0);
  }

  const MigrationPlan modula = plan(grow, optionsFor(Distribution::Modula));
  CHECK(modula.method == MigrationMethod::Exact);
  // A hash stays only when h % 10 == h % 11 (1 residue in 11), up to the 2^32 edge.
  CHECK(modula.moved == doctest::Approx(10.0 / 11).epsilon(1e-6));
}

TEST_CASE("exact ketama ownership equals the ring's own exact ownership") {
  for (KetamaCompat compat : {KetamaCompat::Twemproxy, KetamaCompat::Libmemcached,
                              KetamaCompat::Spymemcached, KetamaCompat::Libketama}) {
    CAPTURE(ketamaCompatName(compat));
    RouterOptions o = optionsFor(Distribution::Ketama, HashFunction::Md5);
    o.ketama_compat = compat;
    auto servers = makeServers(7);
    servers[2].weight = 3;
    const Change c{servers, makeServers(5)};
    const MigrationPlan p = plan(c, o);
    REQUIRE(p.method == MigrationMethod::Exact);
    const auto a = mustBuild(c.before, o)->ownership();
    const auto b = mustBuild(c.after, o)->ownership();
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(p.ownership_before[i] == doctest::Approx(a[i]).epsilon(1e-12));
    }
    for (size_t j = 0; j < b.size(); ++j) {
      CHECK(p.ownership_after[j] == doctest::Approx(b[j]).epsilon(1e-12));
    }
  }
}

TEST_CASE("exact counting agrees with sampling the hash space") {
  auto weighted = makeServers(9);
  weighted[4].weight = 2;
  const Change c{makeServers(6), weighted};
  MigrationOptions sampled;
  sampled.exact = false;
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Maglev}) {
    CAPTURE(distributionName(d));
    const RouterOptions o = optionsFor(d);
    const MigrationPlan e = plan(c, o);
    const MigrationPlan s = plan(c, o, sampled);
    CHECK(e.method == MigrationMethod::Exact);
    CHECK(s.method == MigrationMethod::Sampled);
    CHECK(s.samples == (1U << 20));
    CHECK(std::abs(e.moved - s.moved) < 0.001);
    for (size_t i = 0; i < e.matrix.size(); ++i) {
      for (size_t j = 0; j < e.matrix[i].size(); ++j) {
        CHECK(std::abs(e.matrix[i][j] - s.matrix[i][j]) < 0.001);
      }
    }
  }
}

TEST_CASE("residue tables whose lcm is too large to walk are sampled") {
  RouterOptions o = optionsFor(Distribution::Maglev);
  MigrationOptions m;
  m.max_exact_residues = 1000;
  const MigrationPlan p = plan({makeServers(4), makeServers(5)}, o, m);
  CHECK(p.method == MigrationMethod::Sampled);
  CHECK(sum(p.ownership_after) == doctest::Approx(1.0));
}

TEST_CASE("servers are matched by identity, not position") {
  // Removing the 4th of 10: ketama moves exactly that server's share, nothing else.
  auto without = makeServers(10);
  without.erase(without.begin() + 3);
  const Change shrink{makeServers(10), without};
  const MigrationPlan ketama = plan(shrink, optionsFor(Distribution::Ketama));
  CHECK(ketama.moved == doctest::Approx(ketama.ownership_before[3]).epsilon(1e-12));
  CHECK(ketama.movedOut(3) == doctest::Approx(ketama.ownership_before[3]).epsilon(1e-12));
  // The same for rendezvous (seeded by identity), within sampling noise.
  const MigrationPlan hrw = plan(shrink, optionsFor(Distribution::Rendezvous));
  CHECK(std::abs(hrw.moved - 0.1) < 0.005);
  // Jump numbers buckets by position: removing from the middle renumbers the rest, which the
  // plan must show as far more than 1/10 moving.
  const MigrationPlan jump = plan(shrink, optionsFor(Distribution::Jump));
  CHECK(jump.moved > 0.3);
  checkAgainstKeys(shrink, optionsFor(Distribution::Jump), jump);

  // Reordering the same servers moves nothing where placement depends on names only.
  auto reversed = makeServers(10);
  std::reverse(reversed.begin(), reversed.end());
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Rendezvous}) {
    CAPTURE(distributionName(d));
    CHECK(plan({makeServers(10), reversed}, optionsFor(d)).moved == 0.0);
  }
}

TEST_CASE("a changed hash function or random routing makes old and new servers independent") {
  const Change same{makeServers(4), makeServers(4)};
  const auto a = mustBuild(same.before, optionsFor(Distribution::Ketama, HashFunction::Md5));
  const auto b = mustBuild(same.after, optionsFor(Distribution::Ketama, HashFunction::Fnv1a_64));
  const MigrationPlan p = planMigration(*a, identities(same.before), *b, identities(same.after));
  CHECK(p.method == MigrationMethod::Independent);
  double stay = 0;
  const auto oa = a->ownership();
  const auto ob = b->ownership();
  for (size_t i = 0; i < 4; ++i) {
    stay += oa[i] * ob[i];
  }
  CHECK(p.moved == doctest::Approx(1.0 - stay));
  CHECK(p.moved > 0.7);

  const MigrationPlan r = plan({makeServers(4), makeServers(5)}, optionsFor(Distribution::Random));
  CHECK(r.method == MigrationMethod::Independent);
  CHECK(r.moved == doctest::Approx(1.0 - 4 * (0.25 * 0.2)));
}

TEST_CASE("cells are the non-zero cells, largest first, flagged when moved") {
  const MigrationPlan p = plan({makeServers(4), makeServers(5)}, optionsFor(Distribution::Modula));
  const std::vector<MigrationCell> cells = p.cells();
  REQUIRE(!cells.empty());
  double moved = 0;
  for (size_t k = 0; k < cells.size(); ++k) {
    CHECK(cells[k].fraction > 0);
    if (k > 0) {
      CHECK(cells[k - 1].fraction >= cells[k].fraction);
    }
    CHECK(cells[k].moved == (p.before[cells[k].from] != p.after[cells[k].to]));
    moved += cells[k].moved ? cells[k].fraction : 0;
  }
  CHECK(moved == doctest::Approx(p.moved));
  CHECK(migrationMethodName(p.method) == "exact");
}

}  // namespace
}  // namespace mcring::routing
