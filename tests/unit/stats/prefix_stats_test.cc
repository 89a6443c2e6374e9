// PrefixCounts/PrefixStats (`stats detail`): memcached's prefix rule and dump order, the bound
// and its overflow line, the workers' tables merged.
#include "proxy/stats/prefix_stats.h"

#include <doctest/doctest.h>

#include <string>

namespace mcring::stats {
namespace {

void count(PrefixStats& s, size_t worker, std::string_view key, PrefixOp op) {
  std::string_view prefix;
  if (keyPrefix(key, s.delimiter(), &prefix)) {
    s.worker(worker).record(prefix, op);
  }
}

TEST_CASE("murmur3 is MurmurHash3_x86_32 with seed 0") {
  // The reference implementation's published values.
  CHECK(murmur3("") == 0u);
  CHECK(murmur3("hello") == 0x248bfa47u);
  CHECK(murmur3("The quick brown fox jumps over the lazy dog") == 0x2e4ff723u);
}

TEST_CASE("a key's prefix ends at its first delimiter; keys without one are not counted") {
  std::string_view p;
  CHECK(keyPrefix("user:1", ':', &p));
  CHECK(p == "user");
  CHECK(keyPrefix("::x", ':', &p));
  CHECK(p.empty());
  CHECK(keyPrefix("a/b:c", '/', &p));
  CHECK(p == "a");
  CHECK_FALSE(keyPrefix("nodelimiter", ':', &p));
  CHECK_FALSE(keyPrefix(std::string_view("a\0b:c", 5), ':', &p));  // memcached stops at a NUL
}

TEST_CASE("the dump is memcached's, in memcached's order") {
  // memcached 1.6.18 after: set a:1; get a:1 a:2 b:1 nodelim; gets a:1; gat 0 a:1 c:9;
  // touch a:1; incr d:1; delete a:1; delete e:1; mg f:1; ms g:1; md g:1; add a:1;
  // append h:1; cas h:2; set ::x; set :x; set abc:x; set ab:x; set abcd:x.
  PrefixStats s(1, ':', 1000);
  count(s, 0, "a:1", PrefixOp::Set);
  for (const char* k : {"a:1", "a:2", "b:1", "nodelim"}) {
    count(s, 0, k, PrefixOp::Get);
  }
  count(s, 0, "a:1", PrefixOp::Hit);
  count(s, 0, "a:1", PrefixOp::Get);
  count(s, 0, "a:1", PrefixOp::Hit);
  count(s, 0, "a:1", PrefixOp::Get);
  count(s, 0, "c:9", PrefixOp::Get);
  count(s, 0, "a:1", PrefixOp::Hit);
  count(s, 0, "a:1", PrefixOp::Delete);
  count(s, 0, "e:1", PrefixOp::Delete);
  for (const char* k : {"a:1", "h:1", "h:2", "::x", ":x", "abc:x", "ab:x", "abcd:x"}) {
    count(s, 0, k, PrefixOp::Set);
  }
  CHECK(s.dump() ==
        "PREFIX  get 0 hit 0 set 2 del 0\r\n"
        "PREFIX b get 1 hit 0 set 0 del 0\r\n"
        "PREFIX ab get 0 hit 0 set 1 del 0\r\n"
        "PREFIX c get 1 hit 0 set 0 del 0\r\n"
        "PREFIX e get 0 hit 0 set 0 del 1\r\n"
        "PREFIX abcd get 0 hit 0 set 1 del 0\r\n"
        "PREFIX a get 4 hit 3 set 2 del 1\r\n"
        "PREFIX h get 0 hit 0 set 2 del 0\r\n"
        "PREFIX abc get 0 hit 0 set 1 del 0\r\n"
        "END\r\n");
  CHECK(PrefixStats(1, ':', 10).dump() == "END\r\n");
}

TEST_CASE("workers' tables are summed; past the bound prefixes count on the overflow line") {
  PrefixStats s(2, ':', 3);
  count(s, 0, "a:1", PrefixOp::Get);
  count(s, 1, "a:2", PrefixOp::Get);
  count(s, 1, "a:2", PrefixOp::Hit);
  count(s, 0, "b:1", PrefixOp::Set);
  count(s, 1, "c:1", PrefixOp::Delete);
  count(s, 1, "d:1", PrefixOp::Get);  // worker 1 holds a, c, d: full
  count(s, 0, "e:1", PrefixOp::Get);  // worker 0 holds a, b, e: full
  count(s, 0, "f:1", PrefixOp::Get);  // worker 0's overflow
  PrefixRow overflow;
  std::vector<PrefixRow> rows = s.rows(&overflow);
  REQUIRE(rows.size() == 3);  // a, b, c first seen; d and e folded into the overflow
  uint64_t gets = overflow.gets;
  for (const PrefixRow& r : rows) {
    gets += r.gets;
    if (r.prefix == "a") {
      CHECK(r.gets == 2);
      CHECK(r.hits == 1);
    }
  }
  CHECK(gets == 5);
  CHECK(overflow.gets == 3);
  const std::string d = s.dump();
  CHECK(d.find("PREFIX *:other get 3 hit 0 set 0 del 0\r\nEND\r\n") != std::string::npos);
  CHECK(s.worker(0).size() == 3);
  CHECK(s.worker(1).size() == 3);
}

TEST_CASE("a table never holds more than its bound, whatever keys come") {
  PrefixStats s(1, ':', 100);
  for (int i = 0; i < 100000; ++i) {
    count(s, 0, "p" + std::to_string(i) + ":k", PrefixOp::Get);
  }
  CHECK(s.worker(0).size() == 100);
  PrefixRow overflow;
  CHECK(s.rows(&overflow).size() == 100);
  CHECK(overflow.gets == 100000 - 100);
}

TEST_CASE("control bytes in a prefix are escaped in the dump") {
  PrefixStats s(1, ':', 10);
  count(s, 0, std::string_view("a\r\nb:1", 6), PrefixOp::Get);
  CHECK(s.dump() == "PREFIX a\\x0d\\x0ab get 1 hit 0 set 0 del 0\r\nEND\r\n");
}

TEST_CASE("the registry keeps a pool's stats across snapshots unless its shape changes") {
  PrefixStatsRegistry reg(2);
  auto a = reg.forPool("p", ':', 10);
  a->setEnabled(true);
  CHECK(reg.forPool("p", ':', 10) == a);
  auto b = reg.forPool("p", '/', 10);
  CHECK(b != a);
  CHECK(b->enabled());  // the switch carries over
  CHECK(reg.snapshot().size() == 1);
}

}  // namespace
}  // namespace mcring::stats
