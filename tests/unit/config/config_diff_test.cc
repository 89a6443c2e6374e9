// diffConfigs: what a reload record says changed, key by key.
#include <doctest/doctest.h>

#include <string>

#include "config/config_diff.h"

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
