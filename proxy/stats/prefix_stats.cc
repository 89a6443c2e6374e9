#include "proxy/stats/prefix_stats.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace mcring::stats {

namespace {

uint32_t rotl(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

// memcached's PREFIX_HASH_SIZE: the buckets its dump walks in order.
constexpr uint32_t kMemcachedBuckets = 256;

size_t slotsFor(size_t max_prefixes) {
  size_t n = 16;
  while (n < 2 * max_prefixes) {
    n *= 2;
  }
  return n;
}

}  // namespace

uint32_t murmur3(std::string_view bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t len = bytes.size();
  const size_t blocks = len / 4;
  constexpr uint32_t c1 = 0xcc9e2d51;
  constexpr uint32_t c2 = 0x1b873593;
  uint32_t h = 0;
  for (size_t i = 0; i < blocks; ++i) {
    uint32_t k = 0;
    std::memcpy(&k, data + 4 * i, 4);  // little-endian, as memcached reads it on x86 and arm64
    k *= c1;
    k = rotl(k, 15);
    k *= c2;
    h ^= k;
    h = rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  const uint8_t* tail = data + 4 * blocks;
  uint32_t k = 0;
  switch (len & 3) {
    case 3:
      k ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= tail[0];
      k *= c1;
      k = rotl(k, 15);
      k *= c2;
      h ^= k;
      break;
    default:
      break;
  }
  h ^= static_cast<uint32_t>(len);
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

PrefixCounts::PrefixCounts(size_t max_prefixes, std::atomic<uint64_t>& sequence)
    : max_(max_prefixes), mask_(slotsFor(max_prefixes) - 1), sequence_(sequence) {}

PrefixCounts::~PrefixCounts() {
  std::atomic<PrefixEntry*>* slots = slots_.load(std::memory_order_acquire);
  if (slots == nullptr) {
    return;
  }
  for (size_t i = 0; i <= mask_; ++i) {
    delete slots[i].load(std::memory_order_relaxed);
  }
  delete[] slots;
}

PrefixEntry* PrefixCounts::find(std::string_view prefix, uint32_t hash) {
  std::atomic<PrefixEntry*>* slots = slots_.load(std::memory_order_relaxed);  // ours
  if (slots == nullptr) {
    slots = new std::atomic<PrefixEntry*>[mask_ + 1]();
    slots_.store(slots, std::memory_order_release);
  }
  size_t i = hash & mask_;
  // At most max_ entries in at least 2 * max_ slots: the probe always reaches an empty slot.
  for (;; i = (i + 1) & mask_) {
    PrefixEntry* e = slots[i].load(std::memory_order_relaxed);
    if (e == nullptr) {
      break;
    }
    if (e->hash == hash && e->prefix == prefix) {
      return e;
    }
  }
  const size_t n = size_.load(std::memory_order_relaxed);
  if (n >= max_) {
    return &overflow_;
  }
  auto* e = new PrefixEntry;
  e->prefix.assign(prefix);
  e->hash = hash;
  e->first_seen = sequence_.fetch_add(1, std::memory_order_relaxed);
  slots[i].store(e, std::memory_order_release);  // readers see it whole
  size_.store(n + 1, std::memory_order_relaxed);
  return e;
}

void PrefixCounts::record(std::string_view prefix, PrefixOp op) {
  PrefixEntry* e = find(prefix, murmur3(prefix));
  switch (op) {
    case PrefixOp::Get:
      bump(e->gets);
      break;
    case PrefixOp::Hit:
      bump(e->hits);
      break;
    case PrefixOp::Set:
      bump(e->sets);
      break;
    case PrefixOp::Delete:
      bump(e->deletes);
      break;
  }
}

namespace {

void addCounts(const PrefixEntry& e, PrefixRow* row) {
  row->gets += e.gets.load(std::memory_order_relaxed);
  row->hits += e.hits.load(std::memory_order_relaxed);
  row->sets += e.sets.load(std::memory_order_relaxed);
  row->deletes += e.deletes.load(std::memory_order_relaxed);
}

void addRow(const PrefixRow& from, PrefixRow* to) {
  to->gets += from.gets;
  to->hits += from.hits;
  to->sets += from.sets;
  to->deletes += from.deletes;
}

}  // namespace

void PrefixCounts::read(std::map<std::string, PrefixRow, std::less<>>* rows,
                        PrefixRow* overflow) const {
  std::atomic<PrefixEntry*>* slots = slots_.load(std::memory_order_acquire);
  if (slots == nullptr) {
    return;
  }
  for (size_t i = 0; i <= mask_; ++i) {
    const PrefixEntry* e = slots[i].load(std::memory_order_acquire);
    if (e == nullptr) {
      continue;
    }
    auto [it, added] = rows->try_emplace(e->prefix);
    PrefixRow& row = it->second;
    if (added) {
      row.prefix = e->prefix;
      row.hash = e->hash;
      row.first_seen = e->first_seen;
    } else {
      row.first_seen = std::min(row.first_seen, e->first_seen);
    }
    addCounts(*e, &row);
  }
  addCounts(overflow_, overflow);
}

PrefixStats::PrefixStats(size_t workers, char delimiter, size_t max_prefixes)
    : delimiter_(delimiter), max_(max_prefixes) {
  for (size_t i = 0; i < workers; ++i) {
    tables_.push_back(std::make_unique<PrefixCounts>(max_prefixes, sequence_));
  }
}

std::vector<PrefixRow> PrefixStats::rows(PrefixRow* overflow) const {
  std::map<std::string, PrefixRow, std::less<>> merged;
  for (const auto& t : tables_) {
    t->read(&merged, overflow);
  }
  std::vector<PrefixRow> out;
  out.reserve(merged.size());
  for (auto& [prefix, row] : merged) {
    out.push_back(std::move(row));
  }
  if (out.size() > max_) {
    // Workers saw different prefixes: keep the first seen, as one table would have.
    std::sort(out.begin(), out.end(),
              [](const PrefixRow& a, const PrefixRow& b) { return a.first_seen < b.first_seen; });
    for (size_t i = max_; i < out.size(); ++i) {
      addRow(out[i], overflow);
    }
    out.resize(max_);
  }
  // memcached's order: bucket by bucket, the newest prefix of a bucket first.
  std::sort(out.begin(), out.end(), [](const PrefixRow& a, const PrefixRow& b) {
    const uint32_t ba = a.hash % kMemcachedBuckets;
    const uint32_t bb = b.hash % kMemcachedBuckets;
    return ba != bb ? ba < bb : a.first_seen > b.first_seen;
  });
  return out;
}

std::string PrefixStats::dump() const {
  PrefixRow overflow;
  overflow.prefix = overflowName(delimiter_);
  std::vector<PrefixRow> rows = this->rows(&overflow);
  if (overflow.requests() > 0) {
    rows.push_back(overflow);
  }
  std::string out;
  out.reserve(rows.size() * 64 + 8);
  char counts[128];
  for (const PrefixRow& r : rows) {
    out += "PREFIX ";
    out += r.prefix == overflow.prefix ? r.prefix : printablePrefix(r.prefix);
    std::snprintf(counts, sizeof counts, " get %llu hit %llu set %llu del %llu\r\n",
                  static_cast<unsigned long long>(r.gets), static_cast<unsigned long long>(r.hits),
                  static_cast<unsigned long long>(r.sets),
                  static_cast<unsigned long long>(r.deletes));
    out += counts;
  }
  out += "END\r\n";
  return out;
}

std::shared_ptr<PrefixStats> PrefixStatsRegistry::forPool(const std::string& pool, char delimiter,
                                                          size_t max_prefixes) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::shared_ptr<PrefixStats>& s = pools_[pool];
  if (s && s->delimiter() == delimiter && s->maxPrefixes() == max_prefixes) {
    return s;
  }
  auto next = std::make_shared<PrefixStats>(workers_, delimiter, max_prefixes);
  if (s) {
    next->setEnabled(s->enabled());
  }
  s = next;
  return next;
}

void PrefixStatsRegistry::forget(const std::string& pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  pools_.erase(pool);
}

std::map<std::string, std::shared_ptr<const PrefixStats>> PrefixStatsRegistry::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {pools_.begin(), pools_.end()};
}

std::string printablePrefix(std::string_view prefix) {
  std::string out;
  out.reserve(prefix.size());
  for (unsigned char c : prefix) {
    if (c < 0x21 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace mcring::stats
