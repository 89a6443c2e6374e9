// PoolMemoryList: a locked list of per-pool budget gauges; sumPoolMemory adds them up per pool.
#include "proxy/stats/pool_memory.h"

namespace mcring::stats {

std::shared_ptr<PoolMemory> PoolMemoryList::add(const std::string& pool) {
  auto m = std::make_shared<PoolMemory>(pool);
  std::lock_guard<std::mutex> lock(mutex_);
  list_.push_back(m);
  return m;
}

std::vector<std::shared_ptr<const PoolMemory>> PoolMemoryList::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {list_.begin(), list_.end()};
}

std::map<std::string, PoolMemoryTotals> sumPoolMemory(
    const std::vector<const PoolMemoryList*>& lists) {
  std::map<std::string, PoolMemoryTotals> out;
  for (const PoolMemoryList* list : lists) {
    for (const auto& m : list->snapshot()) {
      PoolMemoryTotals& t = out[m->pool];
      t.used += m->replies_used.load(std::memory_order_relaxed) +
                m->reserve_used.load(std::memory_order_relaxed) +
                m->inputs_used.load(std::memory_order_relaxed);
      t.limit += m->limit.load(std::memory_order_relaxed);
    }
  }
  return out;
}

}  // namespace mcring::stats
