// Hot-key spread in-process (hot_key_spread; backend/hot_spread.h, dispatch/spread_fill.h): a key
// the planner spread is read from its own server until a copy is filled from it (`mg` of the
// primary, `ms` to the copy), then from every filled copy, the primary included; a write goes to
// every copy and leaves a copy unfilled if it answered differently from the primary.
#include <doctest/doctest.h>

#include "proxy/backend/hot_spread.h"
#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

namespace {

// Fills copy 1 of K from b0 (the primary): the first read of K sends the fill's mg before the
// client's own get; the copy gets the primary's value, flags and TTL.
void fillFromPrimary(DataPlane& dp, dataplane::TestClient& client, FakeBackend& b0, FakeBackend& b1,
                     const std::string& K,
                     const std::shared_ptr<mcring::core::SpreadEntry>& entry) {
  REQUIRE(client.send("get " + K + "\r\n"));
  const std::string sent = "mg " + K + " v f t\r\nget " + K + "\r\n";
  CHECK(b0.expect(sent) == sent);
  REQUIRE(b0.send("VA 3 f5 t-1\r\nabc\r\n" + valueUnit(K, "abc", 5) + "END\r\n"));
  const std::string want = valueUnit(K, "abc", 5) + "END\r\n";
  CHECK(client.read(want.size()) == want);
  const std::string copy = "ms " + K + " 3 F5 T0\r\nabc\r\n";
  CHECK(b1.expect(copy) == copy);
  REQUIRE(b1.send("HD\r\n"));
  CHECK(DataPlane::waitFor([&] { return entry->filled.load() == 3u; }));
}

}  // namespace

TEST_CASE("spread: once the copy is filled, plain reads go to both servers, the primary too") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  hot_key_spread: 2\n");
  const std::string K = dp.keyOn(0, "hot");
  auto entry = dp.spread(K, {0, 1});
  auto client = dp.connect();
  fillFromPrimary(dp, client, b0, b1, K, entry);
  const std::string get = "get " + K + "\r\n";
  const std::string reply = valueUnit(K, "abc", 5) + "END\r\n";
  int served[2] = {0, 0};
  for (int i = 0; i < 40; ++i) {
    REQUIRE(client.send(get));
    // Whichever server the read went to answers it.
    int by = -1;
    REQUIRE(DataPlane::waitFor([&] {
      for (int s = 0; s < 2 && by < 0; ++s) {
        FakeBackend& b = s == 0 ? b0 : b1;
        std::string got = b.readQuiet(1);
        if (!got.empty()) {
          CHECK(got == get);
          by = s;
        }
      }
      return by >= 0;
    }));
    REQUIRE((by == 0 ? b0 : b1).send(reply));
    CHECK(client.read(reply.size()) == reply);
    ++served[by];
  }
  MESSAGE("reads served by the primary " << served[0] << ", by the copy " << served[1]);
  CHECK(served[0] > 0);
  CHECK(served[1] > 0);
  CHECK(entry->reads[0].load() + entry->reads[1].load() >= 40u);
}

TEST_CASE("spread: a write goes to every copy; a copy that answers differently is unfilled") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  hot_key_spread: 2\n");
  const std::string K = dp.keyOn(0, "w");
  auto entry = dp.spread(K, {0, 1});
  auto client = dp.connect();
  fillFromPrimary(dp, client, b0, b1, K, entry);
  const std::string set = "set " + K + " 0 0 2\r\nxy\r\n";
  REQUIRE(client.send(set));
  CHECK(b0.expect(set) == set);
  CHECK(b1.expect(set) == set);
  REQUIRE(b0.send("STORED\r\n"));
  REQUIRE(b1.send("NOT_STORED\r\n"));  // the copy did not take it: it must not be read
  CHECK(client.read(8) == "STORED\r\n");
  CHECK(DataPlane::waitFor([&] { return (entry->filled.load() & 2u) == 0; }));
  CHECK(client.silentFor(10));
}
