// The prediction for a membership change: exact counting where the structure allows, else sampling.
#include "proxy/routing/migration.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <numeric>

#include "proxy/routing/seeded_hash.h"

namespace mcring::routing {
namespace {

constexpr uint64_t kHashSpace = uint64_t{1} << 32;
constexpr uint64_t kMaxHash = kHashSpace - 1;
constexpr uint64_t kSampleSalt = 0x706c616e;  // "plan"

// Hash values counted per (old server, new server).
using CountMatrix = std::vector<std::vector<uint64_t>>;

CountMatrix zeroCounts(size_t rows, size_t cols) {
  return CountMatrix(rows, std::vector<uint64_t>(cols, 0));
}

// Walks the union of both rings' points: between two consecutive points of the union, both
// owners are constant, so each piece is one (old, new) cell. O(points of both rings).
CountMatrix countRings(const std::vector<Router::RingPoint>& a, size_t a_servers,
                       const std::vector<Router::RingPoint>& b, size_t b_servers) {
  CountMatrix counts = zeroCounts(a_servers, b_servers);
  size_t i = 0;  // first point of `a` with value >= cur
  size_t j = 0;
  for (uint64_t cur = 0; cur <= kMaxHash;) {
    // Past the last point a hash wraps to the first point's server.
    const uint32_t owner_a = i < a.size() ? a[i].server : a.front().server;
    const uint32_t owner_b = j < b.size() ? b[j].server : b.front().server;
    const uint64_t end_a = i < a.size() ? a[i].value : kMaxHash;
    const uint64_t end_b = j < b.size() ? b[j].value : kMaxHash;
    const uint64_t end = std::min(end_a, end_b);
    counts[owner_a][owner_b] += end - cur + 1;
    cur = end + 1;
    // Points are distinct and ascending, so at most one per ring ends at `end`.
    if (i < a.size() && a[i].value == end) {
      ++i;
    }
    if (j < b.size() && b[j].value == end) {
      ++j;
    }
  }
  return counts;
}

// A hash h goes to ta[h % A] before and tb[h % B] after, which depends only on r = h % lcm(A, B).
// Each r < lcm is hit by floor((2^32 - 1 - r) / lcm) + 1 hash values.
CountMatrix countResidues(const Router& before, const Router& after, uint64_t lcm) {
  const std::span<const uint32_t> ta = before.slotTable();
  const std::span<const uint32_t> tb = after.slotTable();
  CountMatrix counts = zeroCounts(before.serverCount(), after.serverCount());
  size_t ra = 0;  // r % A and r % B, advanced without a division per residue
  size_t rb = 0;
  for (uint64_t r = 0; r < lcm; ++r) {
    counts[ta[ra]][tb[rb]] += (kMaxHash - r) / lcm + 1;
    if (++ra == ta.size()) {
      ra = 0;
    }
    if (++rb == tb.size()) {
      rb = 0;
    }
  }
  return counts;
}

// One hash in each of `samples` equal slices of the hash space (stratified), at a fixed
// pseudo-random offset within its slice. Deterministic and evenly spread; the offsets keep the
// samples from aliasing with hash % n tables, as a regular grid would (a stride of 2^12 makes
// every sample even, so h % 6 would never be odd).
CountMatrix countSamples(const Router& before, const Router& after, uint32_t samples) {
  CountMatrix counts = zeroCounts(before.serverCount(), after.serverCount());
  for (uint64_t k = 0; k < samples; ++k) {
    const uint64_t lo = (k << 32) / samples;
    const uint64_t hi = ((k + 1) << 32) / samples;
    const auto h = static_cast<uint32_t>(lo + mix64(k ^ kSampleSalt) % (hi - lo));
    ++counts[before.routeHash(h)][after.routeHash(h)];
  }
  return counts;
}

std::vector<std::vector<double>> normalize(const CountMatrix& counts, uint64_t total) {
  std::vector<std::vector<double>> m(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    m[i].reserve(counts[i].size());
    for (uint64_t c : counts[i]) {
      m[i].push_back(static_cast<double>(c) / static_cast<double>(total));
    }
  }
  return m;
}

// The key hashes before and after are the same value only when both sides hash keys the same way.
bool sameHashSpace(const Router& before, const Router& after) {
  return before.options().hash == after.options().hash &&
         before.options().hash_tag == after.options().hash_tag;
}

}  // namespace

std::string_view migrationMethodName(MigrationMethod m) {
  switch (m) {
    case MigrationMethod::Exact:
      return "exact";
    case MigrationMethod::Sampled:
      return "sampled";
    case MigrationMethod::Independent:
      return "independent";
  }
  return "unknown";
}

std::vector<MigrationCell> MigrationPlan::cells() const {
  std::vector<MigrationCell> out;
  for (size_t i = 0; i < matrix.size(); ++i) {
    for (size_t j = 0; j < matrix[i].size(); ++j) {
      if (matrix[i][j] > 0) {
        out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j), matrix[i][j],
                       before[i] != after[j]});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const MigrationCell& x, const MigrationCell& y) {
    return x.fraction > y.fraction;
  });
  return out;
}

