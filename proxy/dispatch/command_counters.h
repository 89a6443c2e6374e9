// The counters a keyed request counts in, by CommandEffect (Read, Store, Delete, Touch, Other):
// per worker (`stats`; a keyed Read is mg, get/gets/gat/gats count per key elsewhere) and per
// backend (`stats backends`). Shared by the dispatcher's files.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "proxy/protocol/command.h"
#include "proxy/stats/backend_stats.h"
#include "proxy/stats/counters.h"

namespace mcring::core {

using WorkerCounter = std::atomic<uint64_t> stats::WorkerCounters::*;
using BackendCounter = std::atomic<uint64_t> stats::BackendStats::*;
inline constexpr WorkerCounter kWorkerCounterOf[] = {
    &stats::WorkerCounters::cmd_other, &stats::WorkerCounters::cmd_set,
    &stats::WorkerCounters::cmd_delete, &stats::WorkerCounters::cmd_touch,
    &stats::WorkerCounters::cmd_other};
inline constexpr BackendCounter kBackendCounterOf[] = {
    &stats::BackendStats::get_keys, &stats::BackendStats::stores, &stats::BackendStats::deletes,
    &stats::BackendStats::other_commands, &stats::BackendStats::other_commands};
static_assert(std::size(kWorkerCounterOf) ==
              static_cast<size_t>(protocol::CommandEffect::Other) + 1);
static_assert(std::size(kBackendCounterOf) ==
              static_cast<size_t>(protocol::CommandEffect::Other) + 1);

inline size_t effectIndex(protocol::Command c) {
  return static_cast<size_t>(protocol::commandEffect(c));
}

}  // namespace mcring::core
