// The prediction for a membership change: exact counting where the structure allows, else sampling.
#include "proxy/routing/migration.h"

#include <algorithm>
#include <cassert>
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

}  // namespace mcring::routing
