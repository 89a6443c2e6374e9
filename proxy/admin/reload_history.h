// The record of every reload attempt: what asked for it, what happened, what changed.
//
// Written by the main thread, read by workers (`stats reloads`) and the admin endpoint; a mutex
// is fine here, this is never on the request path.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace mcring::core {

enum class ReloadResult : uint8_t { Applied, Unchanged, Failed };

struct ReloadRecord {
  uint64_t id = 0;
  int64_t time = 0;    // unix seconds
  std::string source;  // signal, file, admin
  ReloadResult result = ReloadResult::Unchanged;
  uint64_t generation = 0;  // in force after the attempt
  std::string diff;         // ConfigDiff::summary() when applied
  std::string error;        // first error(s) when failed
};

const char* reloadResultName(ReloadResult r);

class ReloadHistory {
 public:
  static constexpr size_t kKeep = 64;

  // Appends a record (id and time are filled in) and returns its id.
  uint64_t add(ReloadRecord record);
  std::vector<ReloadRecord> recent() const;
  uint64_t attempts() const;
  uint64_t failures() const;
  std::string lastError() const;

 private:
  mutable std::mutex mutex_;
  std::deque<ReloadRecord> records_;
  uint64_t next_id_ = 1;
  uint64_t failures_ = 0;
  std::string last_error_;
};

}  // namespace mcring::core
