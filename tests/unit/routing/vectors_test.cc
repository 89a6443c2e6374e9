// Every row of the real-implementation vectors in tests/vectors/ must route identically.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {
namespace {

struct Row {
  std::string key;
  std::string server;
};

// "# " lines describe the setup; then the header "key<TAB>server"; then one row per key.
std::vector<Row> readVectors(const std::string& file) {
  std::ifstream in(std::string(MCRING_VECTORS_DIR) + "/" + file);
  REQUIRE_MESSAGE(in.good(), "cannot open " << file);
  std::vector<Row> rows;
  std::string line;
  bool header_seen = false;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      continue;
    }
    if (!header_seen) {
      REQUIRE(line == "key\tserver");
      header_seen = true;
      continue;
    }
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    rows.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return rows;
}

// 127.0.0.1:11301 .. 11305, weight 1, no names, in this order.
std::vector<ServerSpec> fiveServers() {
  std::vector<ServerSpec> servers;
  for (uint16_t port = 11301; port <= 11305; ++port) {
    servers.push_back({"127.0.0.1", port, 1, ""});
  }
  return servers;
}

size_t countMatches(const std::string& file, const RouterOptions& options) {
  const auto servers = fiveServers();
  std::string error;
  const auto router = Router::build(servers, options, &error);
  REQUIRE_MESSAGE(router != nullptr, error);
  const auto rows = readVectors(file);
  REQUIRE(rows.size() == 2041);
  size_t matched = 0;
  for (const Row& row : rows) {
    const ServerSpec& s = servers[router->route(row.key)];
    const std::string got = s.host + ":" + std::to_string(s.port);
    if (got == row.server) {
      ++matched;
    } else {
      CAPTURE(row.key);
      CHECK(got == row.server);
    }
  }
  MESSAGE(file << ": " << matched << "/" << rows.size() << " rows match");
  return matched;
}

TEST_CASE("twemproxy ketama fnv1a_64 vectors") {
  RouterOptions o;  // twemproxy defaults: ketama, fnv1a_64, twemproxy flavour
  CHECK(countMatches("twemproxy_ketama_fnv1a64_5.tsv", o) == 2041);
}

TEST_CASE("twemproxy ketama md5 vectors") {
  RouterOptions o;
  o.hash = HashFunction::Md5;
  CHECK(countMatches("twemproxy_ketama_md5_5.tsv", o) == 2041);
}

TEST_CASE("twemproxy modula fnv1a_64 vectors") {
  RouterOptions o;
  o.distribution = Distribution::Modula;
  CHECK(countMatches("twemproxy_modula_fnv1a64_5.tsv", o) == 2041);
}

TEST_CASE("libmemcached KETAMA_WEIGHTED vectors (= twemproxy flavour with md5)") {
  RouterOptions o;
  o.hash = HashFunction::Md5;
  CHECK(countMatches("libmemcached_ketama_weighted_5.tsv", o) == 2041);
}

TEST_CASE("libmemcached CONSISTENT_KETAMA vectors (libmemcached flavour, one_at_a_time)") {
  RouterOptions o;
  o.hash = HashFunction::OneAtATime;
  o.ketama_compat = KetamaCompat::Libmemcached;
  CHECK(countMatches("libmemcached_ketama_default_5.tsv", o) == 2041);
}

}  // namespace
}  // namespace mcring::routing
