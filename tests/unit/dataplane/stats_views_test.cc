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

TEST_CASE("a routed listener's view: every serving pool's servers, a shared one once, no shadow") {
  // a and b share backend s1; d is a's failover pool (it serves a's keys); e is a shadow.
  FakeBackend s0, s1, s2, s3, s4, s5;
  const std::string yaml =
      "a:\n  timeout: 300\n  servers: [127.0.0.1:{0}:1, 127.0.0.1:{1}:1]\n"
      "b:\n  timeout: 300\n  servers: [127.0.0.1:{1}:1, 127.0.0.1:{2}:1]\n"
      "c:\n  timeout: 300\n  servers: [127.0.0.1:{3}:1]\n"
      "d:\n  timeout: 300\n  servers: [127.0.0.1:{4}:1]\n"
      "e:\n  timeout: 300\n  servers: [127.0.0.1:{5}:1]\n"
      "front:\n  listen: 127.0.0.1:1\n  routes:\n"
      "    - prefix: 'a:'\n      pool: a\n      failover: [d]\n"
      "      shadow: { pool: e, percent: 100 }\n"
      "    - prefix: 'b:'\n      pool: b\n"
      "    - default: c\n";
  DataPlane dp(yaml, {&s0, &s1, &s2, &s3, &s4, &s5}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("stats slabs\r\n"));
  const std::string ask = "stats slabs\r\n";
  for (FakeBackend* b : {&s0, &s1, &s2, &s3, &s4}) {
    CHECK(b->expect(ask) == ask);
    REQUIRE(
        b->send("STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 2\r\nSTAT active_slabs 1\r\n"
                "STAT total_malloced 1048576\r\nEND\r\n"));
  }
  const std::string reply = client.readUntil("END\r\n");
  CHECK(reply.find("STAT 1:used_chunks 10\r\n") != std::string::npos);  // 5 servers, not 6
  CHECK(reply.find("STAT total_malloced 5242880\r\n") != std::string::npos);
  CHECK(s1.readQuiet(20).empty());  // the shared server was asked once
  CHECK(s5.received().empty());     // the shadow pool is not asked
  CHECK(client.silentFor(10));
}
