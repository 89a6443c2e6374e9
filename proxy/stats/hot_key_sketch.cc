// HotKeySketch: Space-Saving over fixed slots, a linear-probing index and a min-heap by count.
#include "proxy/stats/hot_key_sketch.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace mcring::stats {

HotKeySketch::HotKeySketch(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      // At most half full, so probes stay short.
      mask_(std::bit_ceil(2 * capacity_) - 1),
      slots_(capacity_),
      index_(mask_ + 1, kEmpty),
      heap_(capacity_) {}

void HotKeySketch::record(std::string_view key, uint64_t hash) {
  if (key.size() > kMaxKeyLength) {
    return;
  }
  ++total_;
  for (size_t i = home(hash);; i = (i + 1) & mask_) {
    int32_t s = index_[i];
    if (s == kEmpty) {
      break;
    }
    Slot& slot = slots_[static_cast<size_t>(s)];
    if (slot.hash == hash && slot.length == key.size() &&
        std::memcmp(slot.key, key.data(), key.size()) == 0) {
      ++slot.count;
      siftDown(slot.heap_pos);
      return;
    }
  }
  uint32_t s;
  uint64_t inherited = 0;
  if (size_ < capacity_) {
    s = static_cast<uint32_t>(size_);
    heap_[size_] = s;
    slots_[s].heap_pos = static_cast<uint32_t>(size_);
    ++size_;
  } else {
    s = heap_[0];  // the least-counted key gives its place up
    indexErase(indexOf(s));
    inherited = slots_[s].count;
  }
  Slot& slot = slots_[s];
  slot.hash = hash;
  slot.count = inherited + 1;
  slot.error = inherited;
  slot.length = static_cast<uint8_t>(key.size());
  std::memcpy(slot.key, key.data(), key.size());
  indexInsert(s);
  if (inherited == 0) {
    siftUp(slot.heap_pos);
  } else {
    siftDown(slot.heap_pos);
  }
}

std::vector<HotKeySketch::Entry> HotKeySketch::top(size_t limit) const {
  std::vector<uint32_t> order(heap_.begin(), heap_.begin() + static_cast<ptrdiff_t>(size_));
  std::sort(order.begin(), order.end(), [this](uint32_t a, uint32_t b) {
    return slots_[a].count > slots_[b].count;
  });
  order.resize(std::min(order.size(), limit));
  std::vector<Entry> out;
  out.reserve(order.size());
  for (uint32_t s : order) {
    const Slot& slot = slots_[s];
    out.push_back({std::string(slot.key, slot.length), slot.count, slot.error});
  }
  return out;
}

uint64_t HotKeySketch::floor() const {
  // Until every slot is taken, every key seen is monitored: an unlisted key was never seen.
  return size_ < capacity_ ? 0 : slots_[heap_[0]].count;
}

size_t HotKeySketch::memoryBytes() const {
  return sizeof(*this) + slots_.capacity() * sizeof(Slot) +
         index_.capacity() * sizeof(int32_t) + heap_.capacity() * sizeof(uint32_t);
}

size_t HotKeySketch::memoryFor(size_t capacity) {
  capacity = std::max<size_t>(capacity, 1);
  return sizeof(HotKeySketch) + capacity * sizeof(Slot) +
         std::bit_ceil(2 * capacity) * sizeof(int32_t) + capacity * sizeof(uint32_t);
}

void HotKeySketch::clear() {
  size_ = 0;
  total_ = 0;
  std::fill(index_.begin(), index_.end(), kEmpty);
}

size_t HotKeySketch::indexOf(uint32_t s) const {
  size_t i = home(slots_[s].hash);
  while (index_[i] != static_cast<int32_t>(s)) {
    i = (i + 1) & mask_;
  }
  return i;
}

void HotKeySketch::indexInsert(uint32_t s) {
  size_t i = home(slots_[s].hash);
  while (index_[i] != kEmpty) {
    i = (i + 1) & mask_;
  }
  index_[i] = static_cast<int32_t>(s);
}

void HotKeySketch::indexErase(size_t pos) {
  size_t hole = pos;
  for (size_t j = (pos + 1) & mask_; index_[j] != kEmpty; j = (j + 1) & mask_) {
    size_t h = home(slots_[static_cast<size_t>(index_[j])].hash);
    // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
    bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (!stays) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = kEmpty;
}

void HotKeySketch::swapHeap(uint32_t a, uint32_t b) {
  std::swap(heap_[a], heap_[b]);
  slots_[heap_[a]].heap_pos = a;
  slots_[heap_[b]].heap_pos = b;
}

void HotKeySketch::siftDown(uint32_t pos) {
  const uint32_t n = static_cast<uint32_t>(size_);
  for (;;) {
    uint32_t l = 2 * pos + 1;
    if (l >= n) {
      return;
    }
    uint32_t c = l;
    if (l + 1 < n && slots_[heap_[l + 1]].count < slots_[heap_[l]].count) {
      c = l + 1;
    }
    if (slots_[heap_[c]].count >= slots_[heap_[pos]].count) {
      return;
    }
    swapHeap(pos, c);
    pos = c;
  }
}

void HotKeySketch::siftUp(uint32_t pos) {
  while (pos > 0) {
    uint32_t parent = (pos - 1) / 2;
    if (slots_[heap_[parent]].count <= slots_[heap_[pos]].count) {
      return;
    }
    swapHeap(pos, parent);
    pos = parent;
  }
}

}  // namespace mcring::stats
