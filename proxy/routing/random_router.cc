// The random distribution: every request to a server picked at random, weighted.
#include <algorithm>
#include <memory>
#include <random>

#include "proxy/routing/distributions.h"

namespace mcring::routing {
namespace {

// splitmix64: tiny and good enough for load spreading; one state per thread so route() stays
// const and lock-free.
uint64_t nextRandom() {
  thread_local uint64_t state = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
           reinterpret_cast<uintptr_t>(&state);  // distinct per thread even if rd is weak
  }();
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// twemproxy's random picks uniformly among servers and ignores weights; here a server's chance
// is weight / total (the same as twemproxy's when all weights are equal), because silently
// ignoring a configured weight is worse than honouring it.
class RandomRouter final : public KeyHashingRouter {
 public:
  RandomRouter(RouterOptions options, std::span<const ServerSpec> servers)
      : KeyHashingRouter(std::move(options)) {
    uint64_t sum = 0;
    for (const auto& s : servers) {
      sum += s.weight;
      cumulative_.push_back(sum);
      uniform_ = uniform_ && s.weight == servers.front().weight;
    }
  }

  uint32_t route(std::string_view) const override {
    const uint64_t total = cumulative_.back();
    // Lemire's multiply-shift: an (almost exactly) uniform draw in [0, total) without division.
    const auto draw =
        static_cast<uint64_t>((static_cast<unsigned __int128>(nextRandom()) * total) >> 64);
    if (uniform_) {
      return static_cast<uint32_t>(draw / (total / cumulative_.size()));
    }
    return static_cast<uint32_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), draw) -
                                 cumulative_.begin());
  }

  uint32_t routeHash(uint32_t) const override { return route({}); }
  size_t serverCount() const override { return cumulative_.size(); }

  // The hash space plays no part: each server's share of requests is its weight share.
  std::vector<double> ownership() const override {
    std::vector<double> share;
    uint64_t prev = 0;
    for (uint64_t c : cumulative_) {
      share.push_back(static_cast<double>(c - prev) / static_cast<double>(cumulative_.back()));
      prev = c;
    }
    return share;
  }

  size_t memoryBytes() const override {
    return sizeof(*this) + cumulative_.capacity() * sizeof(uint64_t);
  }

 private:
  std::vector<uint64_t> cumulative_;  // prefix sums of weights, config order
  bool uniform_ = true;
};

}  // namespace

std::unique_ptr<const Router> makeRandomRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string*) {
  return std::make_unique<RandomRouter>(options, servers);
}

}  // namespace mcring::routing
