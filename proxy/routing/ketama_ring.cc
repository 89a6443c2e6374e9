// A ketama continuum: sorted 32-bit points with an index by the hash's top bits for O(1) lookup.
#include "proxy/routing/ketama_ring.h"

#include <algorithm>
#include <bit>
#include <cassert>

namespace mcring::routing {

KetamaRing KetamaRing::build(std::vector<Point> points, size_t server_count) {
  assert(!points.empty());
  std::stable_sort(points.begin(), points.end(),
                   [](const Point& a, const Point& b) { return a.value < b.value; });
  KetamaRing ring;
  ring.server_count_ = server_count;
  ring.values_.reserve(points.size() + kWindow);
  ring.owners_.reserve(points.size() + 1);
  for (const Point& p : points) {
    // A later equal point can never be the first point >= any hash: drop it.
    if (!ring.values_.empty() && ring.values_.back() == p.value) {
      continue;
    }
    ring.values_.push_back(p.value);
    ring.owners_.push_back(p.server);
  }
  ring.owners_.push_back(ring.owners_.front());  // hashes above the last point wrap to the first
  ring.point_count_ = ring.values_.size();

  // About one bucket per two points keeps the index small and the scan short.
  const size_t n = ring.values_.size();
  const uint32_t bits = std::clamp<uint32_t>(std::bit_width(n) - 1, 1, 20);
  ring.shift_ = 32 - bits;
  const size_t buckets = size_t{1} << bits;
  ring.bucket_.resize(buckets + 1);
  size_t i = 0;
  for (size_t b = 0; b < buckets; ++b) {
    const uint64_t start = static_cast<uint64_t>(b) << ring.shift_;
    while (i < n && ring.values_[i] < start) {
      ++i;
    }
    ring.bucket_[b] = static_cast<uint32_t>(i);
  }
  ring.bucket_[buckets] = static_cast<uint32_t>(n);
  // Padding for lookup()'s fixed window: never below any hash, so it never counts.
  ring.values_.insert(ring.values_.end(), kWindow, UINT32_MAX);
  return ring;
}

std::vector<double> KetamaRing::ownership() const {
  std::vector<uint64_t> owned(server_count_, 0);
  const size_t n = point_count_;
  // Point 0 owns [0, v0] and the wrap (v_last, 2^32 - 1].
  owned[owners_[0]] += static_cast<uint64_t>(values_[0]) + 1 + (0xFFFFFFFFULL - values_[n - 1]);
  for (size_t i = 1; i < n; ++i) {
    owned[owners_[i]] += static_cast<uint64_t>(values_[i]) - values_[i - 1];
  }
  std::vector<double> share(server_count_);
  for (size_t s = 0; s < server_count_; ++s) {
    share[s] = static_cast<double>(owned[s]) / 4294967296.0;
  }
  return share;
}

uint32_t KetamaRing::successors(uint32_t hash, uint32_t n, uint32_t* out) const {
  // The first point >= hash (point_count_: past the last, which wraps to the first).
  const size_t first = static_cast<size_t>(
      std::lower_bound(values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(point_count_),
                       hash) -
      values_.begin());
  const uint32_t want = static_cast<uint32_t>(std::min<size_t>(n, server_count_));
  uint32_t count = 0;
  for (size_t step = 0; step < point_count_ && count < want; ++step) {
    const uint32_t s = owners_[(first + step) % point_count_];
    if (std::find(out, out + count, s) == out + count) {
      out[count++] = s;
    }
  }
  return count;
}

}  // namespace mcring::routing
