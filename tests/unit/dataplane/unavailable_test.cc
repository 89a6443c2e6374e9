// unavailable_reads (dispatch/unavailable.h): with the default `miss`, the keys of a read whose
// server is unavailable are misses and the rest of the request is served, whether the server was
// known down when the request was dispatched (backing off after a refused connect) or failed with
// the request in flight (timeout, refused connect of the first attempt), in shared get lines
// (coalesce_gets), lines of their own and forwarded gets, and for mg in the client's format.
// Writes keep their SERVER_ERROR, or with unavailable_writes: not_stored answer NOT_STORED,
// NOT_FOUND, NS or NF (the last cases). failure_test.cc runs the same faults with `error`.
#include <doctest/doctest.h>

#include "proxy/common/clock.h"
#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

namespace {

const std::string kConnectFailed = "SERVER_ERROR backend connect failed\r\n";

}  // namespace

TEST_CASE("a multi-get over a refused server: its keys are misses, the others are served") {
  FakeBackend b0, b1;
  b1.stopListening();  // b1 went away before mcring ever connected
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "a"), A2 = dp.keyOn(0, "a", 1), B = dp.keyOn(1, "b");
  // The first one fails in flight (the connect is refused after it was queued), the second is
  // dispatched while b1 backs off (no connect attempt).
  for (int round = 0; round < 2; ++round) {
    REQUIRE(client.send("get " + A + " " + B + " " + A2 + "\r\n"));
    const std::string line = "get " + A + " " + A2 + "\r\n";
    REQUIRE(b0.expect(line) == line);
    REQUIRE(b0.send(valueUnit(A, "one") + valueUnit(A2, "two") + "END\r\n"));
    const std::string want = valueUnit(A, "one") + valueUnit(A2, "two") + "END\r\n";
    CHECK(client.read(want.size()) == want);
    CHECK(client.silentFor(5));
  }
  CHECK(dp.unavailableMisses(1) == 2);
  CHECK(dp.unavailableMisses(0) == 0);
  CHECK(dp.counters().unavailable_misses.load() == 2);
  CHECK(dp.counters().server_errors.load() == 0);
  CHECK(dp.counters().get_misses.load() == 2);
  CHECK(dp.counters().get_hits.load() == 4);
  // A write to the same server is not a read: it fails.
  REQUIRE(client.send("set " + B + " 0 0 1\r\nx\r\ndelete " + B + "\r\n"));
  CHECK(client.read(2 * kConnectFailed.size()) == kConnectFailed + kConnectFailed);
  CHECK(dp.counters().server_errors.load() == 2);
  CHECK(dp.unavailableMisses(1) == 2);
}

TEST_CASE("mg on an unavailable server: EN with the client's k and O flags; quiet: nothing") {
  FakeBackend b0;
  b0.stopListening();
  DataPlane dp({&b0});
  auto client = dp.connect();
  // The first fails in flight (refused connect), the rest are dispatched during the backoff.
  REQUIRE(client.send("mg key1 O7 k v\r\n"));
  CHECK(client.read(15) == "EN O7 kkey1\r\n");
  REQUIRE(client.send("mg a2V5 b k v\r\nmg key3 q k v\r\nmg key4 v t\r\nmn\r\n"));
  const std::string want = "EN ka2V5 b\r\nEN\r\nMN\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
  CHECK(dp.unavailableMisses(0) == 4);
  CHECK(dp.counters().server_errors.load() == 0);
  // Meta writes, incr and touch fail as before; a quiet one still shows its error.
  REQUIRE(client.send("ms key1 1 q\r\nx\r\nma key1\r\ntouch key1 10\r\nmn\r\n"));
  const std::string errors = kConnectFailed + kConnectFailed + kConnectFailed + "MN\r\n";
  CHECK(client.read(errors.size()) == errors);
  CHECK(dp.counters().server_errors.load() == 3);
}

