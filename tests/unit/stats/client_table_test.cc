// ClientTable (top clients): addresses share a slot, the table is bounded and gives the least
// active idle address's slot to a new one, and the rates rank clients.
#include "proxy/stats/client_table.h"

#include <doctest/doctest.h>

#include <string>

namespace mcring::stats {
namespace {

TEST_CASE("connections from one address count together") {
  ClientTable t;
  ClientRef a = t.acquire("10.0.0.1");
  ClientRef b = t.acquire("10.0.0.1");
  CHECK(a.slot == b.slot);
  countRequest(a, 10);
  countRequest(b, 20);
  countWritten(a, 5);
  std::map<std::string, ClientTotals> m;
  t.read(&m);
  REQUIRE(m.size() == 1);
  CHECK(m["10.0.0.1"].requests == 2);
  CHECK(m["10.0.0.1"].bytes_in == 30);
  CHECK(m["10.0.0.1"].bytes_out == 5);
}

TEST_CASE("a full table gives the least active idle address's slot to a new address") {
  ClientTable t;
  std::vector<ClientRef> refs;
  for (size_t i = 0; i < ClientTable::kSlots; ++i) {
    refs.push_back(t.acquire("10.0.1." + std::to_string(i)));
    for (size_t n = 0; n < i + 1; ++n) {
      countRequest(refs.back(), 1);
    }
  }
  t.release(refs[5]);  // idle, 6 requests: the least active idle one
  t.release(refs[9]);
  ClientRef fresh = t.acquire("192.168.0.1");
  CHECK(fresh.slot == refs[5].slot);
  CHECK_FALSE(refs[5].current());  // its session takes a slot again at its next request
  CHECK(refs[9].current());
  std::map<std::string, ClientTotals> m;
  t.read(&m);
  CHECK(m.size() == ClientTable::kSlots);
  CHECK(m.count("10.0.1.5") == 0);
  CHECK(m["192.168.0.1"].requests == 0);
  t.release(refs[5]);  // a stale release leaves the new owner's count alone
  CHECK(fresh.slot->sessions == 1);
}

TEST_CASE("top clients rank by request rate over the interval, then bytes") {
  std::map<std::string, ClientTotals> before{{"a", {100, 1000, 0}}, {"b", {50, 10, 0}}};
  std::map<std::string, ClientTotals> now{
      {"a", {110, 1100, 0}}, {"b", {150, 20, 0}}, {"c", {10, 5000, 0}}};
  std::vector<ClientRate> top = topClients(now, before, 2.0, 10);
  REQUIRE(top.size() == 3);
  CHECK(top[0].address == "b");
  CHECK(top[0].requests_per_s == doctest::Approx(50));
  CHECK(top[1].address == "c");  // 10 requests, more bytes than a's 10
  CHECK(top[2].address == "a");
  CHECK(topClients(now, before, 2.0, 1).size() == 1);
}

}  // namespace
}  // namespace mcring::stats
