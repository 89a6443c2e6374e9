// The route tree (dispatch/routed.cc) in-process: which pool a key's request reaches (the
// longest prefix, the default, none), failover's order and triggers, a rate limit, max_ttl as
// the server sees it, a shadow that never answers, and routes composed on one route. Each pool
// is one fake backend, so where a request lands is what that backend reads.
#include <doctest/doctest.h>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

namespace {

// Pools a..e, one backend each ({0}..{4}), behind the listener `front` with `routes`. Each also
// has a listen address (never opened here), so that pools no route names are valid.
std::string config(const std::string& routes) {
  std::string yaml;
  const char* names[] = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 5; ++i) {
    yaml += std::string(names[i]) + ":\n  listen: 127.0.0.1:" + std::to_string(2 + i) +
            "\n  timeout: 300\n  servers: [127.0.0.1:{" + std::to_string(i) + "}:1]\n";
  }
  return yaml + "front:\n  listen: 127.0.0.1:1\n  routes:\n" + routes;
}

const std::string kConnectFailed = "SERVER_ERROR backend connect failed\r\n";

}  // namespace

TEST_CASE("a key goes to its longest prefix's pool, else the default's") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 'x:'\n      pool: a\n"
                      "    - prefix: 'x:y:'\n      pool: b\n"
                      "    - default: c\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("get x:1\r\n"));
  CHECK(a.expect("get x:1\r\n") == "get x:1\r\n");
  REQUIRE(a.send("END\r\n"));
  CHECK(client.read(5) == "END\r\n");
  REQUIRE(client.send("set x:y:2 0 0 1\r\nv\r\n"));
  CHECK(b.expect("set x:y:2 0 0 1\r\nv\r\n") == "set x:y:2 0 0 1\r\nv\r\n");
  REQUIRE(b.send("STORED\r\n"));
  CHECK(client.read(8) == "STORED\r\n");
  REQUIRE(client.send("mg other v\r\n"));
  CHECK(c.expect("mg other v\r\n") == "mg other v\r\n");
  REQUIRE(c.send("EN\r\n"));
  CHECK(client.read(4) == "EN\r\n");
  CHECK(d.received().empty());
}

TEST_CASE("no route and no default: SERVER_ERROR, the data block consumed, the next served") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 'x:'\n      pool: a\n"), {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("set zz 0 0 5\r\nhello\r\nget x:1\r\n"));
  const std::string no_route = "SERVER_ERROR no route for key\r\n";
  CHECK(client.read(no_route.size()) == no_route);
  CHECK(a.expect("get x:1\r\n") == "get x:1\r\n");
  REQUIRE(a.send("END\r\n"));
  CHECK(client.read(5) == "END\r\n");
}

TEST_CASE("a multi-get across three routes comes back in the client's key order") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 'a:'\n      pool: a\n"
                      "    - prefix: 'b:'\n      pool: b\n"
                      "    - default: c\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("get z1 b:1 a:1 z2 a:2\r\n"));
  CHECK(a.expect("get a:1 a:2\r\n") == "get a:1 a:2\r\n");
  CHECK(b.expect("get b:1\r\n") == "get b:1\r\n");
  CHECK(c.expect("get z1 z2\r\n") == "get z1 z2\r\n");
  // Answered in reverse order of the keys.
  REQUIRE(a.send(valueUnit("a:2", "A2") + "END\r\n"));
  REQUIRE(c.send(valueUnit("z1", "Z1") + valueUnit("z2", "Z2") + "END\r\n"));
  REQUIRE(b.send("END\r\n"));
  const std::string want =
      valueUnit("z1", "Z1") + valueUnit("z2", "Z2") + valueUnit("a:2", "A2") + "END\r\n";
  CHECK(client.read(want.size()) == want);
}

