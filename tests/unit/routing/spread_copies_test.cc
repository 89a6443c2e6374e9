// spreadCopies: the primary first, distinct servers, the lab's salting, bounded attempts.
#include "proxy/routing/spread_copies.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace mcring::routing {
namespace {

std::unique_ptr<const Router> ring(int n, RouterOptions options = {}) {
  std::vector<ServerSpec> servers;
  for (int i = 0; i < n; ++i) {
    servers.push_back({"10.0.0." + std::to_string(i + 1), 11211, 1, ""});
  }
  std::string error;
  auto r = Router::build(servers, options, &error);
  REQUIRE_MESSAGE(r != nullptr, error);
  return r;
}

TEST_CASE("spreadCopies: the key's own server first, then distinct salted servers") {
  auto r = ring(10);
  for (const std::string key : {"hot:object:42", "a", "user:1234:profile"}) {
    std::vector<uint32_t> c = spreadCopies(*r, key, 5);
    REQUIRE(c.size() == 5);
    CHECK(c[0] == r->route(key));
    CHECK(std::set<uint32_t>(c.begin(), c.end()).size() == c.size());
    // Each later copy is the first new server in the salt sequence 1#key, 2#key, ...
    std::vector<uint32_t> expect{r->route(key)};
    for (int s = 1; expect.size() < 5; ++s) {
      uint32_t x = r->route(std::to_string(s) + "#" + key);
      if (std::find(expect.begin(), expect.end(), x) == expect.end()) {
        expect.push_back(x);
      }
    }
    CHECK(c == expect);
    // Pure: the same answer every time.
    CHECK(spreadCopies(*r, key, 5) == c);
  }
}

TEST_CASE("spreadCopies: R distinct servers of 10 with twemproxy's fnv1a_64 ketama") {
  // The default hash: suffix salts (key#1, key#2, ...) land on two or three servers of ten.
  RouterOptions fnv;
  fnv.hash = HashFunction::Fnv1a_64;
  auto r = ring(10, fnv);
  for (const std::string key : {"celebrity", "hot:object:42", "config:blob"}) {
    for (uint32_t n : {2u, 5u, 8u}) {
      CHECK_MESSAGE(spreadCopies(*r, key, n).size() == n, key, " R=", n);
    }
  }
}

TEST_CASE("spreadCopies: never more copies than servers, and bounded attempts") {
  auto r = ring(3);
  CHECK(spreadCopies(*r, "k", 16).size() == 3);
  CHECK(spreadCopies(*r, "k", 0).empty());
  CHECK(spreadCopies(*r, "k", 1) == std::vector<uint32_t>{r->route("k")});
  // A hash tag maps every salted name to the key's own server: one copy only (8R attempts).
  RouterOptions tagged;
  tagged.hash_tag = "{}";
  auto t = ring(10, tagged);
  CHECK(spreadCopies(*t, "{user}:x", 5).size() == 1);
}

}  // namespace
}  // namespace mcring::routing
