// diffConfigs: what a reload record says changed, key by key.
#include "config/config_diff.h"

#include <doctest/doctest.h>

#include <string>

namespace mcring::config {
namespace {

Config load(const std::string& extra) {
  LoadResult r = loadConfigString("alpha:\n  listen: 127.0.0.1:22122\n" + extra +
                                  "  servers:\n    - 127.0.0.1:11211:1\n");
  REQUIRE(r.ok());
  return *r.config;
}

bool changed(const ConfigDiff& d, const std::string& text) {
  for (const PoolDiff& p : d.pools_changed) {
    for (const std::string& k : p.keys_changed) {
      if (k == text) {
        return true;
      }
    }
  }
  return false;
}

TEST_CASE("config diff: every mcring key a reload can change is reported") {
  Config before = load("");
  Config after = load(
      "  client_buffer_limit: 8m\n  buffer_limit: 32m\n  reuseport: true\n"
      "  max_multiget_keys: 500\n  hot_keys: false\n  hot_key_capacity: 64\n"
      "  hot_key_event_percent: 20\n  hot_key_metrics: hashed\n  unavailable_reads: error\n"
      "  unavailable_writes: not_stored\n");
  ConfigDiff d = diffConfigs(before, after);
  CHECK(changed(d, "client_buffer_limit 16777216->8388608"));
  CHECK(changed(d, "buffer_limit 67108864->33554432"));
  CHECK(changed(d, "reuseport false->true"));
  CHECK(changed(d, "max_multiget_keys 100000->500"));
  CHECK(changed(d, "hot_keys true->false"));
  CHECK(changed(d, "hot_key_capacity 128->64"));
  CHECK(changed(d, "hot_key_event_percent 10->20"));
  CHECK(changed(d, "hot_key_metrics off->hashed"));
  CHECK(changed(d, "unavailable_reads miss->error"));
  CHECK(changed(d, "unavailable_writes error->not_stored"));
  CHECK(diffConfigs(before, load("")).empty());
}

}  // namespace
}  // namespace mcring::config

namespace mcring::config {
namespace {

Config routed(const std::string& routes) {
  LoadResult r = loadConfigString(
      "users: {servers: [127.0.0.1:11211:1]}\n"
      "users2: {listen: 127.0.0.1:22124, servers: [127.0.0.1:11212:1]}\n"
      "sessions: {listen: 127.0.0.1:22125, servers: [127.0.0.1:11213:1]}\n"
      "sessions_v2: {listen: 127.0.0.1:22123, servers: [127.0.0.1:11214:1]}\n"
      "front:\n  listen: 127.0.0.1:22122\n  routes:\n" +
      routes);
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.ok());
  return *r.config;
}

TEST_CASE("config diff: route changes, added and removed routes") {
  Config before = routed(
      "    - {prefix: 'user:', pool: users}\n"
      "    - {prefix: 'x:', pool: sessions}\n"
      "    - {default: users2}\n");
  Config after = routed(
      "    - {prefix: 'sess:', pool: sessions}\n"
      "    - {prefix: 'user:', pool: users2}\n"
      "    - {default: users}\n");
  ConfigDiff d = diffConfigs(before, after);
  CHECK(d.summary() ==
        "pool 'front': +route 'sess:' -> sessions, route 'user:' pool users->users2, route "
        "default pool users2->users, -route 'x:'");
  CHECK(!d.serversChanged());
  // Order alone is no change: the longest prefix wins wherever it is.
  Config reordered = routed(
      "    - {default: users2}\n"
      "    - {prefix: 'x:', pool: sessions}\n"
      "    - {prefix: 'user:', pool: users}\n");
  CHECK(diffConfigs(before, reordered).empty());
}

TEST_CASE("config diff: shadow, max_ttl, failover, failover_on_miss, rate_limit of a route") {
  Config before = routed("    - {prefix: 'user:', pool: users}\n    - {default: sessions}\n");
  Config after = routed(
      "    - prefix: 'user:'\n"
      "      pool: users\n"
      "      shadow: {pool: sessions_v2, percent: 10, writes_only: true}\n"
      "      max_ttl: 3600\n"
      "      failover: [users2, sessions]\n"
      "      failover_on_miss: true\n"
      "      rate_limit: {requests_per_second: 5000, burst: 500}\n"
      "    - {default: sessions}\n");
  ConfigDiff d = diffConfigs(before, after);
  REQUIRE(d.pools_changed.size() == 1);
  CHECK(d.pools_changed[0].routes_changed ==
        std::vector<std::string>{"route 'user:' shadow none->sessions_v2 10% writes_only",
                                 "route 'user:' max_ttl none->3600",
                                 "route 'user:' failover []->[users2,sessions]",
                                 "route 'user:' failover_on_miss false->true",
                                 "route 'user:' rate_limit none->5000/s burst 500"});
  CHECK(diffConfigs(after, before).pools_changed[0].routes_changed.size() == 5);
}

TEST_CASE("config diff: a pool that stops or starts listening") {
  Config listened = routed("    - {default: users}\n    - {prefix: 'v2:', pool: sessions_v2}\n");
  LoadResult r = loadConfigString(
      "users: {servers: [127.0.0.1:11211:1]}\n"
      "users2: {listen: 127.0.0.1:22124, servers: [127.0.0.1:11212:1]}\n"
      "sessions: {listen: 127.0.0.1:22125, servers: [127.0.0.1:11213:1]}\n"
      "sessions_v2: {servers: [127.0.0.1:11214:1]}\n"
      "front:\n  listen: 127.0.0.1:22122\n  routes:\n"
      "    - {default: users}\n    - {prefix: 'v2:', pool: sessions_v2}\n");
  REQUIRE(r.ok());
  Config unlistened = *r.config;
  CHECK(diffConfigs(listened, unlistened).summary() ==
        "pool 'sessions_v2': keys 1 (listen 127.0.0.1:22123->none)");
  CHECK(diffConfigs(unlistened, listened).summary() ==
        "pool 'sessions_v2': keys 1 (listen none->127.0.0.1:22123)");
}

}  // namespace
}  // namespace mcring::config
