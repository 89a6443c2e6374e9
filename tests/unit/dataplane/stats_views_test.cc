// memcached's stats views in-process (dispatch/stats_views.h): `stats <view>` is asked of every
// server of the pool and the answers are merged into one reply in memcached's format; `version`
// answers the lowest server version.
#include <doctest/doctest.h>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;

TEST_CASE("stats slabs: both servers are asked and their counters are summed into one reply") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  REQUIRE(client.send("stats slabs\r\n"));
  const std::string ask = "stats slabs\r\n";
  CHECK(b0.expect(ask) == ask);
  CHECK(b1.expect(ask) == ask);
  REQUIRE(
      b0.send("STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 3\r\nSTAT active_slabs 1\r\n"
              "STAT total_malloced 1048576\r\nEND\r\n"));
  REQUIRE(
      b1.send("STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 4\r\nSTAT active_slabs 1\r\n"
              "STAT total_malloced 1048576\r\nEND\r\n"));
  const std::string reply = client.readUntil("END\r\n");
  CHECK(reply.find("STAT 1:used_chunks 7\r\n") != std::string::npos);
  CHECK(reply.find("STAT total_malloced 2097152\r\n") != std::string::npos);
  CHECK(reply.find("STAT 1:chunk_size 96\r\n") != std::string::npos);  // a size, not summed
  CHECK(client.silentFor(10));
}

TEST_CASE("version: every server is asked; the client gets the lowest version, once") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  REQUIRE(client.send("version\r\n"));
  CHECK(b0.expect("version\r\n") == "version\r\n");
  CHECK(b1.expect("version\r\n") == "version\r\n");
  REQUIRE(b0.send("VERSION 1.6.18\r\n"));
  REQUIRE(b1.send("VERSION 1.6.9\r\n"));
  CHECK(client.readUntil("\r\n") == "VERSION 1.6.9\r\n");  // 1.6.9 < 1.6.18, as versions
  CHECK(client.silentFor(10));
}
