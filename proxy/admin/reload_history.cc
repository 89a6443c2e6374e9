// ReloadHistory: a bounded, locked list of reload records.
#include "proxy/admin/reload_history.h"

#include <ctime>

namespace mcring::core {

const char* reloadResultName(ReloadResult r) {
  switch (r) {
    case ReloadResult::Applied:
      return "applied";
    case ReloadResult::Unchanged:
      return "unchanged";
    case ReloadResult::Failed:
      return "failed";
  }
  return "?";
}

uint64_t ReloadHistory::add(ReloadRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  record.id = next_id_++;
  record.time = static_cast<int64_t>(::time(nullptr));
  if (record.result == ReloadResult::Failed) {
    ++failures_;
    last_error_ = record.error;
  }
  records_.push_back(std::move(record));
  if (records_.size() > kKeep) {
    records_.pop_front();
  }
  return records_.back().id;
}

std::vector<ReloadRecord> ReloadHistory::recent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {records_.begin(), records_.end()};
}

uint64_t ReloadHistory::attempts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_id_ - 1;
}

uint64_t ReloadHistory::failures() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_;
}

std::string ReloadHistory::lastError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

}  // namespace mcring::core
