// A ketama continuum: sorted 32-bit points with an index by the hash's top bits for O(1) lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mcring::routing {

// Immutable after build; lookup() is const and lock-free.
//
// Layout: `values_` holds the distinct point values in ascending order and `owners_` the server
// of each (plus a copy of the first at the end, so the wrap-around needs no branch). `bucket_`
// maps the top bits of a hash to the first point at or above that bucket's start, so a lookup is
// one table read and a branch-free count over a few values, instead of a binary search.
class KetamaRing {
 public:
  struct Point {
    uint32_t value;
    uint32_t server;
  };

  // Builds from points in insertion order. Tie rule (the one rule for every flavour): among
  // points with the same value, the one inserted first wins and the others are dropped. Callers
  // insert server by server in their flavour's server order, which reproduces twemproxy (glibc's
  // qsort is a stable merge sort, so its equal points stay in server order), libmemcached (its
  // comparator breaks ties by server index) and libketama (stable qsort, config order).
  static KetamaRing build(std::vector<Point> points, size_t server_count);

  // The server owning `hash`: the first point with value >= hash, wrapping to the first point
  // (twemproxy's ketama_dispatch, libmemcached's dispatch_host).
  uint32_t lookup(uint32_t hash) const {
    const uint32_t b = hash >> shift_;
    const uint32_t begin = bucket_[b];
    // Branch-free count of this bucket's points below `hash` over a fixed window: entries past
    // the bucket belong to later buckets (or are padding) and are all > hash, so they add 0.
    uint32_t i = begin;
    for (uint32_t j = 0; j < kWindow; ++j) {
      i += values_[begin + j] < hash ? 1U : 0U;
    }
    // A bucket fuller than the window (rare: ~1-2 points per bucket on average) scans on.
    const uint32_t end = bucket_[b + 1];
    if (end - begin > kWindow) [[unlikely]] {
      while (i < end && values_[i] < hash) {
        ++i;
      }
    }
    return owners_[i];
  }

  // Up to n distinct owners of the points from lookup(hash)'s clockwise, lookup(hash) first
  // (the key's replica set, Router::preferenceList); returns how many were written.
  uint32_t successors(uint32_t hash, uint32_t n, uint32_t* out) const;

  size_t pointCount() const { return point_count_; }
  size_t serverCount() const { return server_count_; }
  // The distinct point values, ascending (without the lookup padding).
  std::vector<uint32_t> values() const {
    return {values_.begin(), values_.begin() + static_cast<std::ptrdiff_t>(point_count_)};
  }
  uint32_t ownerAt(size_t i) const { return owners_[i]; }

  // Exact share of the 2^32 hash values each server owns: the sum of its arcs (prev, point].
  std::vector<double> ownership() const;

  size_t memoryBytes() const {
    return (values_.capacity() + owners_.capacity() + bucket_.capacity()) * sizeof(uint32_t);
  }

 private:
  static constexpr uint32_t kWindow = 8;

  std::vector<uint32_t> values_;  // point_count_ values, then kWindow of UINT32_MAX padding
  std::vector<uint32_t> owners_;  // point_count_ + 1 entries; the last repeats the first
  std::vector<uint32_t> bucket_;  // size 2^bits + 1
  uint32_t shift_ = 32;
  size_t point_count_ = 0;
  size_t server_count_ = 0;
};

}  // namespace mcring::routing
