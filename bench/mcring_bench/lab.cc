// The ring lab (`mcring-bench lab`): how keys spread over servers and move when servers change.
//
// Everything here is computed from mcring_routing alone (no sockets): the same code the proxy
// routes with. Keys are random printable strings of 10-40 bytes from --seed; the plain rings use
// md5 for points and keys (classic ketama), the Router-based rows use md5 as the key hash too, so
// the tables compare distributions, not hash functions.
#include "bench/mcring_bench/lab.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/mcring_bench/rng.h"
#include "proxy/routing/ketama_points.h"
#include "proxy/routing/ketama_ring.h"
#include "proxy/routing/migration.h"
#include "proxy/routing/router.h"

namespace mcring::bench {
namespace {

using routing::Distribution;
using routing::HashFunction;
using routing::KetamaRing;
using routing::Router;
using routing::RouterOptions;
using routing::ServerSpec;

constexpr char kUsage[] = R"(usage: mcring-bench lab [options]

Ring lab: prints markdown tables on how keys spread over servers and how many move when the
server list changes (ketama rings with N virtual nodes, mod N, jump, rendezvous, maglev).

options
  --keys N     random keys per experiment (default 100000)
  --trials N   random rings per cell of the imbalance table (default 200)
  --seed S     seed for keys and server names (default 1)
  --quick      smaller run (20000 keys, 20 trials, 200000 hot-key requests)
)";

struct LabOptions {
  uint64_t keys = 100000;
  uint64_t trials = 200;
  uint64_t seed = 1;
  uint64_t hot_requests = 1000000;
  bool quick = false;
};

// ---- inputs --------------------------------------------------------------------------------

std::vector<std::string> randomKeys(uint64_t n, Rng& rng) {
  std::vector<std::string> keys(n);
  for (auto& k : keys) {
    k.resize(10 + rng.below(31));
    for (auto& c : k) {
      c = static_cast<char>('!' + rng.below('~' - '!' + 1));
    }
  }
  return keys;
}

// n servers 10.0.0.1:11211, 10.0.0.2:11211, ... (the first k of a larger pool are the same k).
std::vector<ServerSpec> nodes(size_t n) {
  std::vector<ServerSpec> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(
        {"10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 11211, 1, ""});
  }
  return out;
}

// n servers with random addresses: a fresh ring layout per trial.
std::vector<ServerSpec> randomNodes(size_t n, Rng& rng) {
  std::vector<ServerSpec> out;
  while (out.size() < n) {
    ServerSpec s{"10." + std::to_string(rng.below(256)) + "." + std::to_string(rng.below(256)) +
                     "." + std::to_string(rng.below(256)),
                 static_cast<uint16_t>(11211 + rng.below(100)), 1, ""};
    const bool dup = std::any_of(out.begin(), out.end(), [&](const ServerSpec& o) {
      return o.host == s.host && o.port == s.port;
    });
    if (!dup) {
      out.push_back(s);
    }
  }
  return out;
}

std::vector<uint32_t> md5Hashes(const std::vector<std::string>& keys) {
  std::vector<uint32_t> h;
  h.reserve(keys.size());
  for (const auto& k : keys) {
    h.push_back(routing::hashKey(HashFunction::Md5, k));
  }
  return h;
}

// A plain consistent-hash ring: `vnodes` md5 points per node ("<host:port>-<i>").
KetamaRing plainRing(const std::vector<ServerSpec>& servers, uint32_t vnodes) {
  return KetamaRing::build(routing::plainRingPoints(servers, vnodes, HashFunction::Md5),
                           servers.size());
}

std::unique_ptr<const Router> router(const std::vector<ServerSpec>& servers, Distribution d,
                                     uint32_t replicas = 1) {
  RouterOptions o;
  o.distribution = d;
  o.hash = HashFunction::Md5;
  o.replicas = replicas;
  std::string error;
  auto r = Router::build(servers, o, &error);
  if (!r) {
    std::fprintf(stderr, "lab: cannot build %s: %s\n",
                 std::string(routing::distributionName(d)).c_str(), error.c_str());
    std::exit(1);
  }
  return r;
}

// Where each key goes, as node host names (stable across server lists).
template <typename RouteFn>
std::vector<std::string> placement(const std::vector<std::string>& keys,
                                   const std::vector<ServerSpec>& servers, RouteFn route) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out.push_back(servers[route(i)].host);
  }
  return out;
}

