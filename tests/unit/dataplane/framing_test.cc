// Backend replies and client requests cut at every byte boundary: the data plane frames units
// itself and must neither lose, duplicate nor reorder a byte, wherever a read happens to end.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

TEST_CASE("a backend reply split at every byte boundary reaches the client whole") {
  FakeBackend b0;
  DataPlane dp({&b0});
  auto client = dp.connect();
  const std::string key = "split";
  // The data block holds "\r\nEND\r\n": only the length tells it from the reply's end.
  const std::string reply = valueUnit(key, "ab\r\nEND\r\ncd", 42) + "END\r\n";
  for (size_t cut = 1; cut < reply.size(); ++cut) {
    CAPTURE(cut);
    REQUIRE(client.send("get " + key + "\r\n"));
    REQUIRE(b0.expect("get " + key + "\r\n") == "get " + key + "\r\n");
    REQUIRE(b0.sendSplit(reply, cut));
    REQUIRE(client.read(reply.size()) == reply);
  }
  // And one byte at a time.
  REQUIRE(client.send("get " + key + "\r\n"));
  REQUIRE(b0.expect("get " + key + "\r\n") == "get " + key + "\r\n");
  REQUIRE(b0.sendBytewise(reply));
  CHECK(client.read(reply.size()) == reply);
  CHECK(client.silentFor(5));
  CHECK(b0.accepted() == 1);  // never reset for a bad frame
  CHECK(dp.counters().backend_protocol_errors.load() == 0);
}

TEST_CASE("pipelined replies of several kinds, one byte at a time, stay matched to requests") {
  FakeBackend b0;
  DataPlane dp({&b0}, "  coalesce_gets: false\n");
  auto client = dp.connect();
  const std::string request =
      "get k1 k2\r\nset k3 0 0 2\r\nhi\r\ndelete k4\r\nincr k5 1\r\nmg k6 v f\r\nget k7\r\n";
  const std::string reply = valueUnit("k1", "one") + valueUnit("k2", "\r\n") + "END\r\n" +
                            "STORED\r\n" + "NOT_FOUND\r\n" + "7\r\n" + "VA 3 f9\r\nsix\r\n" +
                            "END\r\n";
  REQUIRE(client.send(request));
  CHECK(b0.expect(request) == request);
  REQUIRE(b0.sendBytewise(reply, 200));
  CHECK(client.read(reply.size()) == reply);
  CHECK(client.silentFor(5));
}

TEST_CASE("a multi-get whose fragments both arrive split at every boundary") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "m"), B = dp.keyOn(1, "m");
  const std::string ra = valueUnit(A, "alpha") + "END\r\n";
  const std::string rb = valueUnit(B, "beta\r\n") + "END\r\n";
  const std::string want = valueUnit(A, "alpha") + valueUnit(B, "beta\r\n") + "END\r\n";
  for (size_t cut = 1; cut < std::max(ra.size(), rb.size()); ++cut) {
    CAPTURE(cut);
    REQUIRE(client.send("get " + A + " " + B + "\r\n"));
    REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
    REQUIRE(b1.expect("get " + B + "\r\n") == "get " + B + "\r\n");
    // Both first pieces, then both rests: the fragments' partial units wait side by side.
    REQUIRE(b1.send(rb.substr(0, std::min(cut, rb.size()))));
    REQUIRE(b0.send(ra.substr(0, std::min(cut, ra.size()))));
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    if (cut < ra.size()) {
      REQUIRE(b0.send(ra.substr(cut)));
    }
    if (cut < rb.size()) {
      REQUIRE(b1.send(rb.substr(cut)));
    }
    REQUIRE(client.read(want.size()) == want);
  }
  CHECK(client.silentFor(5));
}

TEST_CASE("a client request split at every byte boundary reaches the backend once, whole") {
  FakeBackend b0;
  DataPlane dp({&b0});
  auto client = dp.connect();
  // A storage command with a data block (holding "\r\n") then a get, in one stream.
  const std::string request = "set k 5 0 6\r\nab\r\ncd\r\nget k\r\n";
  for (size_t cut = 1; cut < request.size(); ++cut) {
    CAPTURE(cut);
    REQUIRE(client.sendSplit(request, cut, 500));
    REQUIRE(b0.expect(request) == request);
    REQUIRE(b0.send("STORED\r\n" + valueUnit("k", "ab\r\ncd", 5) + "END\r\n"));
    const std::string want = "STORED\r\n" + valueUnit("k", "ab\r\ncd", 5) + "END\r\n";
    REQUIRE(client.read(want.size()) == want);
  }
  CHECK(client.silentFor(5));
}