double MigrationPlan::movedOut(size_t before_index) const {
  double sum = 0;
  for (size_t j = 0; j < after.size(); ++j) {
    if (before[before_index] != after[j]) {
      sum += matrix[before_index][j];
    }
  }
  return sum;
}

double MigrationPlan::movedIn(size_t after_index) const {
  double sum = 0;
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i] != after[after_index]) {
      sum += matrix[i][after_index];
    }
  }
  return sum;
}

MigrationPlan planMigration(const Router& before, std::span<const std::string> before_ids,
                            const Router& after, std::span<const std::string> after_ids,
                            const MigrationOptions& options) {
  // Callers pass the identities of the servers they built the routers from.
  assert(before_ids.size() == before.serverCount());
  assert(after_ids.size() == after.serverCount());
  MigrationPlan plan;
  plan.before.assign(before_ids.begin(), before_ids.end());
  plan.after.assign(after_ids.begin(), after_ids.end());

  const bool random = before.options().distribution == Distribution::Random ||
                      after.options().distribution == Distribution::Random;
  if (random || !sameHashSpace(before, after)) {
    plan.method = MigrationMethod::Independent;
    const std::vector<double> a = before.ownership();
    const std::vector<double> b = after.ownership();
    plan.matrix.assign(a.size(), std::vector<double>(b.size(), 0));
    for (size_t i = 0; i < a.size(); ++i) {
      for (size_t j = 0; j < b.size(); ++j) {
        plan.matrix[i][j] = a[i] * b[j];
      }
    }
  } else {
    const std::span<const uint32_t> ta = before.slotTable();
    const std::span<const uint32_t> tb = after.slotTable();
    const uint64_t lcm = ta.empty() || tb.empty() ? 0 : std::lcm<uint64_t>(ta.size(), tb.size());
    const std::vector<Router::RingPoint> ring_a = before.ringPoints();
    const std::vector<Router::RingPoint> ring_b = after.ringPoints();
    CountMatrix counts;
    uint64_t total = kHashSpace;
    if (options.exact && !ring_a.empty() && !ring_b.empty()) {
      counts = countRings(ring_a, before.serverCount(), ring_b, after.serverCount());
    } else if (options.exact && lcm != 0 && lcm <= options.max_exact_residues) {
      counts = countResidues(before, after, lcm);
    } else {
      plan.method = MigrationMethod::Sampled;
      plan.samples = std::max<uint32_t>(options.samples, 1);
      counts = countSamples(before, after, static_cast<uint32_t>(plan.samples));
      total = plan.samples;
    }
    plan.matrix = normalize(counts, total);
  }

  plan.ownership_before.assign(plan.before.size(), 0);
  plan.ownership_after.assign(plan.after.size(), 0);
  for (size_t i = 0; i < plan.before.size(); ++i) {
    for (size_t j = 0; j < plan.after.size(); ++j) {
      plan.ownership_before[i] += plan.matrix[i][j];
      plan.ownership_after[j] += plan.matrix[i][j];
      if (plan.before[i] != plan.after[j]) {
        plan.moved += plan.matrix[i][j];
      }
    }
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Replica sets

namespace {

constexpr uint64_t kIndependentSalt = 0x7265706c69636173;  // "replicas"

// Sums, per piece of the hash space, what happens to its replica set. Servers are numbered in
// one space for both sides (the old side's in order, then the new side's added ones), so sets
// compare by identity.
class ReplicaCounter {
 public:
  ReplicaCounter(std::span<const std::string> before_ids, std::span<const std::string> after_ids) {
    std::map<std::string, uint32_t> uid;
    for (const auto& id : before_ids) {
      uid.emplace(id, static_cast<uint32_t>(ids_.size()));
      uid_a_.push_back(static_cast<uint32_t>(ids_.size()));
      ids_.push_back(id);
    }
    for (const auto& id : after_ids) {
      auto [it, inserted] = uid.emplace(id, static_cast<uint32_t>(ids_.size()));
      if (inserted) {
        ids_.push_back(id);
      }
      uid_b_.push_back(it->second);
    }
    before_.assign(ids_.size(), 0);
    after_.assign(ids_.size(), 0);
    lost_.assign(ids_.size(), 0);
    gained_.assign(ids_.size(), 0);
  }

  // `weight` hash values whose old set is a[0..na) and new set b[0..nb) (server indices of each
  // side's router).
  void add(const uint32_t* a, uint32_t na, const uint32_t* b, uint32_t nb, uint64_t weight) {
    std::array<uint32_t, kMaxReplicas> ua{};
    std::array<uint32_t, kMaxReplicas> ub{};
    for (uint32_t i = 0; i < na; ++i) {
      ua[i] = uid_a_[a[i]];
    }
    for (uint32_t j = 0; j < nb; ++j) {
      ub[j] = uid_b_[b[j]];
    }
    const auto in = [](const std::array<uint32_t, kMaxReplicas>& set, uint32_t n, uint32_t u) {
      return std::find(set.begin(), set.begin() + n, u) != set.begin() + n;
    };
    bool set_changed = false;
    bool any_kept = false;
    for (uint32_t i = 0; i < na; ++i) {
      before_[ua[i]] += weight;
      if (in(ub, nb, ua[i])) {
        any_kept = true;
      } else {
        lost_[ua[i]] += weight;
        set_changed = true;
      }
    }
    for (uint32_t j = 0; j < nb; ++j) {
      after_[ub[j]] += weight;
      if (!in(ua, na, ub[j])) {
        gained_[ub[j]] += weight;
        set_changed = true;
      }
    }
    if (set_changed) {
      changed_ += weight;
    } else if (!std::equal(ua.begin(), ua.begin() + na, ub.begin())) {
      order_only_ += weight;  // same members (so na == nb), another order
    }
    if (!any_kept) {
      none_kept_ += weight;
    }
  }

  void finish(uint64_t total, ReplicaPlan* plan) const {
    const auto share = [total](uint64_t c) {
      return static_cast<double>(c) / static_cast<double>(total);
    };
    plan->changed = share(changed_);
    plan->order_only = share(order_only_);
    plan->none_kept = share(none_kept_);
    plan->servers.clear();
    for (size_t u = 0; u < ids_.size(); ++u) {
      plan->servers.push_back(
          {ids_[u], share(before_[u]), share(after_[u]), share(lost_[u]), share(gained_[u])});
    }
  }

 private:
  std::vector<std::string> ids_;
  std::vector<uint32_t> uid_a_;
  std::vector<uint32_t> uid_b_;
  std::vector<uint64_t> before_, after_, lost_, gained_;
  uint64_t changed_ = 0;
  uint64_t order_only_ = 0;
  uint64_t none_kept_ = 0;
};

using ReplicaSet = std::array<uint32_t, kMaxReplicas>;

// Ketama: a hash's replica set depends only on the first ring point at or above it (the
// successors walk starts there), so it is constant on each piece between consecutive points of
// the union of both rings, as the owner is in countRings. Each piece is evaluated at its last
// hash with the routers' own preferenceList.
void countReplicaRings(const Router& before, const Router& after, ReplicaCounter* counter) {
  const std::vector<Router::RingPoint> a = before.ringPoints();
  const std::vector<Router::RingPoint> b = after.ringPoints();
  const uint32_t ra = before.options().replicas;
  const uint32_t rb = after.options().replicas;
  ReplicaSet sa{};
  ReplicaSet sb{};
  size_t i = 0;
  size_t j = 0;
  for (uint64_t cur = 0; cur <= kMaxHash;) {
    const uint64_t end_a = i < a.size() ? a[i].value : kMaxHash;
    const uint64_t end_b = j < b.size() ? b[j].value : kMaxHash;
    const uint64_t end = std::min(end_a, end_b);
    const uint32_t na = before.preferenceList(static_cast<uint32_t>(end), ra, sa);
    const uint32_t nb = after.preferenceList(static_cast<uint32_t>(end), rb, sb);
    counter->add(sa.data(), na, sb.data(), nb, end - cur + 1);
    cur = end + 1;
    if (i < a.size() && a[i].value == end) {
      ++i;
    }
    if (j < b.size() && b[j].value == end) {
      ++j;
    }
  }
}

// Modula / maglev: a hash's set depends only on hash % (table size) (the primary is that slot's
// server, the rest the next slots'), so on r = hash % lcm. Each slot's set is computed once.
void countReplicaResidues(const Router& before, const Router& after, uint64_t lcm,
                          ReplicaCounter* counter) {
  const auto slotSets = [](const Router& r, std::vector<ReplicaSet>* sets,
                           std::vector<uint32_t>* counts) {
    const size_t n = r.slotTable().size();
    sets->resize(n);
    counts->resize(n);
    for (size_t s = 0; s < n; ++s) {
      (*counts)[s] = r.preferenceList(static_cast<uint32_t>(s), r.options().replicas, (*sets)[s]);
    }
  };
  std::vector<ReplicaSet> sets_a;
  std::vector<ReplicaSet> sets_b;
  std::vector<uint32_t> count_a;
  std::vector<uint32_t> count_b;
  slotSets(before, &sets_a, &count_a);
  slotSets(after, &sets_b, &count_b);
  size_t ra = 0;
  size_t rb = 0;
  for (uint64_t r = 0; r < lcm; ++r) {
    counter->add(sets_a[ra].data(), count_a[ra], sets_b[rb].data(), count_b[rb],
                 (kMaxHash - r) / lcm + 1);
    if (++ra == sets_a.size()) {
      ra = 0;
    }
    if (++rb == sets_b.size()) {
      rb = 0;
    }
  }
}

// One hash in each of `samples` equal slices (the offsets of countSamples); `independent` draws
// the new side's hash from a mix of the old one instead of reusing it.
void countReplicaSamples(const Router& before, const Router& after, uint32_t samples,
                         bool independent, ReplicaCounter* counter) {
  const uint32_t ra = before.options().replicas;
  const uint32_t rb = after.options().replicas;
  ReplicaSet sa{};
  ReplicaSet sb{};
  for (uint64_t k = 0; k < samples; ++k) {
    const uint64_t lo = (k << 32) / samples;
    const uint64_t hi = ((k + 1) << 32) / samples;
    const auto h = static_cast<uint32_t>(lo + mix64(k ^ kSampleSalt) % (hi - lo));
    const uint32_t h_after =
        independent ? static_cast<uint32_t>(mix64(h ^ kIndependentSalt) >> 32) : h;
    const uint32_t na = before.preferenceList(h, ra, sa);
    const uint32_t nb = after.preferenceList(h_after, rb, sb);
    counter->add(sa.data(), na, sb.data(), nb, 1);
  }
}

}  // namespace

ReplicaPlan planReplicaSets(const Router& before, std::span<const std::string> before_ids,
                            const Router& after, std::span<const std::string> after_ids,
                            const ReplicaOptions& options) {
  assert(before_ids.size() == before.serverCount());
  assert(after_ids.size() == after.serverCount());
  ReplicaPlan plan;
  plan.replicas_before = before.options().replicas;
  plan.replicas_after = after.options().replicas;
  ReplicaCounter counter(before_ids, after_ids);

  const bool random = before.options().distribution == Distribution::Random ||
                      after.options().distribution == Distribution::Random;
  const bool independent = random || !sameHashSpace(before, after);
  const std::span<const uint32_t> ta = before.slotTable();
  const std::span<const uint32_t> tb = after.slotTable();
  const uint64_t lcm = ta.empty() || tb.empty() ? 0 : std::lcm<uint64_t>(ta.size(), tb.size());
  uint64_t total = kHashSpace;
  if (!independent && options.exact && !before.ringPoints().empty() &&
      !after.ringPoints().empty()) {
    countReplicaRings(before, after, &counter);
  } else if (!independent && options.exact && lcm != 0 && lcm <= options.max_exact_residues) {
    countReplicaResidues(before, after, lcm, &counter);
  } else {
    plan.method = independent ? MigrationMethod::Independent : MigrationMethod::Sampled;
    // Rendezvous evaluates every server for each set: bound the work, not below 2^16 samples.
    uint64_t samples = std::max<uint32_t>(options.samples, 1);
    const auto per_set = [](const Router& r) {
      return r.options().distribution == Distribution::Rendezvous ? r.serverCount() : size_t{1};
    };
    const uint64_t work = std::max(per_set(before), per_set(after));
    const uint64_t floor = std::min<uint64_t>(samples, uint64_t{1} << 16);
    samples = std::max(floor, std::min(samples, options.max_sample_work / work));
    plan.samples = samples;
    countReplicaSamples(before, after, static_cast<uint32_t>(samples), independent, &counter);
    total = samples;
  }
  counter.finish(total, &plan);
  return plan;
}

}  // namespace mcring::routing