double movedFraction(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    moved += a[i] != b[i];
  }
  return static_cast<double>(moved) / static_cast<double>(a.size());
}

// ---- statistics ----------------------------------------------------------------------------

struct Spread {
  double max_share = 0;
  double min_share = 1;
  double max_over_mean = 0;
  double spread = 0;  // (max - min) / mean
  bool within10 = true;
};

Spread spreadOf(const std::vector<double>& shares) {
  Spread s;
  const double mean = 1.0 / static_cast<double>(shares.size());
  for (double x : shares) {
    s.max_share = std::max(s.max_share, x);
    s.min_share = std::min(s.min_share, x);
    s.within10 = s.within10 && std::abs(x / mean - 1.0) <= 0.10;
  }
  s.max_over_mean = s.max_share / mean;
  s.spread = (s.max_share - s.min_share) / mean;
  return s;
}

std::vector<double> sharesFromCounts(const std::vector<uint64_t>& counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) {
    total += c;
  }
  std::vector<double> shares;
  for (uint64_t c : counts) {
    shares.push_back(static_cast<double>(c) / static_cast<double>(total));
  }
  return shares;
}

template <typename RouteFn>
std::vector<double> measuredShares(size_t nodes_count, size_t keys, RouteFn route) {
  std::vector<uint64_t> counts(nodes_count, 0);
  for (size_t i = 0; i < keys; ++i) {
    ++counts[route(i)];
  }
  return sharesFromCounts(counts);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * x);
  return buf;
}

std::string num(double x, int decimals = 3) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, x);
  return buf;
}

// ---- the experiments -----------------------------------------------------------------------

void uniformity(const std::vector<std::string>& keys, const std::vector<uint32_t>& hashes,
                const LabOptions& opt) {
  std::printf("### 1. Uniformity: 5 nodes, %zu random keys, plain ring\n\n", keys.size());
  std::printf(
      "| vnodes per node | max share | min share | max/mean | spread (max-min)/mean | "
      "every node within ±10%% |\n|---:|---:|---:|---:|---:|:---:|\n");
  const auto servers = nodes(5);
  auto measure = [&](uint32_t v) {
    const KetamaRing ring = plainRing(servers, v);
    return spreadOf(
        measuredShares(5, keys.size(), [&](size_t i) { return ring.lookup(hashes[i]); }));
  };
  for (uint32_t v : {1U, 10U, 100U, 160U, 500U}) {
    const Spread s = measure(v);
    std::printf("| %u | %s | %s | %s | %s | %s |\n", v, pct(s.max_share).c_str(),
                pct(s.min_share).c_str(), num(s.max_over_mean).c_str(), num(s.spread).c_str(),
                s.within10 ? "yes" : "no");
  }
  // Scan every count: the first that is within ±10%, and the one from which it always is.
  const uint32_t limit = opt.quick ? 300 : 500;
  uint32_t first = 0;
  uint32_t stable = 0;
  for (uint32_t v = 1; v <= limit; ++v) {
    const bool ok = measure(v).within10;
    if (ok && first == 0) {
      first = v;
    }
    if (!ok) {
      stable = 0;
    } else if (stable == 0) {
      stable = v;
    }
  }
  std::printf(
      "\nScanning 1..%u vnodes per node: every node is first within ±10%% of the mean at "
      "%u vnodes, and stays within it for every count from %s on.\n\n",
      limit, first, stable == 0 ? "(never)" : std::to_string(stable).c_str());
}

