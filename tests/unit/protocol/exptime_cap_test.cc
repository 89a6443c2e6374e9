// capLineExptime: every command that sets a TTL has it capped, "never" becomes the cap, earlier
// expiries and other bytes are left alone.
#include "proxy/protocol/exptime_cap.h"

#include <doctest/doctest.h>

#include <string>

#include "proxy/protocol/request_parser.h"

namespace mcring::protocol {
namespace {

constexpr int64_t kNow = 1'800'000'000;

// The line as mcring would send it with max_ttl 3600 ("" if unchanged).
std::string capped(const std::string& line, uint32_t max_ttl = 3600) {
  RequestParser parser;
  Request req;
  REQUIRE(parser.parse(line, req) == ParseStatus::Ok);
  std::string out;
  return capLineExptime(req, line, max_ttl, kNow, &out) ? out : std::string();
}

TEST_CASE("the exptime rule: never and later become the cap; earlier and past stay") {
  CHECK(cappedExptime(0, 3600, kNow) == 3600);
  CHECK(cappedExptime(7200, 3600, kNow) == 3600);
  CHECK_FALSE(cappedExptime(3600, 3600, kNow).has_value());
  CHECK_FALSE(cappedExptime(10, 3600, kNow).has_value());
  CHECK_FALSE(cappedExptime(-1, 3600, kNow).has_value());
  CHECK(cappedExptime(kNow + 7200, 3600, kNow) == 3600);  // absolute, later than the cap
  CHECK_FALSE(cappedExptime(kNow + 60, 3600, kNow).has_value());
  CHECK(cappedExptime(2592000, 3600, kNow) == 3600);  // 30 days is still relative
}

TEST_CASE("classic storage, touch and gat lines") {
  CHECK(capped("set k 5 0 3\r\n") == "set k 5 3600 3\r\n");
  CHECK(capped("set k 5 99999 3 noreply\r\n") == "set k 5 3600 3 noreply\r\n");
  CHECK(capped("set k 5 60 3\r\n").empty());
  CHECK(capped("cas k 0 0 3 77\r\n") == "cas k 0 3600 3 77\r\n");
  CHECK(capped("add  k 0 0 3\n") == "add  k 0 3600 3\n");  // spacing and bare \n kept
  CHECK(capped("touch k 0\r\n") == "touch k 3600\r\n");
  CHECK(capped("gat 0 a b c\r\n") == "gat 3600 a b c\r\n");
  CHECK(capped("gats 100000 a\r\n") == "gats 3600 a\r\n");
  CHECK(capped("get a b\r\n").empty());
  // memcached reads "+0" as 0 (strtol): capped, not left to never expire.
  CHECK(capped("set k 0 +0 1\r\n") == "set k 0 3600 1\r\n");
  CHECK(capped("touch k +99999\r\n") == "touch k 3600\r\n");
  CHECK(capped("set k 0 +60 1\r\n").empty());
  CHECK(capped("delete k\r\n").empty());
  CHECK(capped("incr k 1\r\n").empty());
}

TEST_CASE("meta commands: T and N capped, an ms without T gets one") {
  CHECK(capped("ms k 3\r\n") == "ms k 3 T3600\r\n");
  CHECK(capped("ms k 3 F5 q\r\n") == "ms k 3 F5 q T3600\r\n");
  CHECK(capped("ms k 3 T0\r\n") == "ms k 3 T3600\r\n");
  CHECK(capped("ms k 3 T60\r\n").empty());
  CHECK(capped("ms k 3 T+0\r\n") == "ms k 3 T3600\r\n");
  CHECK(capped("mg k v T0\r\n") == "mg k v T3600\r\n");
  CHECK(capped("mg k v N90000 T10\r\n") == "mg k v N3600 T10\r\n");
  CHECK(capped("mg k v\r\n").empty());
  CHECK(capped("ma k N0 T0\r\n") == "ma k N3600 T3600\r\n");
  CHECK(capped("md k I T0\r\n") == "md k I T3600\r\n");
  CHECK(capped("md k\r\n").empty());
  CHECK(capped("mg a2V5 b v T0\r\n") == "mg a2V5 b v T3600\r\n");  // base64 key untouched
}

TEST_CASE("compactLine: runs of spaces become one, the terminator kept") {
  CHECK(compactLine("ms  k   3    T3600\r\n") == "ms k 3 T3600\r\n");
  CHECK(compactLine("set k 0 0 1   \n") == "set k 0 0 1\n");
  CHECK(compactLine("mn\r\n") == "mn\r\n");
}

}  // namespace
}  // namespace mcring::protocol
