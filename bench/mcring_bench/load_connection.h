// One TCP connection of a load worker: pipelined requests out, replies framed in place.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "bench/mcring_bench/client_socket.h"
#include "bench/mcring_bench/load_stats.h"
#include "proxy/protocol/reply.h"

struct event;

namespace mcring::bench {

class LoadWorker;

// Lives on its worker's thread and event_base. Requests are appended to its socket's evbuffer and
// written in one writev per event-loop callback (the worker flushes dirty connections); replies
// are framed by protocol::frameReply where the socket read them, never copied.
//
// Every request issued ends exactly once: a reply, or an error when the connection fails
// (connect refused, reset, timeout, desync), which fails everything in flight. Requests may be
// issued while connecting; a refused connect then fails them, so refusals are counted per request.
class LoadConnection {
 public:
  // capacity: most requests ever in flight; keys_per_get: most keys in one get.
  LoadConnection(LoadWorker& worker, uint32_t capacity, uint32_t keys_per_get);
  ~LoadConnection();
  LoadConnection(const LoadConnection&) = delete;
  LoadConnection& operator=(const LoadConnection&) = delete;

  // Starts connecting if down (cancelling a pending reconnect). Failures surface later, from
  // the event loop, so that requests issued meanwhile are failed and counted.
  void connect();

  void setDepth(uint32_t depth) { depth_ = depth < capacity_ ? depth : capacity_; }
  bool canIssue() const { return socket_.state() != ClientSocket::State::Down && count_ < depth_; }
  uint32_t inflight() const { return count_; }
  // When the oldest request in flight was written; only meaningful if inflight() > 0.
  uint64_t oldestIssueNs() const { return ring_[head_].issued_ns; }

  // Append a request; the worker flushes. start_ns is where its latency is measured from.
  void issueGet(const uint32_t* keys, uint32_t count, uint64_t start_ns, uint64_t now_ns);
  void issueSet(uint32_t key, uint32_t value_length, uint64_t start_ns, uint64_t now_ns);
  // Writes what is buffered (if connected); waits for writability if the socket is full.
  void flush();
  // Fails every request in flight with `why`, closes, and reconnects after a pause if the
  // worker still wants traffic. also_ended: replies just accounted, reported to the worker with
  // the failures.
  void fail(LoadError why, uint32_t also_ended = 0);

  // Whether it is on the worker's list of connections to flush.
  bool dirty() const { return dirty_; }
  void setDirty(bool dirty) { dirty_ = dirty; }

 private:
  struct Pending {
    uint64_t start_ns;   // latency origin: scheduled time (open loop) or issue time
    uint64_t issued_ns;  // when it was written, for --timeout
    uint32_t hits;       // VALUEs seen so far (gets)
    uint16_t key_count;  // 0 for a set
    uint16_t cursor;     // next asked key a VALUE may match: replies come in asked order
  };

  static void onReadable(int fd, short what, void* arg);
  static void onWritable(int fd, short what, void* arg);
  static void onReconnect(int fd, short what, void* arg);

  void finishConnect();
  void readReplies();
  // Accounts one whole reply to the oldest request in flight (counting in *ended the requests it
  // ends); false if it is not a reply to that request.
  bool accountReply(const protocol::Reply& reply, std::string_view input, uint64_t now_ns,
                    uint32_t* ended);
  void push(uint64_t start_ns, uint64_t now_ns, uint16_t key_count);
  void pop();

  LoadWorker& worker_;
  const uint32_t capacity_;
  const uint32_t keys_per_get_;
  uint32_t depth_;
  bool dirty_ = false;
  ClientSocket socket_;
  event* reconnect_event_ = nullptr;

  // Requests in flight, oldest first: a ring of capacity_ slots, and capacity_ * keys_per_get_
  // asked key indices (slot i's keys at i * keys_per_get_). Allocated once.
  std::vector<Pending> ring_;
  std::vector<uint32_t> keys_;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
};

}  // namespace mcring::bench
