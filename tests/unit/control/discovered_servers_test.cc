// DiscoveredServers: additions at once, removals after dns_remove_after answers, flapping
// records that change nothing, removals of more than half held until repeated.
#include "proxy/control/discovered_servers.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace mcring::core {
namespace {

using List = std::vector<std::string>;

TEST_CASE("the first answer is the list; a new address joins at once") {
  DiscoveredServers d(3);
  CHECK_FALSE(d.resolved());
  auto step = d.onAnswer({"10.0.0.2:11211", "10.0.0.1:11211"});
  CHECK(step.changed());
  CHECK(d.servers() == List{"10.0.0.1:11211", "10.0.0.2:11211"});
  step = d.onAnswer({"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"});
  CHECK(step.added == List{"10.0.0.3:11211"});
  CHECK(d.servers().size() == 3);
}

TEST_CASE("a server leaves at the remove_after-th consecutive answer without it") {
  DiscoveredServers d(3);
  d.onAnswer({"a:1", "b:1", "c:1"});
  CHECK_FALSE(d.onAnswer({"a:1", "b:1"}).changed());
  CHECK_FALSE(d.onAnswer({"a:1", "b:1"}).changed());
  auto step = d.onAnswer({"a:1", "b:1"});
  CHECK(step.removed == List{"c:1"});
  CHECK(d.servers() == List{"a:1", "b:1"});
}

TEST_CASE("a flapping record changes nothing: an answer with it resets its count") {
  DiscoveredServers d(3);
  d.onAnswer({"a:1", "b:1", "c:1"});
  for (int i = 0; i < 20; ++i) {
    CHECK_FALSE(d.onAnswer({"a:1", "b:1"}).changed());
    CHECK_FALSE(d.onAnswer({"a:1", "b:1"}).changed());
    CHECK_FALSE(d.onAnswer({"a:1", "b:1", "c:1"}).changed());
  }
  CHECK(d.servers().size() == 3);
}

TEST_CASE("removing more than half is held once, then applied when the answer repeats") {
  DiscoveredServers d(1);
  d.onAnswer({"a:1", "b:1", "c:1"});
  auto held = d.onAnswer({"a:1"});
  CHECK_FALSE(held.changed());
  CHECK(held.held == List{"b:1", "c:1"});
  CHECK(d.servers().size() == 3);
  auto applied = d.onAnswer({"a:1"});
  CHECK(applied.removed == List{"b:1", "c:1"});
  CHECK(d.servers() == List{"a:1"});
  // Exactly half is not more than half: applied at once.
  DiscoveredServers e(1);
  e.onAnswer({"a:1", "b:1", "c:1", "d:1"});
  CHECK(e.onAnswer({"a:1", "b:1"}).removed == List{"c:1", "d:1"});
}

TEST_CASE("a held removal that does not repeat is forgotten") {
  DiscoveredServers d(1);
  d.onAnswer({"a:1", "b:1", "c:1"});
  CHECK(d.onAnswer({"a:1"}).held.size() == 2);
  CHECK_FALSE(d.onAnswer({"a:1", "b:1", "c:1"}).changed());
  CHECK(d.onAnswer({"a:1"}).held.size() == 2);  // held again, not applied
  CHECK(d.servers().size() == 3);
}

TEST_CASE("an empty answer changes nothing") {
  DiscoveredServers d(1);
  d.onAnswer({"a:1"});
  CHECK_FALSE(d.onAnswer({}).changed());
  CHECK(d.servers() == List{"a:1"});
}

}  // namespace
}  // namespace mcring::core
