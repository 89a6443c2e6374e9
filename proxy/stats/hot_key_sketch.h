// HotKeySketch: the keys requested most often in a stream, in fixed memory (Space-Saving,
// Metwally, Agrawal and El Abbadi, "Efficient computation of frequent and top-k elements in data
// streams", 2005).
//
// It monitors `capacity` keys. A monitored key's request bumps its count; an unmonitored key
// takes the place of the monitored key with the smallest count and inherits that count plus one
// (its `error`: how much of the count may belong to the keys it replaced). So every count is an
// overestimate by at most its error, every key requested more than total/capacity times is
// monitored, and a key not monitored was requested at most floor() times.
//
// The counts are kept as Space-Saving's "stream summary": buckets of slots with equal counts, in
// a list sorted by count, so that a bump and an eviction are O(1) (a min-heap made every
// eviction sift the new key to the bottom past all the slots tied at the minimum: 100 ns a key on
// a uniform stream). All memory is taken by the constructor (slots with room for a key, a hash
// index, the buckets); a request never allocates, whatever the number of distinct keys. One thread
// writes and reads it (a worker, which publishes copies of top() for others: hot_key_board.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcring::stats {

class HotKeySketch {
 public:
  // memcached's keys are at most 250 bytes; a meta request's base64 key decodes to at most
  // that. Longer keys are not recorded (no valid request has one).
  static constexpr size_t kMaxKeyLength = 250;

  struct Entry {
    std::string key;
    uint64_t count = 0;  // an overestimate of the key's requests...
    uint64_t error = 0;  // ...by at most this much
  };

  explicit HotKeySketch(size_t capacity);
  HotKeySketch(const HotKeySketch&) = delete;
  HotKeySketch& operator=(const HotKeySketch&) = delete;

  // `hash`: any well-mixed 64-bit hash of the key, the same for equal keys (the caller has one:
  // HyperLogLog::hashKey, which the per-backend distinct-key sketch needs anyway).
  void record(std::string_view key, uint64_t hash);

  // The monitored keys by count, highest first; at most `limit` of them. Allocates (the copy).
  std::vector<Entry> top(size_t limit) const;
  // Requests recorded since clear().
  uint64_t total() const { return total_; }
  // An upper bound on the requests of any key top() does not list.
  uint64_t floor() const;
  size_t capacity() const { return capacity_; }
  // What the sketch holds, allocated once: the bound the configuration sets.
  size_t memoryBytes() const;
  static size_t memoryFor(size_t capacity);
  void clear();

 private:
  static constexpr int32_t kEmpty = -1;
  static constexpr uint32_t kNone = UINT32_MAX;

  size_t home(uint64_t hash) const { return static_cast<size_t>(hash) & mask_; }
  // The index position holding slot s (which is in the index).
  size_t indexOf(uint32_t s) const;
  void indexInsert(uint32_t s);
  void indexErase(size_t pos);  // backward-shift deletion keeps linear probing's invariant
  // Stream summary: moves slot s to the bucket of count + 1 (creating it after s's bucket if
  // needed, dropping s's bucket if it empties).
  void bump(uint32_t s);
  void attach(uint32_t s, uint32_t b);
  void detach(uint32_t s);  // from its bucket; frees the bucket if s was its last slot
  uint32_t newBucket(uint64_t count, uint32_t after);  // kNone: at the head
  void unlinkBucket(uint32_t b);

  size_t capacity_;
  size_t size_ = 0;
  size_t mask_;
  uint64_t total_ = 0;
  // Per slot, one dense array per field: the index compares hashes of many slots; a key's bytes
  // are read only on a hash match.
  std::vector<uint64_t> hash_;
  std::vector<uint64_t> error_;
  std::vector<uint8_t> length_;
  std::vector<char> key_;         // kMaxKeyLength bytes per slot
  std::vector<uint32_t> bucket_;  // the slot's bucket
  std::vector<uint32_t> prev_;    // the bucket's other slots (a doubly linked list)
  std::vector<uint32_t> next_;
  // Per bucket: its count, first slot, and neighbours in the list sorted by count (ascending).
  std::vector<uint64_t> bucket_count_;
  std::vector<uint32_t> bucket_head_;
  std::vector<uint32_t> bucket_prev_;
  std::vector<uint32_t> bucket_next_;  // also links the free buckets
  uint32_t min_bucket_ = kNone;
  uint32_t max_bucket_ = kNone;
  uint32_t free_bucket_ = kNone;
  std::vector<int32_t> index_;  // open addressing, linear probing: slot number or kEmpty
};

}  // namespace mcring::stats
