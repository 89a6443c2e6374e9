// The ketama distribution: the key hash looked up on the continuum of the chosen flavour.
#include <algorithm>
#include <memory>

#include "proxy/routing/distributions.h"
#include "proxy/routing/ketama_points.h"
#include "proxy/routing/ketama_ring.h"

namespace mcring::routing {
namespace {

class KetamaRouter final : public KeyHashingRouter {
 public:
  KetamaRouter(RouterOptions options, KetamaRing ring)
      : KeyHashingRouter(std::move(options)), ring_(std::move(ring)) {}

  uint32_t route(std::string_view key) const override { return ring_.lookup(hashOf(key)); }
  uint32_t routeHash(uint32_t hash) const override { return ring_.lookup(hash); }
  uint32_t preferenceList(uint32_t hash, uint32_t n,
                          std::span<uint32_t, kMaxReplicas> out) const override {
    return ring_.successors(hash, std::min(n, kMaxReplicas), out.data());
  }
  std::vector<RingPoint> ringPoints() const override {
    const std::vector<uint32_t> values = ring_.values();
    std::vector<RingPoint> points;
    points.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      points.push_back({values[i], ring_.ownerAt(i)});
    }
    return points;
  }
  size_t serverCount() const override { return ring_.serverCount(); }
  std::vector<double> ownership() const override { return ring_.ownership(); }
  size_t memoryBytes() const override { return sizeof(*this) + ring_.memoryBytes(); }

 private:
  KetamaRing ring_;
};

}  // namespace

std::unique_ptr<const Router> makeKetamaRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error) {
  std::vector<KetamaRing::Point> points =
      ketamaPoints(servers, options.ketama_compat, options.hash);
  if (points.empty()) {
    *error = "the ketama continuum would have no points";
    return nullptr;
  }
  return std::make_unique<KetamaRouter>(options,
                                        KetamaRing::build(std::move(points), servers.size()));
}

}  // namespace mcring::routing