void costOfChange(const std::vector<std::string>& keys, const std::vector<uint32_t>& hashes) {
  std::printf("### 2. Cost of change: fraction of keys that change node\n\n");
  std::printf(
      "| change | ring, 160 vnodes | ring theory | mod N | mod N theory |\n"
      "|---|---:|---:|---:|---:|\n");
  struct Change {
    const char* label;
    size_t from;
    size_t to;
    double ring_theory;
    double mod_theory;
  };
  const Change changes[] = {{"10 → 11 (add one)", 10, 11, 1.0 / 11, 10.0 / 11},
                            {"11 → 10 (remove one)", 11, 10, 1.0 / 11, 10.0 / 11},
                            {"10 → 20 (double)", 10, 20, 1.0 / 2, 1.0 / 2}};
  for (const Change& c : changes) {
    const auto a_nodes = nodes(c.from);
    const auto b_nodes = nodes(c.to);
    const KetamaRing ra = plainRing(a_nodes, 160);
    const KetamaRing rb = plainRing(b_nodes, 160);
    const double ring_moved =
        movedFraction(placement(keys, a_nodes, [&](size_t i) { return ra.lookup(hashes[i]); }),
                      placement(keys, b_nodes, [&](size_t i) { return rb.lookup(hashes[i]); }));
    const double mod_moved =
        movedFraction(placement(keys, a_nodes, [&](size_t i) { return hashes[i] % c.from; }),
                      placement(keys, b_nodes, [&](size_t i) { return hashes[i] % c.to; }));
    std::printf("| %s | %s | %s | %s | %s |\n", c.label, pct(ring_moved).c_str(),
                pct(c.ring_theory).c_str(), pct(mod_moved).c_str(), pct(c.mod_theory).c_str());
  }
  std::printf("\n");
}

void inheritance(const std::vector<std::string>& keys, const std::vector<uint32_t>& hashes) {
  std::printf("### 3. Inheritance: remove node 4 of 10; where do its keys go?\n\n");
  const auto before = nodes(10);
  auto after = before;
  const std::string gone = before[3].host;
  after.erase(after.begin() + 3);
  std::map<uint32_t, std::vector<double>> heirs_by_vnodes;
  std::printf(
      "| vnodes per node | keys on the removed node | survivors that inherit | "
      "largest heir's part |\n|---:|---:|---:|---:|\n");
  for (uint32_t v : {1U, 200U}) {
    const KetamaRing ra = plainRing(before, v);
    const KetamaRing rb = plainRing(after, v);
    std::map<std::string, uint64_t> inherited;
    uint64_t orphaned = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (before[ra.lookup(hashes[i])].host == gone) {
        ++orphaned;
        ++inherited[after[rb.lookup(hashes[i])].host];
      }
    }
    std::vector<double> parts;
    for (const auto& s : after) {
      const auto it = inherited.find(s.host);
      parts.push_back(it == inherited.end()
                          ? 0.0
                          : static_cast<double>(it->second) /
                                static_cast<double>(std::max<uint64_t>(orphaned, 1)));
    }
    std::sort(parts.rbegin(), parts.rend());
    std::printf("| %u | %llu | %zu of 9 | %s |\n", v, static_cast<unsigned long long>(orphaned),
                inherited.size(), pct(parts.front()).c_str());
    heirs_by_vnodes[v] = parts;
  }
  std::printf(
      "\nHistogram: each survivor's part of the removed node's keys, largest first "
      "(one # per 2%%).\n\n| heir | 1 vnode | | 200 vnodes | |\n|---:|---:|:---|---:|:---|\n");
  for (size_t i = 0; i < 9; ++i) {
    const double a = heirs_by_vnodes[1][i];
    const double b = heirs_by_vnodes[200][i];
    std::printf("| %zu | %s | %s | %s | %s |\n", i + 1, pct(a).c_str(),
                std::string(static_cast<size_t>(std::lround(a * 50)), '#').c_str(), pct(b).c_str(),
                std::string(static_cast<size_t>(std::lround(b * 50)), '#').c_str());
  }
  std::printf("\n");
}

void weights(const std::vector<std::string>& keys) {
  std::printf("### 4. Weights: 5 nodes, node 1 has weight 2, the others 1 (expected ratio 2)\n\n");
  std::printf(
      "| distribution | weight-2 node share | mean weight-1 share | measured ratio | "
      "ratio from ownership() |\n|---|---:|---:|---:|---:|\n");
  auto servers = nodes(5);
  servers[0].weight = 2;
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Random,
                         Distribution::Rendezvous, Distribution::Maglev}) {
    const auto r = router(servers, d);
    const auto shares = measuredShares(5, keys.size(), [&](size_t i) { return r->route(keys[i]); });
    const double rest = (1.0 - shares[0]) / 4;
    const auto own = r->ownership();
    const double own_rest = (1.0 - own[0]) / 4;
    std::printf("| %s | %s | %s | %s | %s |\n", std::string(routing::distributionName(d)).c_str(),
                pct(shares[0]).c_str(), pct(rest).c_str(), num(shares[0] / rest, 2).c_str(),
                num(own[0] / own_rest, 2).c_str());
  }
  std::printf(
      "\nketama gives the weight-2 node exactly twice the points (264 against 132 here); its "
      "share still carries the arc-length luck of those points, like any node's (section "
      "6). jump has no notion of weight: a weight other than 1 is a build error.\n\n");
}

