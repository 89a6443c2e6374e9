// HotKeyBoard: the workers' latest windows, merged per pool on read.
#include "proxy/stats/hot_key_board.h"

#include <algorithm>
#include <unordered_map>

namespace mcring::stats {

void HotKeyBoard::publish(int worker, const std::string& pool, HotKeyWindow window) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_[{pool, worker}] = std::move(window);
}

void HotKeyBoard::withdraw(int worker, const std::string& pool) {
  std::lock_guard<std::mutex> lock(mutex_);
  windows_.erase({pool, worker});
}

MergedHotKeys HotKeyBoard::merged(const std::string& pool, int64_t now_ms, size_t limit) const {
  MergedHotKeys out;
  struct Sum {
    uint64_t count = 0;
    double rate = 0;
    double error = 0;
    uint32_t workers = 0;  // whose window lists the key
  };
  std::unordered_map<std::string, Sum> sums;
  double floor_rate = 0;  // sum over workers of floor/length: the error where a key is unlisted
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = windows_.lower_bound({pool, -1}); it != windows_.end() && it->first.first == pool;
       ++it) {
    const HotKeyWindow& w = it->second;
    if (w.end_ms + 2 * kWindowMs < now_ms || w.end_ms <= w.start_ms) {
      continue;
    }
    const double seconds = static_cast<double>(w.end_ms - w.start_ms) / 1000.0;
    out.start_ms = out.workers == 0 ? w.start_ms : std::min(out.start_ms, w.start_ms);
    out.end_ms = std::max(out.end_ms, w.end_ms);
    ++out.workers;
    out.request_rate += static_cast<double>(w.total) / seconds;
    out.memory_bytes += w.memory_bytes;
    const double floor = static_cast<double>(w.floor) / seconds;
    floor_rate += floor;
    for (const HotKeySketch::Entry& e : w.top) {
      Sum& s = sums[e.key];
      s.count += e.count;
      s.rate += static_cast<double>(e.count) / seconds;
      // A listed key's count is over by at most its error; where a worker does not list it,
      // that worker may still have seen it up to its floor.
      s.error += static_cast<double>(e.error) / seconds - floor;
      ++s.workers;
    }
  }
  out.keys.reserve(sums.size());
  for (auto& [key, s] : sums) {
    const double error = std::max(0.0, s.error + floor_rate);
    if (s.rate - error <= floor_rate) {
      continue;  // not significant against the sketch's error (see merged())
    }
    MergedHotKey k;
    k.key = key;
    k.count = s.count;
    k.rate = s.rate;
    k.error = error;
    k.share = out.request_rate > 0 ? s.rate / out.request_rate : 0;
    out.keys.push_back(std::move(k));
  }
  std::sort(out.keys.begin(), out.keys.end(), [](const MergedHotKey& a, const MergedHotKey& b) {
    return a.rate != b.rate ? a.rate > b.rate : a.key < b.key;
  });
  if (out.keys.size() > limit) {
    out.keys.resize(limit);
  }
  return out;
}

}  // namespace mcring::stats
