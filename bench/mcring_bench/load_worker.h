// One load-generating thread: its event_base, its connections, its share of keys and schedule.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/mcring_bench/key_chooser.h"
#include "bench/mcring_bench/key_space.h"
#include "bench/mcring_bench/load_connection.h"
#include "bench/mcring_bench/load_options.h"
#include "bench/mcring_bench/load_stats.h"
#include "bench/mcring_bench/rng.h"
#include "proxy/protocol/reply_parser.h"

struct event;
struct event_base;

namespace mcring::bench {

// Built on the controller thread, then run by exactly one thread at a time (warm(), then
// measure()); everything in it belongs to that thread except the stop flag it polls.
// Shared-nothing: its counters and histogram are published once a second, never locked.
class LoadWorker {
 public:
  // Receives each finished second (and, with last = true, the partial one at the end), on
  // this worker's thread.
  using Publish = std::function<void(const IntervalStats& interval, bool last)>;

  // index of threads: this worker's place, which interleaves its open-loop schedule with the
  // others'. request_quota: its share of --requests (UINT64_MAX when unbounded).
  LoadWorker(const LoadOptions& options, const KeySpace& keys, const KeyChooser& chooser,
             uint32_t index, uint32_t connections, uint64_t request_quota,
             const std::atomic<bool>* stop);
  ~LoadWorker();
  LoadWorker(const LoadWorker&) = delete;
  LoadWorker& operator=(const LoadWorker&) = delete;

  // Sets keys [first, last) once each, pipelined, until done or deadline_ns.
  void warm(uint64_t first, uint64_t last, uint64_t deadline_ns);
  const LoadCounters& warmCounters() const { return warm_.counters; }

  // The measured run, from start_ns (shared by all workers) until the deadline, the request
  // quota or a stop request; then waits up to --timeout for what is in flight.
  void measure(uint64_t start_ns, const Publish& publish);
  // Open loop: requests that were due before the run stopped but never sent because every
  // connection was full (the server fell behind the rate).
  uint64_t unsent() const { return unsent_; }

  // For this worker's LoadConnections.
  event_base* base() const { return base_; }
  const Endpoint& endpoint() const { return options_.server; }
  const KeySpace& keySpace() const { return keys_; }
  const protocol::ReplyParser& parser() const { return parser_; }
  char* scratch() { return scratch_.data(); }
  const char* valueBytes() const { return value_bytes_.data(); }
  IntervalStats& sink() { return *sink_; }
  bool wantsReconnect() const { return !stopping_; }
  void afterReplies(LoadConnection& connection, uint32_t ended, uint64_t now_ns);
  void afterFailure(LoadConnection& connection, uint32_t ended);
  void afterConnect(LoadConnection& connection);
  // Writes every connection that got requests since the last flush; called at the end of each
  // event callback, so a callback's requests leave in one writev per connection.
  void flushDirty();

 private:
  enum class Phase : uint8_t { Warm, Measure };

  static void onTick(int, short, void* arg);
  static void onDeadline(int, short, void* arg);
  static void onDrain(int, short, void* arg);
  static void onHousekeeping(int, short, void* arg);
  static void onSchedule(int, short, void* arg);

  void runPhase(uint64_t now_ns);
  void armTick(uint64_t now_ns);
  bool wantsMore() const;
  void fill(LoadConnection& connection, uint64_t now_ns);
  void dispatch(uint64_t now_ns);
  LoadConnection* pickConnection();
  void issueOne(LoadConnection& connection, uint64_t start_ns, uint64_t now_ns);
  uint32_t valueLength();
  uint64_t scheduledNs(uint64_t i) const;
  void stop(uint64_t now_ns);
  void maybeFinish();
  void finish();
  void markDirty(LoadConnection& connection);

  const LoadOptions& options_;
  const KeySpace& keys_;
  const KeyChooser& chooser_;
  const uint32_t index_;
  const uint64_t quota_;
  const std::atomic<bool>* stop_requested_;
  protocol::ReplyParser parser_;
  Rng rng_;

  event_base* base_ = nullptr;
  event* tick_event_ = nullptr;
  event* deadline_event_ = nullptr;
  event* drain_event_ = nullptr;
  event* housekeeping_event_ = nullptr;
  event* schedule_event_ = nullptr;

  std::vector<std::unique_ptr<LoadConnection>> connections_;
  std::vector<LoadConnection*> dirty_;
  std::vector<LoadConnection*> flushing_;
  size_t cursor_ = 0;  // open loop: round-robin start for the next free connection
  std::vector<char> scratch_;
  std::vector<char> value_bytes_;
  std::vector<uint32_t> get_keys_;

  // The current phase.
  Phase phase_ = Phase::Warm;
  uint64_t start_ns_ = 0;
  uint64_t deadline_ns_ = 0;
  uint64_t issued_ = 0;  // measure: requests sent (= next open-loop schedule index)
  uint64_t inflight_ = 0;
  bool stopping_ = false;
  bool finished_ = false;
  bool backlogged_ = false;  // open loop: a due request waits for a free connection
  uint64_t next_warm_ = 0;
  uint64_t warm_last_ = 0;

  IntervalStats* sink_ = nullptr;
  IntervalStats warm_;
  IntervalStats interval_;  // the second in progress
  uint32_t second_ = 1;
  const Publish* publish_ = nullptr;
  uint64_t unsent_ = 0;
};

}  // namespace mcring::bench
