// The pool handlers (dispatch/pool_handler.h, pool_handlers.h) on their own: which handlers a
// pool's config lists and in what order, and what each decides for a request, against a context
// that records what it is asked to do (no sockets, no worker). What the decisions do on the wire
// is replication_test.cc's, spread_test.cc's, warmup_test.cc's and the integration tests'.
#include "proxy/dispatch/pool_handlers.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "proxy/dispatch/route_tree.h"
#include "proxy/protocol/request_parser.h"

using mcring::core::buildPoolHandlers;
using mcring::core::KeyedCall;
using mcring::core::PendingRequest;
using mcring::core::PoolContext;
using mcring::core::PoolRuntime;
using mcring::core::RetrievalCall;
using mcring::core::SpreadEntry;
using mcring::core::SpreadRead;
using mcring::core::SpreadUse;

namespace {

// What the handlers asked for, in order, as short strings.
class Recorder final : public PoolContext {
 public:
  explicit Recorder(const std::string& line) : line_(line) {
    mcring::protocol::RequestParser parser;
    REQUIRE(parser.parse(line_, req_) == mcring::protocol::ParseStatus::Ok);
  }
  std::vector<std::string> calls;
  PoolRuntime pool_;

  PoolRuntime& pool() override { return pool_; }
  mcring::core::WorkerContext& worker() override {
    FAIL("a handler asked for the worker where this test expects none");
    std::abort();
  }
  const mcring::protocol::Request& request() const override { return req_; }
  uint64_t sessionId() const override { return 7; }
  std::string& scratchLine() override { return scratch_; }
  void sendToReplicas(KeyedCall& call) override {
    calls.push_back("replicas " + std::string(call.key));
  }
  void sendToOtherReplicas(std::string_view key, uint32_t read_at, std::string_view line) override {
    calls.push_back("other-replicas " + std::string(key) + " but " + std::to_string(read_at) +
                    ": " + std::string(line));
  }
  void keepForNextReplica(KeyedCall& call) override {
    calls.push_back("keep " + std::string(call.key));
  }
  void sendToNextReplica(KeyedCall& call) override {
    calls.push_back("next-replica " + std::string(call.key));
  }
  uint32_t readCopy(const std::shared_ptr<SpreadEntry>&) override {
    calls.push_back("read-copy");
    return 1;
  }
  void sendToCopies(KeyedCall& call) override {
    calls.push_back("copies " + std::string(call.key));
  }
  void invalidatePrevious(KeyedCall& call, mcring::core::BackendServer&) override {
    calls.push_back("invalidate " + std::string(call.key));
  }

  KeyedCall call() {
    KeyedCall c;
    c.r = &request_;
    c.line = line_;
    c.key = req_.routingKey(line_, 0);
    return c;
  }
  const std::string& line() const { return line_; }
  // A retrieval with its keys on `servers`.
  RetrievalCall retrieval(std::vector<uint32_t>& servers) {
    RetrievalCall c;
    c.line = line_;
    c.servers = servers;
    c.spread_reads = &reads_;
    return c;
  }

 private:
  std::string line_;
  mcring::protocol::Request req_;
  std::string scratch_;
  PendingRequest request_;
  std::vector<SpreadRead> reads_;
};

std::vector<std::string> kinds(const mcring::config::PoolConfig& pc) {
  std::vector<std::string> out;
  for (const auto& h : buildPoolHandlers(pc)) {
    out.emplace_back(h->kind());
  }
  return out;
}

mcring::config::PoolConfig allFeatures() {
  mcring::config::PoolConfig pc;
  pc.routing.replicas = 2;
  pc.hot_key_spread = 2;
  pc.warmup_window_ms = 1000;
  return pc;
}

// The handler of that kind in a pool with every feature on.
std::shared_ptr<const mcring::core::PoolHandler> handlerOf(std::string_view kind) {
  for (const auto& h : buildPoolHandlers(allFeatures())) {
    if (h->kind() == kind) {
      return h;
    }
  }
  FAIL("no handler " << kind);
  return nullptr;
}

}  // namespace

TEST_CASE(
    "a pool's config lists its handlers: none by default, else replication, spread, warm-up") {
  mcring::config::PoolConfig plain;
  CHECK(kinds(plain).empty());
  mcring::config::PoolConfig replicated;
  replicated.routing.replicas = 3;
  CHECK(kinds(replicated) == std::vector<std::string>{"replication"});
  mcring::config::PoolConfig warm;
  warm.warmup_window_ms = 500;
  CHECK(kinds(warm) == std::vector<std::string>{"warmup"});
  CHECK(kinds(allFeatures()) == std::vector<std::string>{"replication", "spread", "warmup"});
}

