// What a worker holds for one pool's clients under the pool's memory budget, published for the
// admin endpoint (/metrics: mcring_pool_buffer_bytes, mcring_pool_buffer_limit_bytes).
//
// One writer (the worker: its MemoryBudgets store their use here as they change), read by other
// threads; the list's lock guards only the list (taken when a pool first appears on a worker,
// and by readers).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mcring::stats {

struct PoolMemory {
  explicit PoolMemory(std::string pool_name) : pool(std::move(pool_name)) {}
  const std::string pool;
  std::atomic<uint64_t> replies_used{0};  // held and unsent reply bytes
  std::atomic<uint64_t> reserve_used{0};  // held reply bytes of small clients past replies_used's
  std::atomic<uint64_t> inputs_used{0};   // large requests being received
  std::atomic<uint64_t> limit{0};         // this worker's share of both budgets
};

class PoolMemoryList {
 public:
  std::shared_ptr<PoolMemory> add(const std::string& pool);
  std::vector<std::shared_ptr<const PoolMemory>> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<PoolMemory>> list_;
};

struct PoolMemoryTotals {
  uint64_t used = 0;
  uint64_t limit = 0;
};
// Per pool, summed over workers.
std::map<std::string, PoolMemoryTotals> sumPoolMemory(
    const std::vector<const PoolMemoryList*>& lists);

}  // namespace mcring::stats
