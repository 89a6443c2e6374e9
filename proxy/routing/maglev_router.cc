// The maglev distribution: Eisenbud et al. 2016's lookup table, weights by proportional filling.
#include <algorithm>
#include <memory>

#include "proxy/routing/distributions.h"
#include "proxy/routing/seeded_hash.h"
#include "proxy/routing/server_names.h"

namespace mcring::routing {
namespace {

constexpr uint64_t kOffsetSalt = 0x6f6666;  // "off"
constexpr uint64_t kSkipSalt = 0x736b6970;  // "skip"
// 2^24 entries (64 MiB of table) is far past any useful size; bigger is surely a typo.
constexpr uint32_t kMaxTableSize = uint32_t{1} << 24;

bool isPrime(uint32_t m) {
  if (m < 2) {
    return false;
  }
  for (uint32_t d = 2; static_cast<uint64_t>(d) * d <= m; ++d) {
    if (m % d == 0) {
      return false;
    }
  }
  return true;
}

// Population (paper, section 3.4): each server walks its own permutation of the M slots,
// (offset + j * skip) mod M, and claims the next free one in turn. Weighted like Envoy's maglev:
// in round r a server takes a turn only while r * weight >= its running target, which grows by
// the largest weight per turn taken, so slot counts come out proportional to weights.
std::vector<uint32_t> populate(std::span<const ServerSpec> servers, uint32_t m) {
  struct Walker {
    uint64_t offset;
    uint64_t skip;
    uint64_t next = 0;
    uint64_t weight;
    uint64_t target = 0;
  };
  std::vector<Walker> walkers;
  uint64_t max_weight = 0;
  for (const auto& s : servers) {
    const std::string id = serverIdentity(s);
    walkers.push_back({identityHash(id, kOffsetSalt) % m, identityHash(id, kSkipSalt) % (m - 1) + 1,
                       0, s.weight, 0});
    max_weight = std::max<uint64_t>(max_weight, s.weight);
  }
  constexpr uint32_t kEmpty = UINT32_MAX;
  std::vector<uint32_t> table(m, kEmpty);
  uint32_t filled = 0;
  for (uint64_t round = 1; filled < m; ++round) {
    for (size_t i = 0; i < walkers.size() && filled < m; ++i) {
      Walker& w = walkers[i];
      if (round * w.weight < w.target) {
        continue;
      }
      w.target += max_weight;
      uint64_t slot = (w.offset + w.next * w.skip) % m;
      while (table[slot] != kEmpty) {
        ++w.next;
        slot = (w.offset + w.next * w.skip) % m;
      }
      table[slot] = static_cast<uint32_t>(i);
      ++w.next;
      ++filled;
    }
  }
  return table;
}

class MaglevRouter final : public KeyHashingRouter {
 public:
  MaglevRouter(RouterOptions options, std::vector<uint32_t> table, size_t server_count)
      : KeyHashingRouter(std::move(options)),
        table_(std::move(table)),
        size_(static_cast<uint32_t>(table_.size())),
        server_count_(server_count) {}

  uint32_t route(std::string_view key) const override { return table_[hashOf(key) % size_]; }
  uint32_t routeHash(uint32_t hash) const override { return table_[hash % size_]; }
  std::span<const uint32_t> slotTable() const override { return table_; }
  size_t serverCount() const override { return server_count_; }

  // Exact from the table: slot s receives floor((2^32 - 1 - s) / M) + 1 of the hash values.
  std::vector<double> ownership() const override {
    std::vector<uint64_t> owned(server_count_, 0);
    for (uint32_t s = 0; s < size_; ++s) {
      owned[table_[s]] += (0xFFFFFFFFULL - s) / size_ + 1;
    }
    std::vector<double> share(server_count_);
    for (size_t i = 0; i < server_count_; ++i) {
      share[i] = static_cast<double>(owned[i]) / 4294967296.0;
    }
    return share;
  }

  size_t memoryBytes() const override {
    return sizeof(*this) + table_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint32_t> table_;
  uint32_t size_;
  size_t server_count_;
};

}  // namespace

std::unique_ptr<const Router> makeMaglevRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error) {
  const uint32_t m = options.maglev_table_size;
  if (m > kMaxTableSize || !isPrime(m) || m <= servers.size()) {
    *error =
        "maglev_table_size must be a prime larger than the number of servers (and at most "
        "2^24), e.g. 65537; got " +
        std::to_string(m);
    return nullptr;
  }
  return std::make_unique<MaglevRouter>(options, populate(servers, m), servers.size());
}

}  // namespace mcring::routing