TEST_CASE("replication takes a write to every replica, and not a read") {
  const auto h = handlerOf("replication");
  for (const std::string line : {"set k 0 0 1\r\n", "delete k\r\n", "touch k 10\r\n",
                                 "ms k 1 T5\r\n", "md k q\r\n", "ma k\r\n", "incr k 1\r\n"}) {
    Recorder rec(line);
    KeyedCall call = rec.call();
    CHECK(h->takeKeyed(rec, call));
    CHECK(rec.calls == std::vector<std::string>{"replicas k"});
  }
  Recorder read("mg k v\r\n");
  KeyedCall call = read.call();
  CHECK_FALSE(h->takeKeyed(read, call));
  CHECK(read.calls.empty());
}

TEST_CASE("replication: a read at one replica goes to the next when that one cannot take it") {
  const auto h = handlerOf("replication");
  Recorder rec("mg k v\r\n");
  KeyedCall call = rec.call();
  // Not placed by replication (a request it does not read at a replica): nothing to do.
  CHECK_FALSE(h->keyedUnavailable(rec, call));
  CHECK_FALSE(h->sendKeyed(rec, call));
  CHECK(rec.calls.empty());
  call.replicated_read = true;
  CHECK(h->keyedUnavailable(rec, call));
  CHECK_FALSE(h->sendKeyed(rec, call));  // kept for the next replica, sent by dispatch
  CHECK(rec.calls == std::vector<std::string>{"next-replica k", "keep k"});
  // A warm-up second hop keeps state of its own and takes no replica failover.
  rec.calls.clear();
  call.warm_hop = true;
  CHECK_FALSE(h->sendKeyed(rec, call));
  CHECK(rec.calls.empty());
}

TEST_CASE("replication: an mg with T gives the key's other replicas the same TTL") {
  const auto h = handlerOf("replication");
  Recorder rec("mg k v T30\r\n");
  KeyedCall call = rec.call();
  call.index = 2;
  h->placedKeyed(rec, call);
  CHECK(rec.calls.empty());  // not a replicated read
  call.replicated_read = true;
  h->placedKeyed(rec, call);
  CHECK(rec.calls == std::vector<std::string>{"other-replicas k but 2: mg k T30\r\n"});
  Recorder plain("mg k v\r\n");
  KeyedCall no_ttl = plain.call();
  no_ttl.replicated_read = true;
  h->placedKeyed(plain, no_ttl);
  CHECK(plain.calls.empty());
}

TEST_CASE(
    "replication splits every retrieval per key, and a gat touches each key's other replicas") {
  const auto h = handlerOf("replication");
  Recorder get("get a b\r\n");
  std::vector<uint32_t> servers{0, 1};
  RetrievalCall call = get.retrieval(servers);
  h->placedKeys(get, call);
  CHECK(call.split);
  CHECK(get.calls.empty());
  Recorder gat("gat 60 a b\r\n");
  RetrievalCall touch = gat.retrieval(servers);
  h->placedKeys(gat, touch);
  CHECK(gat.calls == std::vector<std::string>{"other-replicas a but 0: touch a 60\r\n",
                                              "other-replicas b but 1: touch b 60\r\n"});
}

TEST_CASE("spread sends a spread key's write to every copy, and nothing else") {
  const auto h = handlerOf("spread");
  auto entry = std::make_shared<SpreadEntry>("k", std::vector<uint32_t>{0, 1});
  Recorder rec("set k 0 0 1\r\n");
  KeyedCall call = rec.call();
  CHECK_FALSE(h->sendKeyed(rec, call));  // not a spread key
  call.spread = &entry;
  call.spread_use = SpreadUse::ReadCopy;
  CHECK_FALSE(h->sendKeyed(rec, call));
  call.spread_use = SpreadUse::Write;
  CHECK(h->sendKeyed(rec, call));
  CHECK(rec.calls == std::vector<std::string>{"copies k"});
  // A key the pool has not spread stays where the ring put it.
  Recorder read("mg k v\r\n");
  KeyedCall placed = read.call();
  placed.index = 3;
  h->placeKeyed(read, placed);
  CHECK(placed.index == 3u);
  CHECK(placed.spread == nullptr);
  CHECK(read.calls.empty());
}

TEST_CASE("warm-up does nothing while no window is open") {
  const auto h = handlerOf("warmup");
  Recorder rec("set k 0 0 1\r\n");
  KeyedCall call = rec.call();
  h->prepareKeyed(rec, call);
  CHECK(rec.calls.empty());
  CHECK_FALSE(call.warm_hop);
  Recorder get("get a b\r\n");
  std::vector<uint32_t> servers{0, 1};
  RetrievalCall rc = get.retrieval(servers);
  h->placedKeys(get, rc);
  CHECK_FALSE(rc.warm);
  CHECK_FALSE(rc.split);
}