TEST_CASE("a server that times out with a shared get line in flight: each request keeps its hits") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  timeout: 50\n");
  auto c1 = dp.connect();
  auto c2 = dp.connect();
  const std::string A1 = dp.keyOn(0, "a", 0), A2 = dp.keyOn(0, "a", 1), B = dp.keyOn(1, "b");
  REQUIRE(c1.send("get " + A1 + "\r\n"));
  REQUIRE(c2.send("get " + A2 + " " + B + "\r\n"));
  // One line for both clients' keys on b0 (coalesce_gets) if the worker read both in one pass;
  // either way b0 gets A1 first and answers it, then stalls.
  std::string got = b0.read(("get " + A1).size());
  REQUIRE(got == "get " + A1);
  REQUIRE(b1.expect("get " + B + "\r\n") == "get " + B + "\r\n");
  REQUIRE(b1.send(valueUnit(B, "bee") + "END\r\n"));
  REQUIRE(b0.send(valueUnit(A1, "hit")));
  // b0 says nothing more: the timeout fails what it owes; A1's value stays, A2 is a miss.
  const std::string want1 = valueUnit(A1, "hit") + "END\r\n";
  CHECK(c1.read(want1.size()) == want1);
  const std::string want2 = valueUnit(B, "bee") + "END\r\n";
  CHECK(c2.read(want2.size(), 3000) == want2);
  CHECK(dp.counters().backend_timeouts.load() == 1);
  CHECK(dp.counters().server_errors.load() == 0);
  CHECK(dp.unavailableMisses(0) == 1);
  CHECK(dp.unavailableMisses(1) == 0);
}

TEST_CASE("a forwarded gets and an mg that time out are misses; with `error`, SERVER_ERROR") {
  for (const bool miss : {true, false}) {
    CAPTURE(miss);
    FakeBackend b0;
    DataPlane dp({&b0}, std::string("  timeout: 50\n  coalesce_gets: false\n") +
                            (miss ? "" : "  unavailable_reads: error\n"));
    auto client = dp.connect();
    REQUIRE(client.send("gets k1 k2\r\n"));
    REQUIRE(b0.expect("gets k1 k2\r\n") == "gets k1 k2\r\n");
    const std::string v1 = "VALUE k1 0 1 5\r\nx\r\n";
    REQUIRE(b0.send(v1));  // k1's value, then nothing
    const std::string timeout = "SERVER_ERROR backend timeout\r\n";
    // The value already received stays (it may have been streamed already) either way.
    const std::string want = v1 + (miss ? "END\r\n" : timeout);
    CHECK(client.read(want.size(), 3000) == want);
    CHECK(b0.waitPeerClosed());
    mcring::common::advanceClockForTest(2'000'000'000ULL);  // past the backoff
    REQUIRE(client.send("mg k1 k v\r\n"));
    REQUIRE(b0.accept());
    REQUIRE(b0.expect("mg k1 k v\r\n") == "mg k1 k v\r\n");
    const std::string mg = miss ? "EN kk1\r\n" : timeout;
    CHECK(client.read(mg.size(), 3000) == mg);
    CHECK(dp.unavailableMisses(0) == (miss ? 2 : 0));
    CHECK(dp.counters().server_errors.load() == (miss ? 0 : 2));
  }
}

TEST_CASE("unavailable_writes: not_stored: a write on an unavailable server is not applied") {
  FakeBackend b0;
  b0.stopListening();
  DataPlane dp({&b0}, "  unavailable_writes: not_stored\n");
  auto client = dp.connect();
  // The first fails in flight (refused connect), the rest are dispatched during the backoff.
  REQUIRE(client.send("set k 0 0 1\r\nx\r\n"));
  CHECK(client.read(12) == "NOT_STORED\r\n");
  REQUIRE(
      client.send("add k 0 0 1\r\nx\r\ncas k 0 0 1 5\r\nx\r\ndelete k\r\nincr k 1\r\n"
                  "touch k 1\r\nset k 0 0 1 noreply\r\nx\r\nms k 1 q O3 k\r\nx\r\n"
                  "ms k 1 C9\r\nx\r\nmd a2V5 b k\r\nma k O4\r\nmn\r\n"));
  const std::string want =
      "NOT_STORED\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_FOUND\r\nNS O3 kk\r\nNF\r\n"
      "NF ka2V5 b\r\nNF O4\r\nMN\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
  CHECK(dp.counters().unavailable_writes.load() == 11);
  CHECK(dp.counters().server_errors.load() == 0);
  // Reads are unavailable_reads' business: a miss.
  REQUIRE(client.send("get k\r\n"));
  CHECK(client.read(5) == "END\r\n");
}

TEST_CASE("unavailable_writes: not_stored: a write whose server times out in flight") {
  FakeBackend b0;
  DataPlane dp({&b0}, "  timeout: 50\n  unavailable_writes: not_stored\n");
  auto client = dp.connect();
  REQUIRE(client.send("set k 0 0 1\r\nx\r\n"));
  REQUIRE(b0.expect("set k 0 0 1\r\nx\r\n") == "set k 0 0 1\r\nx\r\n");
  // No answer: the timeout fails it; it may have been stored, the client is told it was not.
  CHECK(client.read(12, 3000) == "NOT_STORED\r\n");
  CHECK(dp.counters().backend_timeouts.load() == 1);
  CHECK(dp.counters().unavailable_writes.load() == 1);
  CHECK(dp.counters().server_errors.load() == 0);
}