TEST_CASE("failover: the next pools in order, on a refused server, an error and a timeout") {
  FakeBackend a, b, c, d, e;
  a.stopListening();
  DataPlane dp(config("    - prefix: 'k:'\n      pool: a\n      failover: [b, c]\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  // a refuses: b gets the request as it was first sent (noreply's token is mcring's business).
  REQUIRE(client.send("set k:1 0 0 2\r\nhi\r\n"));
  CHECK(b.expect("set k:1 0 0 2\r\nhi\r\n") == "set k:1 0 0 2\r\nhi\r\n");
  // b answers an error: c is next.
  REQUIRE(b.send("SERVER_ERROR out of memory storing object\r\n"));
  CHECK(c.expect("set k:1 0 0 2\r\nhi\r\n") == "set k:1 0 0 2\r\nhi\r\n");
  REQUIRE(c.send("STORED\r\n"));
  CHECK(client.read(8) == "STORED\r\n");
  // b times out (300 ms): c serves the get.
  REQUIRE(client.send("get k:2\r\n"));
  CHECK(b.expect("get k:2\r\n") == "get k:2\r\n");
  CHECK(c.expect("get k:2\r\n", 3000) == "get k:2\r\n");
  REQUIRE(c.send(valueUnit("k:2", "v") + "END\r\n"));
  const std::string want = valueUnit("k:2", "v") + "END\r\n";
  CHECK(client.read(want.size(), 3000) == want);
  CHECK(d.received().empty());
}

TEST_CASE("failover: the last pool's answer stands when every pool fails") {
  FakeBackend a, b, c, d, e;
  a.stopListening();
  b.stopListening();
  DataPlane dp(config("    - prefix: 'k:'\n      pool: a\n      failover: [b]\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("delete k:1\r\n"));
  CHECK(client.read(kConnectFailed.size(), 3000) == kConnectFailed);
  // A read's miss by unavailable_reads (the default) is the answer of the last pool tried.
  REQUIRE(client.send("get k:1\r\n"));
  CHECK(client.read(5, 3000) == "END\r\n");
}

TEST_CASE("failover of a multi-get: each key of a failed part goes on by its own route") {
  FakeBackend a, b, c, d, e;
  a.stopListening();
  DataPlane dp(config("    - prefix: 'k:'\n      pool: a\n      failover: [b, c]\n"
                      "    - prefix: 'm:'\n      pool: d\n      failover: [c]\n"
                      "      failover_on_miss: true\n"
                      "    - default: e\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  // a refuses: k:1 and k:2 go on to b once every part has answered; m:1 and m:2 are d's, z is
  // e's (no failover). d misses m:2: on to c (failover_on_miss).
  REQUIRE(client.send("get k:1 m:1 z k:2 m:2\r\n"));
  CHECK(d.expect("get m:1 m:2\r\n") == "get m:1 m:2\r\n");
  CHECK(e.expect("get z\r\n") == "get z\r\n");
  REQUIRE(d.send(valueUnit("m:1", "M1") + "END\r\n"));
  REQUIRE(e.send(valueUnit("z", "Z") + "END\r\n"));
  CHECK(b.expect("get k:1 k:2\r\n") == "get k:1 k:2\r\n");
  CHECK(c.expect("get m:2\r\n") == "get m:2\r\n");
  REQUIRE(c.send(valueUnit("m:2", "M2") + "END\r\n"));
  // b answers an error for its part: k:1 and k:2 go on to c.
  REQUIRE(b.send("SERVER_ERROR busy\r\n"));
  CHECK(c.expect("get k:1 k:2\r\n") == "get k:1 k:2\r\n");
  REQUIRE(c.send(valueUnit("k:2", "K2") + "END\r\n"));
  // In the client's key order; k:1 missed everywhere.
  const std::string want = valueUnit("m:1", "M1") + valueUnit("z", "Z") + valueUnit("k:2", "K2") +
                           valueUnit("m:2", "M2") + "END\r\n";
  CHECK(client.read(want.size(), 3000) == want);
  // Every pool of k:'s list refuses or fails: the last failure's keys are misses
  // (unavailable_reads: miss, the default), the rest of the get served.
  c.stopListening();
  c.closeConnection();
  b.closeConnection();
  REQUIRE(client.send("get z k:3\r\n"));
  CHECK(e.expect("get z\r\n") == "get z\r\n");
  REQUIRE(e.send(valueUnit("z", "Z") + "END\r\n"));
  const std::string got = client.read(valueUnit("z", "Z").size() + 5, 3000);
  CHECK(got == valueUnit("z", "Z") + "END\r\n");
}

TEST_CASE("failover_on_miss: a miss asks the next pool; a hit does not") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 'k:'\n      pool: a\n      failover: [b]\n"
                      "      failover_on_miss: true\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("mg k:1 v\r\n"));
  CHECK(a.expect("mg k:1 v\r\n") == "mg k:1 v\r\n");
  REQUIRE(a.send("EN\r\n"));
  CHECK(b.expect("mg k:1 v\r\n") == "mg k:1 v\r\n");
  REQUIRE(b.send("VA 1\r\nx\r\n"));
  CHECK(client.read(9) == "VA 1\r\nx\r\n");
  REQUIRE(client.send("get k:2\r\n"));
  CHECK(a.expect("get k:2\r\n") == "get k:2\r\n");
  REQUIRE(a.send(valueUnit("k:2", "y") + "END\r\n"));
  const std::string want = valueUnit("k:2", "y") + "END\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(b.readQuiet(20).empty());
}

TEST_CASE("a rate-limited route answers at once; another route is not limited") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 'r:'\n      pool: a\n"
                      "      rate_limit: { requests_per_second: 1, burst: 2 }\n"
                      "    - default: b\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("mg r:1\r\nmg r:2\r\nmg r:3\r\nmg o:1\r\nmg o:2\r\nmg o:3\r\n"));
  CHECK(a.expect("mg r:1\r\nmg r:2\r\n") == "mg r:1\r\nmg r:2\r\n");
  CHECK(b.expect("mg o:1\r\nmg o:2\r\nmg o:3\r\n") == "mg o:1\r\nmg o:2\r\nmg o:3\r\n");
  REQUIRE(a.send("EN\r\nEN\r\n"));
  REQUIRE(b.send("EN\r\nEN\r\nEN\r\n"));
  const std::string want = "EN\r\nEN\r\nSERVER_ERROR rate limited\r\nEN\r\nEN\r\nEN\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(a.readQuiet(20).empty());
}

TEST_CASE("max_ttl: the server sees the capped TTL; a route without it, the client's") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 't:'\n      pool: a\n      max_ttl: 60\n"
                      "    - default: b\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(
      client.send("set t:1 0 0 1 noreply\r\nv\r\nms t:2 1\r\nw\r\ngat 0 t:3\r\n"
                  "set u 0 0 1\r\nv\r\n"));
  const std::string capped = "set t:1 0 60 1\r\nv\r\nms t:2 1 T60\r\nw\r\ngat 60 t:3\r\n";
  CHECK(a.expect(capped) == capped);
  CHECK(b.expect("set u 0 0 1\r\nv\r\n") == "set u 0 0 1\r\nv\r\n");
  REQUIRE(a.send("STORED\r\nHD\r\nEND\r\n"));
  REQUIRE(b.send("STORED\r\n"));
  CHECK(client.read(17) == "HD\r\nEND\r\nSTORED\r\n");
}

TEST_CASE("composed: a shadow that never answers, a TTL cap and failover on one route") {
  FakeBackend a, b, c, d, e;
  DataPlane dp(config("    - prefix: 's:'\n      pool: a\n      max_ttl: 30\n"
                      "      failover: [b]\n      shadow: { pool: c }\n"),
               {&a, &b, &c, &d, &e}, "front");
  auto client = dp.connect();
  REQUIRE(client.send("set s:1 0 0 1\r\nv\r\nmg s:1 v\r\n"));
  // The shadow gets the write as sent (capped) and a read of its own; it never answers.
  const std::string shadow = "set s:1 0 30 1\r\nv\r\nmg s:1 v\r\n";
  CHECK(c.expect(shadow) == shadow);
  CHECK(a.expect("set s:1 0 30 1\r\nv\r\nmg s:1 v\r\n") == "set s:1 0 30 1\r\nv\r\nmg s:1 v\r\n");
  REQUIRE(a.send("STORED\r\nVA 1\r\nv\r\n"));
  CHECK(client.read(17) == "STORED\r\nVA 1\r\nv\r\n");
  // a fails (closes): the read goes on to b; the shadow still owes everything.
  REQUIRE(client.send("mg s:2 v\r\n"));
  CHECK(a.expect("mg s:2 v\r\n") == "mg s:2 v\r\n");
  a.closeConnection();
  CHECK(b.expect("mg s:2 v\r\n") == "mg s:2 v\r\n");
  REQUIRE(b.send("EN\r\n"));
  CHECK(client.read(4) == "EN\r\n");
}

TEST_CASE("a route moved to a pool with warmup_window: its misses are served from the old pool") {
  FakeBackend a, b, c, d, e;
  const std::string routes = "    - prefix: 'm:'\n      pool: POOL\n    - default: c\n";
  auto with = [&](const std::string& pool) {
    std::string r = routes;
    r.replace(r.find("POOL"), 4, pool);
    std::string yaml = config(r);
    // b warms up for 10 s after a change of what it serves.
    yaml.replace(yaml.find("b:\n"), 3, "b:\n  warmup_window: 10000\n");
    return yaml;
  };
  DataPlane dp(with("a"), {&a, &b, &c, &d, &e}, "front");
  dp.reconfigureYaml(with("b"), {&a, &b, &c, &d, &e});
  auto client = dp.connect();  // after the reload: m: goes to b
  REQUIRE(client.send("get m:1\r\n"));
  CHECK(b.expect("get m:1\r\n") == "get m:1\r\n");
  REQUIRE(b.send("END\r\n"));
  const std::string hop = "mg m:1 v f t c\r\n";
  CHECK(a.expect(hop) == hop);
  REQUIRE(a.send("VA 3 f7 t-1 c9\r\nold\r\n"));
  const std::string want = valueUnit("m:1", "old", 7) + "END\r\n";
  CHECK(client.read(want.size()) == want);
  const std::string copy = "ms m:1 3 F7 T0 ME\r\nold\r\n";
  CHECK(b.expect(copy) == copy);
  REQUIRE(b.send("HD\r\n"));
  CHECK(dp.counters().warmup_hits.load() == 1);
}

TEST_CASE("pools that name one server share its connection: a get across their routes is one part") {
  FakeBackend shared, other;
  const std::string yaml =
      "a:\n  listen: 127.0.0.1:2\n  timeout: 300\n  servers: [127.0.0.1:{0}:1]\n"
      "b:\n  listen: 127.0.0.1:3\n  timeout: 300\n  servers: [127.0.0.1:{0}:1]\n"
      "c:\n  listen: 127.0.0.1:4\n  timeout: 300\n  servers: [127.0.0.1:{1}:1]\n"
      "front:\n  listen: 127.0.0.1:1\n  routes:\n"
      "    - prefix: 'a:'\n      pool: a\n"
      "    - prefix: 'b:'\n      pool: b\n"
      "    - default: c\n";
  DataPlane dp(yaml, {&shared, &other}, "front");
  auto client = dp.connect();
  // Keys of pools a and b: one fragment, one line, on one connection to the server.
  REQUIRE(client.send("get a:1 b:1 z a:2\r\n"));
  CHECK(shared.expect("get a:1 b:1 a:2\r\n") == "get a:1 b:1 a:2\r\n");
  CHECK(other.expect("get z\r\n") == "get z\r\n");
  REQUIRE(shared.send(valueUnit("b:1", "B1") + valueUnit("a:2", "A2") + "END\r\n"));
  REQUIRE(other.send("END\r\n"));
  const std::string want = valueUnit("b:1", "B1") + valueUnit("a:2", "A2") + "END\r\n";
  CHECK(client.read(want.size()) == want);
  // Pool b's own requests go on the same connection.
  auto second = dp.connect();
  REQUIRE(second.send("get b:9\r\n"));
  CHECK(shared.expect("get b:9\r\n", 1000) == "get b:9\r\n");
  REQUIRE(shared.send("END\r\n"));
  CHECK(second.read(5) == "END\r\n");
  CHECK(shared.accepted() == 1);
}
