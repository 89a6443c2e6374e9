// The rendezvous distribution: weighted highest-random-weight (HRW) hashing.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "proxy/routing/distributions.h"
#include "proxy/routing/seeded_hash.h"
#include "proxy/routing/server_names.h"

namespace mcring::routing {
namespace {

constexpr uint64_t kSeedSalt = 0x68727721;  // "hrw!"

// Each server scores a key with u = hash(key, server) in (0, 1) and the key goes to the highest
// -w / ln(u) (the standard weighted HRW formula: server i wins with probability w_i / sum w).
// Seeds come from the server's identity, not its position, so removing a server moves only its
// own keys. Ties (equal 64-bit scores) go to the lower config position.
class RendezvousRouter final : public KeyHashingRouter {
 public:
  RendezvousRouter(RouterOptions options, std::span<const ServerSpec> servers)
      : KeyHashingRouter(std::move(options)) {
    uint64_t total = 0;
    for (const auto& s : servers) {
      seeds_.push_back(identityHash(serverIdentity(s), kSeedSalt));
      inverse_weights_.push_back(1.0 / static_cast<double>(s.weight));
      weights_.push_back(s.weight);
      total += s.weight;
      weighted_ = weighted_ || s.weight != servers.front().weight;
    }
    total_weight_ = static_cast<double>(total);
  }

  uint32_t route(std::string_view key) const override { return routeHash(hashOf(key)); }

  uint32_t routeHash(uint32_t hash) const override {
    const uint64_t k = static_cast<uint64_t>(hash) * 0x9E3779B97F4A7C15ULL;
    const size_t n = seeds_.size();
    uint32_t best = 0;
    if (!weighted_) {
      // Equal weights: -1/ln(u) grows with u, so the largest raw score wins; no log needed.
      uint64_t best_score = mix64(seeds_[0] ^ k);
      for (size_t i = 1; i < n; ++i) {
        const uint64_t score = mix64(seeds_[i] ^ k);
        if (score > best_score) {
          best_score = score;
          best = static_cast<uint32_t>(i);
        }
      }
      return best;
    }
    // max -w/ln(u) == min -ln(u)/w.
    double best_cost = cost(0, k);
    for (size_t i = 1; i < n; ++i) {
      const double c = cost(i, k);
      if (c < best_cost) {
        best_cost = c;
        best = static_cast<uint32_t>(i);
      }
    }
    return best;
  }

  // The n best servers by the same measure routeHash() optimises (the raw 64-bit score with equal
  // weights, the cost with weights): an insertion into a short sorted list per server.
  uint32_t preferenceList(uint32_t hash, uint32_t n,
                          std::span<uint32_t, kMaxReplicas> out) const override {
    const uint64_t k = static_cast<uint64_t>(hash) * 0x9E3779B97F4A7C15ULL;
    const uint32_t want =
        std::min<uint32_t>({n, kMaxReplicas, static_cast<uint32_t>(seeds_.size())});
    if (!weighted_) {
      // Lower is better: ~score.
      return topN<uint64_t>(want, out, [&](size_t i) { return ~mix64(seeds_[i] ^ k); });
    }
    return topN<double>(want, out, [&](size_t i) { return cost(i, k); });
  }

  size_t serverCount() const override { return seeds_.size(); }

  // The formula's exact probabilities, w_i / sum w (exact in expectation over uniform hashes).
  std::vector<double> ownership() const override {
    std::vector<double> share;
    for (uint32_t w : weights_) {
      share.push_back(static_cast<double>(w) / total_weight_);
    }
    return share;
  }

  size_t memoryBytes() const override {
    return sizeof(*this) + seeds_.capacity() * sizeof(uint64_t) +
           inverse_weights_.capacity() * sizeof(double) + weights_.capacity() * sizeof(uint32_t);
  }

 private:
  // The `want` servers with the lowest rank(i), ascending; ties keep the lower config position
  // first, as routeHash's strict comparisons do.
  template <typename Rank, typename RankOf>
  uint32_t topN(uint32_t want, std::span<uint32_t, kMaxReplicas> out, RankOf rank_of) const {
    std::array<Rank, kMaxReplicas> rank{};
    uint32_t count = 0;
    for (size_t i = 0; i < seeds_.size(); ++i) {
      const Rank r = rank_of(i);
      uint32_t pos = count;
      while (pos > 0 && r < rank[pos - 1]) {
        --pos;
      }
      if (pos >= want) {
        continue;
      }
      count = std::min(count + 1, want);
      for (uint32_t j = count - 1; j > pos; --j) {
        rank[j] = rank[j - 1];
        out[j] = out[j - 1];
      }
      rank[pos] = r;
      out[pos] = static_cast<uint32_t>(i);
    }
    return count;
  }

  double cost(size_t i, uint64_t k) const {
    // u in (0, 1): the top 53 bits plus half a unit, so ln(u) is finite and negative.
    const double u = (static_cast<double>(mix64(seeds_[i] ^ k) >> 11) + 0.5) * 0x1p-53;
    return -std::log(u) * inverse_weights_[i];
  }

  std::vector<uint64_t> seeds_;
  std::vector<double> inverse_weights_;
  std::vector<uint32_t> weights_;
  double total_weight_ = 0;
  bool weighted_ = false;
};

}  // namespace

std::unique_ptr<const Router> makeRendezvousRouter(std::span<const ServerSpec> servers,
                                                   const RouterOptions& options, std::string*) {
  return std::make_unique<RendezvousRouter>(options, servers);
}

}  // namespace mcring::routing