void hotKey(const std::vector<std::string>& keys, const LabOptions& opt, Rng& rng) {
  constexpr size_t kNodes = 10;
  constexpr uint32_t kSalt = 8;
  constexpr double kHotFraction = 0.30;
  std::printf(
      "### 5. Hot key: %llu requests, 30%% to one key, the rest uniform over %zu keys; "
      "%zu nodes\n\n",
      static_cast<unsigned long long>(opt.hot_requests), keys.size(), kNodes);
  std::printf(
      "Salting with R = %u: the hot key is stored as `key#0`..`key#7` (a write costs 8 "
      "sets), and each read asks one copy picked at random (a read still costs 1 get).\n\n",
      kSalt);
  std::printf(
      "| distribution | max/mean load, plain | hot node's load | max/mean load, salted "
      "R=8 | nodes holding the 8 copies |\n|---|---:|---:|---:|---:|\n");
  const auto servers = nodes(kNodes);
  const std::string hot = "hot:object:42";
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Random,
                         Distribution::Jump, Distribution::Rendezvous, Distribution::Maglev}) {
    const auto r = router(servers, d);
    const bool random = d == Distribution::Random;
    // Route every key once (random routes per request instead).
    std::vector<uint32_t> home(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      home[i] = r->route(keys[i]);
    }
    std::vector<uint32_t> copy_home;
    std::vector<bool> used(kNodes, false);
    for (uint32_t c = 0; c < kSalt; ++c) {
      copy_home.push_back(r->route(hot + "#" + std::to_string(c)));
      used[copy_home.back()] = true;
    }
    const uint32_t hot_home = r->route(hot);
    std::vector<uint64_t> plain(kNodes, 0);
    std::vector<uint64_t> salted(kNodes, 0);
    for (uint64_t q = 0; q < opt.hot_requests; ++q) {
      if (rng.unit() < kHotFraction) {
        ++plain[random ? r->route(hot) : hot_home];
        const uint32_t c = static_cast<uint32_t>(rng.below(kSalt));
        ++salted[random ? r->route(hot) : copy_home[c]];
      } else {
        const size_t k = rng.below(keys.size());
        const uint32_t node = random ? r->route(keys[k]) : home[k];
        ++plain[node];
        ++salted[node];
      }
    }
    const Spread p = spreadOf(sharesFromCounts(plain));
    const Spread s = spreadOf(sharesFromCounts(salted));
    std::printf("| %s | %s | %s | %s | %s |\n", std::string(routing::distributionName(d)).c_str(),
                num(p.max_over_mean, 2).c_str(), pct(p.max_share).c_str(),
                num(s.max_over_mean, 2).c_str(),
                random ? "n/a (any node)"
                       : std::to_string(std::count(used.begin(), used.end(), true)).c_str());
  }
  std::printf(
      "\nWithout salting the hot key's node carries 30%% + 70%%/10 = 37%% of all requests "
      "(3.7x the mean) whatever the distribution; random avoids it only because it gives "
      "up key affinity (every node must hold every key).\n\n");
}

void imbalance(const LabOptions& opt, Rng& rng) {
  std::printf("### 6. Imbalance over %llu random rings per cell: max node share / mean share\n\n",
              static_cast<unsigned long long>(opt.trials));
  std::printf("Exact from the ring's arc lengths (`ownership()`), so no key-sampling noise.\n\n");
  std::printf(
      "| servers | no vnodes: median | no vnodes: worst | 150 vnodes: median | "
      "150 vnodes: worst |\n|---:|---:|---:|---:|---:|\n");
  for (size_t n : {3U, 10U, 50U, 100U}) {
    std::vector<double> one;
    std::vector<double> many;
    for (uint64_t t = 0; t < opt.trials; ++t) {
      const auto servers = randomNodes(n, rng);
      for (uint32_t v : {1U, 150U}) {
        const auto own = plainRing(servers, v).ownership();
        const double worst = *std::max_element(own.begin(), own.end()) * static_cast<double>(n);
        (v == 1 ? one : many).push_back(worst);
      }
    }
    std::printf("| %zu | %s | %s | %s | %s |\n", n, num(median(one), 2).c_str(),
                num(*std::max_element(one.begin(), one.end()), 2).c_str(),
                num(median(many), 2).c_str(),
                num(*std::max_element(many.begin(), many.end()), 2).c_str());
  }
  std::printf("\n");
}

