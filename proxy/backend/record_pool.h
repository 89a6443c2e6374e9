// A worker's free list of one kind of per-request feature record (ReplicaWrite, SpreadState,
// WarmRequest, ReadFailover): records are made on first need and reused after, so a warm worker
// allocates none per request. Each record points back to its pool (`owner`) and gives itself
// back from its own `release`, which clears it first. Worker-thread only.
#pragma once

#include <memory>
#include <vector>

namespace mcring::core {

template <typename Record>
class RecordPool {
 public:
  Record* acquire() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<Record>());
      all_.back()->owner = this;
      return all_.back().get();
    }
    Record* r = free_.back();
    free_.pop_back();
    return r;
  }
  // `r`, cleared, is free again.
  void giveBack(Record* r) { free_.push_back(r); }

 private:
  std::vector<Record*> free_;
  std::vector<std::unique_ptr<Record>> all_;
};

}  // namespace mcring::core
