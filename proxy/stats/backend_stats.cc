// BackendStatsList and the cross-worker sum.
#include "proxy/stats/backend_stats.h"

#include <algorithm>
#include <map>

namespace mcring::stats {

std::shared_ptr<BackendStats> BackendStatsList::add(const std::string& pool,
                                                    const std::string& identity,
                                                    const std::string& name) {
  auto s = std::make_shared<BackendStats>(pool, identity, name);
  std::lock_guard<std::mutex> lock(mutex_);
  list_.push_back(s);
  return s;
}

void BackendStatsList::remove(const BackendStats* stats) {
  std::lock_guard<std::mutex> lock(mutex_);
  list_.erase(std::remove_if(list_.begin(), list_.end(),
                             [stats](const auto& s) { return s.get() == stats; }),
              list_.end());
}

std::vector<std::shared_ptr<const BackendStats>> BackendStatsList::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {list_.begin(), list_.end()};
}

std::vector<BackendTotals> sumBackends(const std::vector<const BackendStatsList*>& lists) {
  std::vector<BackendTotals> out;
  std::map<std::pair<std::string, std::string>, size_t> index;
  std::map<size_t, std::unique_ptr<HyperLogLog>> sketches;
  for (const BackendStatsList* list : lists) {
    for (const auto& s : list->snapshot()) {
      auto key = std::make_pair(s->pool, s->identity);
      auto it = index.find(key);
      size_t i;
      if (it == index.end()) {
        i = out.size();
        index.emplace(key, i);
        out.push_back(BackendTotals{s->pool, s->identity, s->name});
        sketches.emplace(i, std::make_unique<HyperLogLog>(s->keys.precision()));
      } else {
        i = it->second;
      }
      BackendTotals& t = out[i];
#define MCRING_X(field, kind, help) t.field += s->field.load(std::memory_order_relaxed);
      MCRING_BACKEND_COUNTERS(MCRING_X)
#undef MCRING_X
      s->latency.addTo(t.latency);
      sketches[i]->merge(s->keys);
    }
  }
  for (auto& [i, sketch] : sketches) {
    out[i].distinct_keys = sketch->estimate();
  }
  return out;
}

}  // namespace mcring::stats