void otherDistributions(const std::vector<std::string>& keys) {
  std::printf("### 7. jump, rendezvous and maglev: uniformity (5 nodes) and cost of change\n\n");
  std::printf(
      "| distribution | max share | min share | spread (max-min)/mean | within ±10%% | "
      "10 → 11 | 11 → 10 | 10 → 20 |\n|---|---:|---:|---:|:---:|---:|---:|---:|\n");
  auto moved = [&](Distribution d, size_t from, size_t to) {
    const auto a = nodes(from);
    const auto b = nodes(to);
    const auto ra = router(a, d);
    const auto rb = router(b, d);
    return movedFraction(placement(keys, a, [&](size_t i) { return ra->route(keys[i]); }),
                         placement(keys, b, [&](size_t i) { return rb->route(keys[i]); }));
  };
  for (Distribution d : {Distribution::Jump, Distribution::Rendezvous, Distribution::Maglev}) {
    const auto r = router(nodes(5), d);
    const Spread s =
        spreadOf(measuredShares(5, keys.size(), [&](size_t i) { return r->route(keys[i]); }));
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n",
                std::string(routing::distributionName(d)).c_str(), pct(s.max_share).c_str(),
                pct(s.min_share).c_str(), num(s.spread).c_str(), s.within10 ? "yes" : "no",
                pct(moved(d, 10, 11)).c_str(), pct(moved(d, 11, 10)).c_str(),
                pct(moved(d, 10, 20)).c_str());
  }
  std::printf("| theory | 20%% | 20%% | 0 | | %s | %s | 50.00%% |\n\n", pct(1.0 / 11).c_str(),
              pct(1.0 / 11).c_str());
  std::printf(
      "11 → 10 removes the last node (jump can only lose its last bucket without "
      "renumbering). maglev moves a little more than the minimum: a new node also takes "
      "some slots from nodes that keep their keys elsewhere (paper, section 5.3).\n\n");
}

// Replica sets (`replicas: R`): the share of keys whose set of servers changes, by key, beside
// what `mcring plan` computes over the hash space (routing::planReplicaSets).
void replicaSets(const std::vector<std::string>& keys) {
  constexpr uint32_t kR = 2;
  std::printf("### 8. Replica sets (replicas %u): fraction of keys whose replica set changes\n\n",
              kR);
  std::printf(
      "| distribution | 10 → 11 | `mcring plan` | no copy kept | 11 → 10 | 10 → 20 | "
      "primaries, 10 → 11 |\n|---|---:|---:|---:|---:|---:|---:|\n");
  // Each key's set as sorted host names (comparable across server lists).
  auto sets = [&](const std::vector<ServerSpec>& servers, const Router& r) {
    std::vector<std::vector<std::string>> out(keys.size());
    std::array<uint32_t, routing::kMaxReplicas> set{};
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t n = r.replicaSet(keys[i], set);
      for (uint32_t k = 0; k < n; ++k) {
        out[i].push_back(servers[set[k]].host);
      }
      std::sort(out[i].begin(), out[i].end());
    }
    return out;
  };
  struct Change {
    double changed = 0;
    double none_kept = 0;
  };
  auto change = [&](Distribution d, size_t from, size_t to) {
    const auto a = nodes(from);
    const auto b = nodes(to);
    const auto sa = sets(a, *router(a, d, kR));
    const auto sb = sets(b, *router(b, d, kR));
    Change c;
    for (size_t i = 0; i < keys.size(); ++i) {
      c.changed += sa[i] != sb[i] ? 1 : 0;
      bool kept = false;
      for (const auto& s : sa[i]) {
        kept = kept || std::find(sb[i].begin(), sb[i].end(), s) != sb[i].end();
      }
      c.none_kept += kept ? 0 : 1;
    }
    c.changed /= static_cast<double>(keys.size());
    c.none_kept /= static_cast<double>(keys.size());
    return c;
  };
  auto ids = [](const std::vector<ServerSpec>& servers) {
    std::vector<std::string> out;
    for (const auto& s : servers) {
      out.push_back(s.host + ":" + std::to_string(s.port));
    }
    return out;
  };
  for (Distribution d : {Distribution::Ketama, Distribution::Modula, Distribution::Rendezvous,
                         Distribution::Maglev}) {
    const Change grow = change(d, 10, 11);
    const auto a = nodes(10);
    const auto b = nodes(11);
    const routing::ReplicaPlan plan =
        routing::planReplicaSets(*router(a, d, kR), ids(a), *router(b, d, kR), ids(b));
    const auto ra = router(a, d);
    const auto rb = router(b, d);
    const double primaries =
        movedFraction(placement(keys, a, [&](size_t i) { return ra->route(keys[i]); }),
                      placement(keys, b, [&](size_t i) { return rb->route(keys[i]); }));
    std::printf("| %s | %s | %s (%s) | %s | %s | %s | %s |\n",
                std::string(routing::distributionName(d)).c_str(), pct(grow.changed).c_str(),
                pct(plan.changed).c_str(),
                std::string(routing::migrationMethodName(plan.method)).c_str(),
                pct(grow.none_kept).c_str(), pct(change(d, 11, 10).changed).c_str(),
                pct(change(d, 10, 20).changed).c_str(), pct(primaries).c_str());
  }
  std::printf("| theory (consistent) | %s | | 0 | %s | | %s |\n\n", pct(2.0 / 11).c_str(),
              pct(2.0 / 11).c_str(), pct(1.0 / 11).c_str());
  std::printf(
      "A set changes when a server joins or leaves it. Adding an 11th server puts it into R/(N+1) "
      "of the sets under a consistent distribution (twice the keys whose primary moves, but each "
      "changed set keeps its other copy); modula shifts every slot, so nearly every set changes "
      "and most keep no copy. \"no copy kept\" is for 10 → 11. Doubling changes 1 - (1/2)^R "
      "of the sets under a ring (each member is replaced with probability 1/2), more than "
      "modula.\n\n");
}

