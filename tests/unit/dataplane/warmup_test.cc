// Warm migration in-process (warmup_window; dispatch/warmup.h): after a reload moves a key to a
// new server, a miss there asks the key's previous server (the second hop); a hit there answers
// the client and copies the value to the new server (`ms ... ME`: it never overwrites a newer
// value). Without warmup_window the miss is the client's.
#include <doctest/doctest.h>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

TEST_CASE("warm-up: a moved key's miss at its new server is served from the previous one") {
  FakeBackend b0, b1;
  DataPlane dp({&b0}, "  warmup_window: 10000\n");
  dp.reconfigure({&b0, &b1}, "  warmup_window: 10000\n");
  auto client = dp.connect();              // connected after the reload: sees the new ring
  const std::string K = dp.keyOn(1, "m");  // moved from b0 (the only server) to b1
  REQUIRE(client.send("get " + K + "\r\n"));
  const std::string get = "get " + K + "\r\n";
  CHECK(b1.expect(get) == get);
  REQUIRE(b1.send("END\r\n"));  // a miss at the new server
  // The second hop: the previous server is asked for the value, its flags, TTL and cas.
  const std::string hop = "mg " + K + " v f t c\r\n";
  CHECK(b0.expect(hop) == hop);
  REQUIRE(b0.send("VA 3 f7 t-1 c9\r\nold\r\n"));
  // The client gets the previous server's value in its own format...
  const std::string want = valueUnit(K, "old", 7) + "END\r\n";
  CHECK(client.read(want.size()) == want);
  // ...and the new server a copy that keeps flags and TTL (-1: none, T0) and loses to a newer
  // value (ME: invalid mode, it does not overwrite).
  const std::string copy = "ms " + K + " 3 F7 T0 ME\r\nold\r\n";
  CHECK(b1.expect(copy) == copy);
  REQUIRE(b1.send("HD\r\n"));
  CHECK(client.silentFor(10));
  CHECK(dp.counters().warmup_hits.load() == 1);
}

TEST_CASE("warm-up: a key the previous server does not have either is a miss, with no copy") {
  FakeBackend b0, b1;
  DataPlane dp({&b0}, "  warmup_window: 10000\n");
  dp.reconfigure({&b0, &b1}, "  warmup_window: 10000\n");
  auto client = dp.connect();
  const std::string K = dp.keyOn(1, "n");
  REQUIRE(client.send("get " + K + "\r\n"));
  const std::string get = "get " + K + "\r\n";
  CHECK(b1.expect(get) == get);
  REQUIRE(b1.send("END\r\n"));
  const std::string hop = "mg " + K + " v f t c\r\n";
  CHECK(b0.expect(hop) == hop);
  REQUIRE(b0.send("EN\r\n"));
  CHECK(client.read(5) == "END\r\n");
  CHECK(b1.readQuiet(20).empty());  // nothing to copy
}

TEST_CASE("no warmup_window: a moved key's miss at its new server is the client's miss") {
  FakeBackend b0, b1;
  DataPlane dp({&b0});
  dp.reconfigure({&b0, &b1});
  auto client = dp.connect();
  const std::string K = dp.keyOn(1, "c");
  REQUIRE(client.send("get " + K + "\r\n"));
  const std::string get = "get " + K + "\r\n";
  CHECK(b1.expect(get) == get);
  REQUIRE(b1.send("END\r\n"));
  CHECK(client.read(5) == "END\r\n");
  CHECK(b0.readQuiet(20).empty());  // no second hop
}

// An mg is a Direct request: what its reply means to warm-up is its DirectReplyObserver's
// (dispatch/direct_features.cc), which the backend connection shows each unit and asks before
// sending a request again.
TEST_CASE("warm-up: an mg miss of a moved key takes the second hop; a closed one is not resent") {
  FakeBackend b0, b1;
  DataPlane dp({&b0}, "  warmup_window: 10000\n");
  dp.reconfigure({&b0, &b1}, "  warmup_window: 10000\n");
  auto client = dp.connect();
  const std::string K = dp.keyOn(1, "g");
  const std::string mg = "mg " + K + " v f\r\n";
  REQUIRE(client.send(mg));
  CHECK(b1.expect(mg) == mg);
  REQUIRE(b1.send("EN\r\n"));  // the observer sees the EN: a second hop
  const std::string hop = "mg " + K + " v f t c\r\n";
  CHECK(b0.expect(hop) == hop);
  REQUIRE(b0.send("VA 3 f7 t-1 c9\r\nold\r\n"));
  const std::string want = "VA 3 f7\r\nold\r\n";  // in the client's own flags
  CHECK(client.read(want.size()) == want);
  const std::string copy = "ms " + K + " 3 F7 T0 ME\r\nold\r\n";
  CHECK(b1.expect(copy) == copy);
  REQUIRE(b1.send("HD\r\n"));
  CHECK(client.silentFor(10));
  CHECK(dp.counters().warmup_hits.load() == 1);

  // A warm-up read is not replayed (the observer says so) although a plain mg would be: its
  // connection closing under it answers it as unavailable (a miss), on no new connection.
  FakeBackend c0, c1;
  DataPlane dp2({&c0}, "  warmup_window: 10000\n");
  dp2.reconfigure({&c0, &c1}, "  warmup_window: 10000\n");
  auto client2 = dp2.connect();
  const std::string K2 = dp2.keyOn(1, "h");
  const std::string mg2 = "mg " + K2 + " v f\r\n";
  REQUIRE(client2.send(mg2));
  CHECK(c1.expect(mg2) == mg2);
  c1.closeConnection();
  CHECK(client2.read(4) == "EN\r\n");
  CHECK_FALSE(c1.accept(100));
  CHECK(dp2.counters().replayed_requests.load() == 0);
}
