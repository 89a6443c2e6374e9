// assembleMultiget: in-order reassembly of multi-get fragments.
#include "proxy/dispatch/multiget.h"

#include <cstring>
#include <optional>

#include "proxy/protocol/reply_lines.h"

namespace mcring::core {
namespace {

// The common assembly in one copy per unit: where every fragment's held units lie in its buffer's
// first chunk and the reply is small, they are copied in key order into one reservation of the
// reply, END included, and each fragment's buffer is drained once; a buffer move per key costs
// ~340 instructions (bench/results/perf-profile.md). Returns the hits, or nothing having done
// nothing (units spanning chunks, many fragments, a large reply, units already in r.reply).
std::optional<uint32_t> gatherHeld(PendingRequest& r) {
  static constexpr uint32_t kMaxFragments = 16;
  static constexpr uint64_t kMaxGather = 64 * 1024;  // larger replies move whole chunks instead
  if (r.fragment_count > kMaxFragments) {
    return std::nullopt;
  }
  std::string_view held[kMaxFragments];  // a fragment's first chunk, viewed at its first unit
  size_t taken[kMaxFragments] = {};      // bytes of its units in the reply
  uint64_t total = 0;
  uint32_t hits = 0;
  for (uint32_t i = 0; i < r.key_count; ++i) {
    const uint64_t n = r.key_hit_length[i];
    if (n == 0) {
      continue;
    }
    ++hits;
    if (i < r.stream_key) {
      continue;  // written already
    }
    const uint32_t f = r.key_fragment[i];
    Fragment& fr = r.fragments[f];
    if (&multigetValueSink(r, fr) == &r.reply) {
      return std::nullopt;
    }
    if (taken[f] == 0) {
      held[f] = fr.values.front();
    }
    if (taken[f] + n > held[f].size()) {
      return std::nullopt;
    }
    taken[f] += n;
    total += n;
  }
  const size_t size = total + protocol::kEndLine.size();
  if (size > kMaxGather) {
    return std::nullopt;
  }
  const net::Buffer::Room room = r.reply.reserve(size);
  if (room.data == nullptr) {
    return std::nullopt;
  }
  char* at = room.data;
  size_t from[kMaxFragments] = {};
  for (uint32_t i = r.stream_key; i < r.key_count; ++i) {
    const uint64_t n = r.key_hit_length[i];
    if (n > 0) {
      const uint32_t f = r.key_fragment[i];
      std::memcpy(at, held[f].data() + from[f], n);
      from[f] += n;
      at += n;
    }
  }
  std::memcpy(at, protocol::kEndLine.data(), protocol::kEndLine.size());
  r.reply.commit(room, size);
  for (uint32_t f = 0; f < r.fragment_count; ++f) {
    r.fragments[f].values.drain(taken[f]);  // nothing for a fragment with no unit here
  }
  return hits;
}

}  // namespace

void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters) {
  if (r.failed) {
    r.reply.drain(r.reply.size());  // units a lone fragment streamed in before the failure
    r.reply.append(r.error_line);
    return;
  }
  if (const std::optional<uint32_t> hits = gatherHeld(r)) {
    stats::bump(counters.get_misses, r.key_count - *hits);
    return;
  }
  // Within a fragment, VALUE units arrived in the order its keys were sent, which is the
  // client's order; so taking key i's unit from the front of its fragment's buffer, for i in
  // client order, yields every unit in client order. The keys before stream_key were written
  // already (a multi-get streamed in key order).
  uint32_t hits = 0;
  for (uint32_t i = 0; i < r.key_count; ++i) {
    uint64_t n = r.key_hit_length[i];
    if (n > 0 && i < r.stream_key) {
      ++hits;
    } else if (n > 0) {
      Fragment& fr = r.fragments[r.key_fragment[i]];
      net::Buffer& values = multigetValueSink(r, fr);
      if (&values != &r.reply) {
        values.moveTo(r.reply, n);
      }
      ++hits;
    }
  }
  stats::bump(counters.get_misses, r.key_count - hits);
  r.reply.append(protocol::kEndLine);
}

uint32_t FragmentRound::join(uint32_t server, size_t add) {
  static constexpr size_t kMaxLine = 2000;  // see Dispatcher::kMaxBackendLine
  for (uint32_t f = first_; f < r_.fragment_count; ++f) {
    const uint32_t slot = f - first_;
    if (r_.fragments[f].server == server && slot < bytes_.size() &&
        bytes_[slot] + add <= kMaxLine) {
      bytes_[slot] += add;
      return f;
    }
  }
  const uint32_t f = r_.fragment_count++;
  if (r_.fragments.size() <= f) {
    r_.fragments.emplace_back();
  }
  Fragment& fr = r_.fragments[f];
  fr.clear();
  fr.server = server;
  if (f - first_ < bytes_.size()) {
    bytes_[f - first_] = add;
  }
  return f;
}

}  // namespace mcring::core
