// The stampede experiment's load: an open-loop, cache-aside memcached client on its own thread.
//
// Why not LoadGenerator: a cache-aside client must react to each reply (a get miss is followed by
// a set of that key, the value "read from the database"), which the load engine's fixed request
// mix cannot express. This client reuses the engine's parts (KeySpace, KeyChooser, Rng, the
// proxy's reply framer, the error kinds of load_stats.h) and keeps it small: one thread, one
// event_base, a few connections.
//
// Counters are kept per millisecond of completion time, so that the report can cut whole seconds
// aligned to any instant measured while it ran (the moment a reload was applied).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bench/mcring_bench/key_chooser.h"
#include "bench/mcring_bench/key_space.h"
#include "bench/mcring_bench/load_stats.h"

struct event;
struct event_base;

namespace mcring::bench {

// What completed in one millisecond. A get that ends in an error counts in gets (not in hits):
// for a cache-aside application a failed get is a miss that goes to the database.
struct StampedeSlot {
  uint32_t gets = 0;     // gets ended (reply or error)
  uint32_t hits = 0;     // of which returned the value
  uint32_t ops = 0;      // well-formed, non-error replies (gets and sets)
  uint32_t errors = 0;   // requests ended by an error (gets and sets)
  uint32_t refills = 0;  // refill sets stored
  uint32_t sets = 0;     // refill sets ended (stored, not stored, or an error): client writes

  void add(const StampedeSlot& o) {
    gets += o.gets;
    hits += o.hits;
    ops += o.ops;
    errors += o.errors;
    refills += o.refills;
    sets += o.sets;
  }
};

struct CacheAsideOptions {
  uint16_t port = 0;  // 127.0.0.1:port
  uint32_t connections = 8;
  uint32_t pipeline = 8;  // gets in flight per connection at most (refills may add as many)
  double rate = 1000;     // gets per second, scheduled at fixed times (open loop)
  double zipf = 0;        // 0: uniform
  uint64_t hot_keys = 0;  // hot_share of the gets go to keys 0..hot_keys-1 (KeyChooser)
  double hot_share = 0;
  uint32_t value_size = 100;
  bool refill = true;
  uint64_t seed = 1;
  uint32_t timeout_ms = 1000;
  double max_seconds = 60;  // slots kept; anything later is counted in the last one
};

class CacheAsideClient {
 public:
  static constexpr uint64_t kSlotNs = 1'000'000;

  CacheAsideClient(const CacheAsideOptions& options, const KeySpace& keys);
  ~CacheAsideClient();
  CacheAsideClient(const CacheAsideClient&) = delete;
  CacheAsideClient& operator=(const CacheAsideClient&) = delete;

  // Starts the thread; returns the start instant (CLOCK_MONOTONIC ns) that slot 0 begins at.
  uint64_t start();
  // Stops issuing, gives what is in flight up to --timeout, joins. Idempotent; any thread but
  // the client's own.
  void stop();

  // After stop(): slot i covers [start + i ms, start + (i + 1) ms).
  const std::vector<StampedeSlot>& slots() const { return slots_; }
  const std::array<uint64_t, kLoadErrorCount>& errorKinds() const { return error_kinds_; }
  // Gets that were due but never sent because every connection was full (rate not met).
  uint64_t unsent() const { return unsent_; }
  // Misses whose refill could not be queued (every connection full); the key stays cold.
  uint64_t refillsDropped() const { return refills_dropped_; }

  class Connection;  // stampede_client.cc

 private:
  friend class Connection;
  static void onSchedule(int, short, void* arg);
  static void onHousekeeping(int, short, void* arg);
  static void onDrain(int, short, void* arg);

  void run();
  void dispatch(uint64_t now_ns);
  Connection* pickForGet();
  void issueRefill(Connection& preferred, uint32_t key, uint64_t now_ns);
  void afterChange(uint64_t now_ns);  // a reply or failure freed slots
  void beginStop(uint64_t now_ns);
  void maybeFinish();
  void markDirty(Connection& c);
  void flushDirty();
  StampedeSlot& slotAt(uint64_t now_ns);
  void countError(LoadError why, bool get, uint64_t now_ns);

  const CacheAsideOptions options_;
  const KeySpace& keys_;
  const KeyChooser chooser_;
  Rng rng_;
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};
  bool started_ = false;

  // Client thread only, from here on.
  ::event_base* base_ = nullptr;
  ::event* schedule_event_ = nullptr;
  ::event* housekeeping_event_ = nullptr;
  ::event* drain_event_ = nullptr;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<Connection*> dirty_;
  std::vector<char> value_;
  size_t cursor_ = 0;
  uint64_t start_ns_ = 0;
  uint64_t issued_ = 0;  // gets sent = next schedule index
  bool stopping_ = false;
  bool backlogged_ = false;
  std::vector<StampedeSlot> slots_;
  std::array<uint64_t, kLoadErrorCount> error_kinds_{};
  uint64_t unsent_ = 0;
  uint64_t refills_dropped_ = 0;
};

}  // namespace mcring::bench
