// Replication in-process (replicas: 2; backend/replica_write.h, dispatch/failover.h): a write goes
// to both replicas and the client gets the primary's reply; a read goes to the primary alone and,
// when the primary fails it (an error line, a timeout), on to the second replica; a multi-get
// fails over per key and keeps the client's key order.
#include <doctest/doctest.h>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

TEST_CASE("replicas 2: a set goes to both replicas, the client gets the primary's reply once") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  replicas: 2\n");
  auto client = dp.connect();
  const std::string K = dp.keyOn(0, "r");  // primary b0, second b1
  const std::string set = "set " + K + " 5 0 3\r\nabc\r\n";
  REQUIRE(client.send(set));
  CHECK(b0.expect(set) == set);
  CHECK(b1.expect(set) == set);
  REQUIRE(b0.send("STORED\r\n"));
  CHECK(client.read(8) == "STORED\r\n");
  // The second replica's answer is read in the background: nothing more reaches the client.
  REQUIRE(b1.send("STORED\r\n"));
  CHECK(client.silentFor(20));
  // The next request is answered in order after it.
  REQUIRE(client.send("get " + K + "\r\n"));
  const std::string get = "get " + K + "\r\n";
  CHECK(b0.expect(get) == get);
  CHECK(b1.readQuiet(20).empty());  // a read asks the primary only
  REQUIRE(b0.send(valueUnit(K, "abc", 5) + "END\r\n"));
  const std::string want = valueUnit(K, "abc", 5) + "END\r\n";
  CHECK(client.read(want.size()) == want);
}

TEST_CASE("replicas 2: a read the primary answers with an error is served by the second replica") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  replicas: 2\n");
  auto client = dp.connect();
  const std::string K = dp.keyOn(0, "f");
  const std::string get = "get " + K + "\r\n";
  REQUIRE(client.send(get));
  CHECK(b0.expect(get) == get);
  REQUIRE(b0.send("SERVER_ERROR out of memory\r\n"));
  CHECK(b1.expect(get) == get);  // failed over: the same key asked of the next replica
  REQUIRE(b1.send(valueUnit(K, "second") + "END\r\n"));
  const std::string want = valueUnit(K, "second") + "END\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(10));
}

TEST_CASE("replicas 2: a multi-get fails over per key and keeps the client's key order") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  replicas: 2\n  timeout: 100\n");
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "a"), B = dp.keyOn(1, "b");
  REQUIRE(client.send("get " + A + " " + B + "\r\n"));
  // Each key goes to its primary; b0 never answers (its request times out).
  const std::string line_a = "get " + A + "\r\n", line_b = "get " + B + "\r\n";
  CHECK(b0.expect(line_a) == line_a);
  CHECK(b1.expect(line_b) == line_b);
  REQUIRE(b1.send(valueUnit(B, "bee") + "END\r\n"));
  // After the timeout, A is asked of its second replica, b1, on a connection of its own or the
  // same one: what b1 reads next is A's line.
  CHECK(b1.expect(line_a, 3000) == line_a);
  REQUIRE(b1.send(valueUnit(A, "ay") + "END\r\n"));
  const std::string want = valueUnit(A, "ay") + valueUnit(B, "bee") + "END\r\n";
  CHECK(client.read(want.size(), 3000) == want);
}

// A replicated mg is a Direct request: its DirectReplyObserver (dispatch/direct_features.cc)
// marks what its replica could not serve (an error reply; a refused connect, which it keeps from
// being answered as unavailable or counted as a server error), and completion asks the next one.
TEST_CASE(
    "replicas 2: an mg its first replica errs on, or cannot be connected to, is served by the "
    "next") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  replicas: 2\n");
  auto client = dp.connect();
  const std::string K = dp.keyOn(0, "m");
  const std::string mg = "mg " + K + " v\r\n";
  REQUIRE(client.send(mg));
  CHECK(b0.expect(mg) == mg);
  REQUIRE(b0.send("SERVER_ERROR out of memory\r\n"));
  CHECK(b1.expect(mg) == mg);
  REQUIRE(b1.send("VA 2\r\nhi\r\n"));
  CHECK(client.read(10) == "VA 2\r\nhi\r\n");
  CHECK(dp.counters().failover_reads.load() == 1);

  // The first replica goes away: the connect fails under the request.
  FakeBackend c0, c1;
  DataPlane dp2({&c0, &c1}, "  replicas: 2\n");
  auto client2 = dp2.connect();
  const std::string K2 = dp2.keyOn(0, "n");
  const std::string mg2 = "mg " + K2 + " v\r\n";
  c0.stopListening();
  REQUIRE(client2.send(mg2));
  CHECK(c1.expect(mg2) == mg2);
  REQUIRE(c1.send("VA 2\r\nok\r\n"));
  CHECK(client2.read(10) == "VA 2\r\nok\r\n");
  CHECK(dp2.counters().server_errors.load() == 0);
  CHECK(dp2.counters().unavailable_misses.load() == 0);
}
