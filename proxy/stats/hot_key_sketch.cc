// HotKeySketch: Space-Saving over fixed slots, a linear-probing index and a stream summary.
#include "proxy/stats/hot_key_sketch.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace mcring::stats {

HotKeySketch::HotKeySketch(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      // At most half full, so probes stay short.
      mask_(std::bit_ceil(2 * capacity_) - 1),
      hash_(capacity_),
      error_(capacity_),
      length_(capacity_),
      key_(capacity_ * kMaxKeyLength),
      bucket_(capacity_),
      prev_(capacity_),
      next_(capacity_),
      // A bucket holds at least one slot, so there are never more buckets than slots.
      bucket_count_(capacity_),
      bucket_head_(capacity_),
      bucket_prev_(capacity_),
      bucket_next_(capacity_),
      index_(mask_ + 1, kEmpty) {
  clear();
}

void HotKeySketch::record(std::string_view key, uint64_t hash) {
  if (key.size() > kMaxKeyLength) {
    return;
  }
  ++total_;
  for (size_t i = home(hash);; i = (i + 1) & mask_) {
    int32_t found = index_[i];
    if (found == kEmpty) {
      break;
    }
    const auto f = static_cast<uint32_t>(found);
    if (hash_[f] == hash && length_[f] == key.size() &&
        std::memcmp(&key_[f * kMaxKeyLength], key.data(), key.size()) == 0) {
      bump(f);
      return;
    }
  }
  uint32_t s;
  if (size_ < capacity_) {
    s = static_cast<uint32_t>(size_++);
    error_[s] = 0;
    // A new key counts 1: the bucket of 1 is the head of the list if it exists.
    if (min_bucket_ != kNone && bucket_count_[min_bucket_] == 1) {
      attach(s, min_bucket_);
    } else {
      attach(s, newBucket(1, kNone));
    }
  } else {
    s = bucket_head_[min_bucket_];  // a least-counted key gives its place up...
    indexErase(indexOf(s));
    error_[s] = bucket_count_[min_bucket_];  // ...and its count, as the newcomer's error
    bump(s);
  }
  hash_[s] = hash;
  length_[s] = static_cast<uint8_t>(key.size());
  std::memcpy(&key_[s * kMaxKeyLength], key.data(), key.size());
  indexInsert(s);
}

std::vector<HotKeySketch::Entry> HotKeySketch::top(size_t limit) const {
  std::vector<Entry> out;
  out.reserve(std::min(limit, size_));
  for (uint32_t b = max_bucket_; b != kNone && out.size() < limit; b = bucket_prev_[b]) {
    for (uint32_t s = bucket_head_[b]; s != kNone && out.size() < limit; s = next_[s]) {
      out.push_back(
          {std::string(&key_[s * kMaxKeyLength], length_[s]), bucket_count_[b], error_[s]});
    }
  }
  return out;
}

uint64_t HotKeySketch::floor() const {
  // Until every slot is taken, every key seen is monitored: an unlisted key was never seen.
  return size_ < capacity_ ? 0 : bucket_count_[min_bucket_];
}

size_t HotKeySketch::memoryBytes() const {
  return memoryFor(capacity_);
}

size_t HotKeySketch::memoryFor(size_t capacity) {
  capacity = std::max<size_t>(capacity, 1);
  const size_t per_slot =
      2 * sizeof(uint64_t) + sizeof(uint8_t) + kMaxKeyLength + 3 * sizeof(uint32_t);
  const size_t per_bucket = sizeof(uint64_t) + 3 * sizeof(uint32_t);
  return sizeof(HotKeySketch) + capacity * (per_slot + per_bucket) +
         std::bit_ceil(2 * capacity) * sizeof(int32_t);
}

void HotKeySketch::clear() {
  size_ = 0;
  total_ = 0;
  std::fill(index_.begin(), index_.end(), kEmpty);
  min_bucket_ = max_bucket_ = kNone;
  free_bucket_ = kNone;
  for (size_t b = capacity_; b-- > 0;) {
    bucket_next_[b] = free_bucket_;
    free_bucket_ = static_cast<uint32_t>(b);
  }
}

void HotKeySketch::bump(uint32_t s) {
  const uint32_t b = bucket_[s];
  const uint64_t count = bucket_count_[b] + 1;
  const uint32_t after = bucket_next_[b];
  if (after != kNone && bucket_count_[after] == count) {
    detach(s);
    attach(s, after);
  } else if (bucket_head_[b] == s && next_[s] == kNone) {
    bucket_count_[b] = count;  // alone in its bucket: the list stays sorted
  } else {
    const uint32_t nb = newBucket(count, b);
    detach(s);  // b keeps its other slots
    attach(s, nb);
  }
}

void HotKeySketch::attach(uint32_t s, uint32_t b) {
  bucket_[s] = b;
  prev_[s] = kNone;
  next_[s] = bucket_head_[b];
  if (next_[s] != kNone) {
    prev_[next_[s]] = s;
  }
  bucket_head_[b] = s;
}

void HotKeySketch::detach(uint32_t s) {
  const uint32_t b = bucket_[s];
  if (prev_[s] != kNone) {
    next_[prev_[s]] = next_[s];
  } else {
    bucket_head_[b] = next_[s];
  }
  if (next_[s] != kNone) {
    prev_[next_[s]] = prev_[s];
  }
  if (bucket_head_[b] == kNone) {
    unlinkBucket(b);
    bucket_next_[b] = free_bucket_;
    free_bucket_ = b;
  }
}

uint32_t HotKeySketch::newBucket(uint64_t count, uint32_t after) {
  const uint32_t b = free_bucket_;
  free_bucket_ = bucket_next_[b];
  bucket_count_[b] = count;
  bucket_head_[b] = kNone;
  bucket_prev_[b] = after;
  bucket_next_[b] = after == kNone ? min_bucket_ : bucket_next_[after];
  if (bucket_next_[b] != kNone) {
    bucket_prev_[bucket_next_[b]] = b;
  } else {
    max_bucket_ = b;
  }
  if (after != kNone) {
    bucket_next_[after] = b;
  } else {
    min_bucket_ = b;
  }
  return b;
}

void HotKeySketch::unlinkBucket(uint32_t b) {
  if (bucket_prev_[b] != kNone) {
    bucket_next_[bucket_prev_[b]] = bucket_next_[b];
  } else {
    min_bucket_ = bucket_next_[b];
  }
  if (bucket_next_[b] != kNone) {
    bucket_prev_[bucket_next_[b]] = bucket_prev_[b];
  } else {
    max_bucket_ = bucket_prev_[b];
  }
}

size_t HotKeySketch::indexOf(uint32_t s) const {
  size_t i = home(hash_[s]);
  while (index_[i] != static_cast<int32_t>(s)) {
    i = (i + 1) & mask_;
  }
  return i;
}

void HotKeySketch::indexInsert(uint32_t s) {
  size_t i = home(hash_[s]);
  while (index_[i] != kEmpty) {
    i = (i + 1) & mask_;
  }
  index_[i] = static_cast<int32_t>(s);
}

void HotKeySketch::indexErase(size_t pos) {
  size_t hole = pos;
  for (size_t j = (pos + 1) & mask_; index_[j] != kEmpty; j = (j + 1) & mask_) {
    size_t h = home(hash_[static_cast<size_t>(index_[j])]);
    // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (!stays) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = kEmpty;
}

}  // namespace mcring::stats
