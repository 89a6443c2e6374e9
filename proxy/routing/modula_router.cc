// The modula distribution: twemproxy's hash % total_weight over weight-repeated slots.
#include <memory>

#include "proxy/routing/distributions.h"
#include "proxy/routing/server_names.h"

namespace mcring::routing {
namespace {

// The slot table is one entry per unit of weight; past this a weight is surely a typo.
constexpr uint64_t kMaxTotalWeight = uint64_t{1} << 24;

// Like twemproxy's modula_update: each server, in twemproxy's name order, takes `weight`
// consecutive slots; a key goes to slot hash % slots.
class ModulaRouter final : public KeyHashingRouter {
 public:
  ModulaRouter(RouterOptions options, std::vector<uint32_t> slots, size_t server_count)
      : KeyHashingRouter(std::move(options)),
        slots_(std::move(slots)),
        slot_count_(static_cast<uint32_t>(slots_.size())),
        server_count_(server_count) {}

  uint32_t route(std::string_view key) const override { return slots_[hashOf(key) % slot_count_]; }
  uint32_t routeHash(uint32_t hash) const override { return slots_[hash % slot_count_]; }
  std::span<const uint32_t> slotTable() const override { return slots_; }
  size_t serverCount() const override { return server_count_; }

  // Exact: slot s receives floor((2^32 - 1 - s) / slots) + 1 of the 2^32 hash values.
  std::vector<double> ownership() const override {
    std::vector<uint64_t> owned(server_count_, 0);
    for (uint32_t s = 0; s < slot_count_; ++s) {
      owned[slots_[s]] += (0xFFFFFFFFULL - s) / slot_count_ + 1;
    }
    std::vector<double> share(server_count_);
    for (size_t i = 0; i < server_count_; ++i) {
      share[i] = static_cast<double>(owned[i]) / 4294967296.0;
    }
    return share;
  }

  size_t memoryBytes() const override {
    return sizeof(*this) + slots_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint32_t> slots_;
  uint32_t slot_count_;
  size_t server_count_;
};

}  // namespace

std::unique_ptr<const Router> makeModulaRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error) {
  uint64_t total = 0;
  for (const auto& s : servers) {
    total += s.weight;
  }
  if (total > kMaxTotalWeight) {
    *error = "modula needs one slot per unit of weight; the weights sum to more than 2^24";
    return nullptr;
  }
  std::vector<uint32_t> slots;
  slots.reserve(total);
  for (uint32_t idx : twemproxyOrder(servers)) {
    slots.insert(slots.end(), servers[idx].weight, idx);
  }
  return std::make_unique<ModulaRouter>(options, std::move(slots), servers.size());
}

}  // namespace mcring::routing
