// The jump distribution: Lamping & Veach's jump consistent hash over the 32-bit key hash.
#include <memory>

#include "proxy/routing/distributions.h"

namespace mcring::routing {
namespace {

// "A Fast, Minimal Memory, Consistent Hash Algorithm" (Lamping, Veach 2014), verbatim algorithm.
uint32_t jumpConsistentHash(uint64_t key, int64_t buckets) {
  int64_t b = -1;
  int64_t j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) * (static_cast<double>(int64_t{1} << 31) /
                                                           static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<uint32_t>(b);
}

// Buckets are config positions: appending a server moves 1/(N+1) of keys, but removing one from
// the middle renumbers the rest (jump's known limit), so shrink a jump pool from the end.
class JumpRouter final : public KeyHashingRouter {
 public:
  JumpRouter(RouterOptions options, size_t server_count)
      : KeyHashingRouter(std::move(options)), server_count_(server_count) {}

  uint32_t route(std::string_view key) const override {
    return jumpConsistentHash(hashOf(key), static_cast<int64_t>(server_count_));
  }
  uint32_t routeHash(uint32_t hash) const override {
    return jumpConsistentHash(hash, static_cast<int64_t>(server_count_));
  }
  size_t serverCount() const override { return server_count_; }

  // Jump gives each bucket 1/N of uniformly spread keys by construction; that is what we report
  // (exact in expectation; over the 2^32 hash values the deviation is sampling noise, ~1e-4).
  std::vector<double> ownership() const override {
    return std::vector<double>(server_count_, 1.0 / static_cast<double>(server_count_));
  }
  size_t memoryBytes() const override { return sizeof(*this); }

 private:
  size_t server_count_;
};

}  // namespace

std::unique_ptr<const Router> makeJumpRouter(std::span<const ServerSpec> servers,
                                             const RouterOptions& options, std::string* error) {
  for (size_t i = 0; i < servers.size(); ++i) {
    if (servers[i].weight != 1) {
      *error = "distribution jump has no weights, but server " + std::to_string(i) +
               " has weight " + std::to_string(servers[i].weight);
      return nullptr;
    }
  }
  return std::make_unique<JumpRouter>(options, servers.size());
}

}  // namespace mcring::routing
