// The docs come from the key table: docs/configuration.md and config/examples/annotated.yml
// cover every key, and the reference table is the generated one.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

#include "config/config.h"
#include "config/pool_keys.h"

namespace mcring::config {
namespace {

constexpr std::string_view kDocPath = "docs/configuration.md";
constexpr std::string_view kBegin = "<!-- BEGIN pool-keys -->\n";
constexpr std::string_view kEnd = "<!-- END pool-keys -->";

std::string readFile(std::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_CASE("docs/configuration.md has the generated key table") {
  std::string doc = readFile(kDocPath);
  size_t begin = doc.find(kBegin);
  size_t end = doc.find(kEnd);
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  begin += kBegin.size();
  const std::string generated = poolKeyReferenceMarkdown();
  if (std::getenv("MCRING_UPDATE_DOCS") != nullptr) {
    doc.replace(begin, end - begin, generated);
    std::ofstream{std::string(kDocPath), std::ios::binary} << doc;
    MESSAGE("rewrote the key table in " << kDocPath);
    return;
  }
  INFO("the key table changed: rerun with MCRING_UPDATE_DOCS=1 to rewrite " << kDocPath);
  CHECK(doc.substr(begin, end - begin) == generated);
}

TEST_CASE("the generated table has a row per key with its default") {
  std::string table = poolKeyReferenceMarkdown();
  for (const PoolKey& key : poolKeys()) {
    CHECK(table.find("| `" + std::string(key.name) + "` |") != std::string::npos);
  }
  CHECK(table.find("| `backlog` | integer | `512` | twemproxy |") != std::string::npos);
  // Optional since routes: a pool only routed to has no listener.
  CHECK(table.find("| `listen` | address | — | twemproxy |") != std::string::npos);
  CHECK(table.find("| `servers` | list | required | twemproxy |") != std::string::npos);
  CHECK(table.find("| `item_size_max` | size | `1m` | mcring |") != std::string::npos);
  CHECK(table.find("`fnv1a_64`, ") != std::string::npos);  // choices come from routing
}

TEST_CASE("annotated.yml sets every key that is not refused") {
  LoadResult r = loadConfigFile("config/examples/annotated.yml");
  REQUIRE(r.ok());
  std::string text = readFile("config/examples/annotated.yml");
  for (const PoolKey& key : poolKeys()) {
    // A pool with routes has no servers: config/examples/routes.yml shows `routes`; nor does
    // a discovered pool: config/examples/discovery.yml shows servers_dns (and, commented out,
    // servers_srv) and the dns_ keys.
    bool refused = key.name == "redis_auth" || key.name == "redis_db" || key.name == "routes" ||
                   key.name == "servers_dns" || key.name == "servers_srv" ||
                   key.name.substr(0, 4) == "dns_";
    bool set = text.find("\n  " + std::string(key.name) + ":") != std::string::npos;
    CHECK_MESSAGE(set != refused, key.name);
  }
}

TEST_CASE("closestName suggests typos only") {
  std::vector<std::string_view> names{"timeout", "servers", "hash_tag", "hash"};
  CHECK(closestName("timout", names) == "timeout");
  CHECK(closestName("hashtag", names) == "hash_tag");
  CHECK(closestName("hsah", names).empty());  // two edits in four letters is not a typo
  CHECK(closestName("colour", names).empty());
}

}  // namespace
}  // namespace mcring::config