bool parseNumber(const char* s, uint64_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0') {
    return false;
  }
  *out = v;
  return true;
}

}  // namespace
}  // namespace mcring::bench

int runLab(int argc, char** argv) {
  using mcring::bench::LabOptions;
  LabOptions opt;
  bool keys_set = false;
  bool trials_set = false;
  std::string command = "mcring-bench lab";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](uint64_t* out) {
      if (i + 1 >= argc || !mcring::bench::parseNumber(argv[i + 1], out)) {
        std::fprintf(stderr, "lab: %s needs a number\n", arg.c_str());
        return false;
      }
      command += " " + arg + " " + argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(mcring::bench::kUsage, stdout);
      return 0;
    }
    if (arg == "--keys") {
      if (!value(&opt.keys) || opt.keys == 0) {
        return 2;
      }
      keys_set = true;
    } else if (arg == "--trials") {
      if (!value(&opt.trials) || opt.trials == 0) {
        return 2;
      }
      trials_set = true;
    } else if (arg == "--seed") {
      if (!value(&opt.seed)) {
        return 2;
      }
    } else if (arg == "--quick") {
      opt.quick = true;
      command += " --quick";
    } else {
      std::fprintf(stderr, "lab: unknown option %s\n\n%s", arg.c_str(), mcring::bench::kUsage);
      return 2;
    }
  }
  if (opt.quick) {
    opt.keys = keys_set ? opt.keys : 20000;
    opt.trials = trials_set ? opt.trials : 20;
    opt.hot_requests = 200000;
  }

  mcring::bench::Rng rng(opt.seed);
  const auto keys = mcring::bench::randomKeys(opt.keys, rng);
  const auto hashes = mcring::bench::md5Hashes(keys);
  std::printf("## Ring lab\n\n`%s` (keys %llu, trials %llu, seed %llu)\n\n", command.c_str(),
              static_cast<unsigned long long>(opt.keys),
              static_cast<unsigned long long>(opt.trials),
              static_cast<unsigned long long>(opt.seed));
  mcring::bench::uniformity(keys, hashes, opt);
  mcring::bench::costOfChange(keys, hashes);
  mcring::bench::inheritance(keys, hashes);
  mcring::bench::weights(keys);
  mcring::bench::hotKey(keys, opt, rng);
  mcring::bench::imbalance(opt, rng);
  mcring::bench::otherDistributions(keys);
  mcring::bench::replicaSets(keys);
  return 0;
}
