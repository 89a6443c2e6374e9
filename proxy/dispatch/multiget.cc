// assembleMultiget: in-order reassembly of multi-get fragments.
#include "proxy/dispatch/multiget.h"

#include "proxy/protocol/reply_lines.h"

namespace mcring::core {

void assembleMultiget(PendingRequest& r, stats::WorkerCounters& counters) {
  if (r.failed) {
    r.reply.drain(r.reply.size());  // units a lone fragment streamed in before the failure
    r.reply.append(r.error_line);
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
