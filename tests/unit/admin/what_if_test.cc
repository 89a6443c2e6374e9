// planWhatIf: the console's what-if parses a server list as the config does and answers what
// `mcring plan` would (config/change_plan), against the pool in force.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "config/topology.h"
#include "proxy/admin/what_if.h"

using mcring::core::planWhatIf;

namespace {

std::shared_ptr<const mcring::config::Topology> topology(const std::string& servers) {
  mcring::config::LoadResult loaded = mcring::config::loadConfigString(
      "main:\n  listen: 127.0.0.1:22122\n  hash: fnv1a_64\n  distribution: ketama\n"
      "  servers:\n" + servers);
  REQUIRE(loaded.ok());
  std::vector<std::string> errors;
  auto t = mcring::config::Topology::build(*loaded.config, 1, &errors);
  REQUIRE(t != nullptr);
  return t;
}

const std::string kFour =
    "    - 127.0.0.1:11211:1 a\n    - 127.0.0.1:11212:1 b\n"
    "    - 127.0.0.1:11213:1 c\n    - 127.0.0.1:11214:1 d\n";

}  // namespace

TEST_CASE("what-if: adding a fifth server to four moves about a fifth, all to the new one") {
  auto t = topology(kFour);
  auto a = planWhatIf(*t, "main",
                      "127.0.0.1:11211:1 a\n127.0.0.1:11212:1 b\n127.0.0.1:11213:1 c\n"
                      "127.0.0.1:11214:1 d\n127.0.0.1:11215:1 e\n");
  REQUIRE(a.status == 200);
  CHECK(a.body.find("\"name\":\"main\"") != std::string::npos);
  CHECK(a.body.find("\"method\":\"exact\"") != std::string::npos);
  // Every moved cell goes to the new server.
  CHECK(a.body.find("\"to\":\"127.0.0.1:11215\",\"fraction\"") != std::string::npos);
  auto moved_at = a.body.find("\"moved\":");
  REQUIRE(moved_at != std::string::npos);
  double moved = std::stod(a.body.substr(moved_at + 8));
  CHECK(moved > 0.15);
  CHECK(moved < 0.25);
}

TEST_CASE("what-if: the same list moves nothing; a pasted YAML block parses") {
  auto t = topology(kFour);
  auto a = planWhatIf(*t, "main", "servers:\n" + kFour + "  # a comment\n\n");
  REQUIRE(a.status == 200);
  CHECK(a.body.find("\"plan\":{\"distribution\":\"ketama\",\"method\":\"exact\",\"samples\":0,"
                    "\"moved\":0,") != std::string::npos);
  auto quoted = planWhatIf(*t, "main", "- \"127.0.0.1:11211:1 a\"\n- '127.0.0.1:11212:1 b'\n");
  CHECK(quoted.status == 200);
}

TEST_CASE("what-if: errors name the line; unknown pools and empty lists are refused") {
  auto t = topology(kFour);
  auto bad = planWhatIf(*t, "main", "127.0.0.1:11211:1 a\n\nnot a server\n");
  CHECK(bad.status == 400);
  CHECK(bad.body.find("line 3:") != std::string::npos);
  auto twice = planWhatIf(*t, "main", "127.0.0.1:11211:1 a\n127.0.0.1:11211:2 b\n");
  CHECK(twice.status == 400);
  CHECK(twice.body.find("listed twice") != std::string::npos);
  CHECK(planWhatIf(*t, "other", "127.0.0.1:11211:1\n").status == 404);
  CHECK(planWhatIf(*t, "main", "# nothing\n").status == 400);
  std::string many;
  for (int i = 0; i < 1001; ++i) {
    many += "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1) + ":11211:1\n";
  }
  auto too_many = planWhatIf(*t, "main", many);
  CHECK(too_many.status == 400);
  CHECK(too_many.body.find("more than 1000") != std::string::npos);
}

TEST_CASE("what-if: with replicas 2 it also answers the replica sets, as `mcring plan` does") {
  mcring::config::LoadResult loaded = mcring::config::loadConfigString(
      "main:\n  listen: 127.0.0.1:22122\n  hash: fnv1a_64\n  distribution: ketama\n"
      "  replicas: 2\n  servers:\n" + kFour);
  REQUIRE(loaded.ok());
  std::vector<std::string> errors;
  auto t = mcring::config::Topology::build(*loaded.config, 1, &errors);
  REQUIRE(t != nullptr);
  auto a = planWhatIf(*t, "main", kFour + "    - 127.0.0.1:11215:1 e\n");
  REQUIRE(a.status == 200);
  // The primaries' plan first, then its replica sets; modula's too.
  const auto sets = a.body.find("\"replica_sets\":{\"replicas_before\":2,\"replicas_after\":2,"
                                "\"method\":\"exact\"");
  REQUIRE(sets != std::string::npos);
  CHECK(a.body.find("\"replica_sets\"", sets + 1) != std::string::npos);
  const auto changed_at = a.body.find("\"changed\":", sets);
  REQUIRE(changed_at != std::string::npos);
  const double changed = std::stod(a.body.substr(changed_at + 10));
  CHECK(changed > 0.3);  // about 2/5 of the sets take the fifth server
  CHECK(changed < 0.5);
  // Without replicas there is no such field (the JSON is what it was).
  auto plain = planWhatIf(*topology(kFour), "main", kFour + "    - 127.0.0.1:11215:1 e\n");
  CHECK(plain.body.find("replica_sets") == std::string::npos);
  // A list too short for the pool's replicas is refused with the router's reason.
  auto one = planWhatIf(*t, "main", "127.0.0.1:11211:1 a\n");
  CHECK(one.status == 400);
  CHECK(one.body.find("replicas is 2 but the pool has 1 server") != std::string::npos);
}
