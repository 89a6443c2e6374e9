// Per-prefix counts of one pool (`stats detail on|off|dump`, memcached's prefix stats): gets,
// hits, sets and deletes by the part of each key before the pool's prefix_delimiter.
//
// Each worker writes a table of its own (PrefixCounts) and any thread reads them all, without a
// lock on the request path: a table is a fixed array of slots, each an atomic pointer to an entry
// that is filled once and then published (release); the counts are relaxed single-writer atomics
// (stats::bump). A table holds at most `max_prefixes` entries; the keys of any further prefix
// count in one overflow entry, so random prefixes cannot grow it. Entries are freed only with the
// table (a reload that changes the delimiter or the bound starts new tables).
//
// The dump reproduces memcached's: its lines come in the order of memcached's hash table
// (murmur3 of the prefix modulo 256, the bucket's newest prefix first), so one mcring in front of
// one memcached answers the same bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/stats/counters.h"

namespace mcring::stats {

// MurmurHash3_x86_32 with seed 0: memcached's default hash, which orders its prefix table.
uint32_t murmur3(std::string_view bytes);

// The prefix a key counts under (memcached's stats_prefix_find): the bytes before the first
// delimiter; false if the key has none (such keys are not counted, as in memcached) or a NUL
// comes first.
inline bool keyPrefix(std::string_view key, char delimiter, std::string_view* prefix) {
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == delimiter) {
      *prefix = key.substr(0, i);
      return true;
    }
    if (key[i] == '\0') {
      return false;
    }
  }
  return false;
}

enum class PrefixOp : uint8_t { Get, Hit, Set, Delete };

// What a pool without prefix stats points its switch at.
inline const std::atomic<bool> kPrefixStatsOff{false};

struct PrefixEntry {
  std::string prefix;
  uint32_t hash = 0;
  uint64_t first_seen = 0;  // PrefixStats' sequence when this prefix was first counted
  std::atomic<uint64_t> gets{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> sets{0};
  std::atomic<uint64_t> deletes{0};
};

// One prefix's counts, summed over workers.
struct PrefixRow {
  std::string prefix;
  uint32_t hash = 0;
  uint64_t first_seen = 0;
  uint64_t gets = 0;
  uint64_t hits = 0;
  uint64_t sets = 0;
  uint64_t deletes = 0;
  uint64_t requests() const { return gets + sets + deletes; }
};

// One worker's table. record() on the worker's thread only; read() from any thread.
class PrefixCounts {
 public:
  PrefixCounts(size_t max_prefixes, std::atomic<uint64_t>& sequence);
  ~PrefixCounts();
  PrefixCounts(const PrefixCounts&) = delete;
  PrefixCounts& operator=(const PrefixCounts&) = delete;

  void record(std::string_view prefix, PrefixOp op);
  // Adds this table's entries to `rows` (by prefix) and its overflow to `overflow`.
  void read(std::map<std::string, PrefixRow, std::less<>>* rows, PrefixRow* overflow) const;
  size_t size() const { return size_.load(std::memory_order_relaxed); }

 private:
  PrefixEntry* find(std::string_view prefix, uint32_t hash);

  const size_t max_;
  const size_t mask_;  // slots - 1 (slots: a power of two, at least twice max_)
  std::atomic<uint64_t>& sequence_;
  // Allocated at the first record (a pool whose detail is never turned on costs nothing).
  std::atomic<std::atomic<PrefixEntry*>*> slots_{nullptr};
  std::atomic<size_t> size_{0};
  PrefixEntry overflow_;
};

// One pool's prefix stats: the switch, the delimiter and every worker's table.
class PrefixStats {
 public:
  // The overflow line's prefix: `*` + delimiter + `other`; it holds the delimiter, so no real
  // prefix can have this name.
  static std::string overflowName(char delimiter) { return std::string("*") + delimiter + "other"; }

  PrefixStats(size_t workers, char delimiter, size_t max_prefixes);

  // Read on the request path: one relaxed load. Starts off, as in memcached.
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  const std::atomic<bool>& enabledFlag() const { return enabled_; }
  void setEnabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  char delimiter() const { return delimiter_; }
  size_t maxPrefixes() const { return max_; }
  PrefixCounts& worker(size_t i) { return *tables_[i]; }

  // Summed over workers: at most maxPrefixes() rows in memcached's dump order (first seen first
  // kept when the workers' tables together hold more), and the rest in `overflow`.
  std::vector<PrefixRow> rows(PrefixRow* overflow) const;
  // `stats detail dump`: "PREFIX <prefix> get <n> hit <n> set <n> del <n>\r\n" lines, the
  // overflow line if anything overflowed, then "END\r\n".
  std::string dump() const;

 private:
  const char delimiter_;
  const size_t max_;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> sequence_{0};
  std::vector<std::unique_ptr<PrefixCounts>> tables_;
};

// Every pool's PrefixStats, by pool name; the workers take theirs at each snapshot, the admin
// endpoint reads them all. The lock is taken at snapshots and by readers, never per request.
class PrefixStatsRegistry {
 public:
  explicit PrefixStatsRegistry(size_t workers) : workers_(workers) {}
  // The pool's stats, new if the delimiter or the bound changed (the switch carries over).
  std::shared_ptr<PrefixStats> forPool(const std::string& pool, char delimiter,
                                       size_t max_prefixes);
  void forget(const std::string& pool);
  std::map<std::string, std::shared_ptr<const PrefixStats>> snapshot() const;

 private:
  const size_t workers_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<PrefixStats>> pools_;
};

// Escapes what would break a text reply line: bytes below 0x21 and 0x7f as \xNN.
std::string printablePrefix(std::string_view prefix);

}  // namespace mcring::stats
