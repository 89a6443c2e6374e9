// PrefixTable: the longest prefix wins, the default takes the rest, none without a default.
#include "proxy/routing/prefix_table.h"

#include <doctest/doctest.h>

namespace mcring::routing {
namespace {

TEST_CASE("the longest matching prefix wins, whatever the order given") {
  PrefixTable t;
  t.add("u", 0);
  t.add("user:v2:", 1);
  t.add("user:", 2);
  CHECK(t.match("user:v2:42") == 1);
  CHECK(t.match("user:42") == 2);
  CHECK(t.match("up") == 0);
  CHECK(t.match("user") == 0);  // shorter than "user:": only "u" matches
  CHECK(t.match("sess:1") == PrefixTable::kNoRoute);
}

TEST_CASE("the default takes keys no prefix matches, and the empty key") {
  PrefixTable t;
  t.add("sess:", 0);
  t.setDefault(7);
  CHECK(t.match("sess:") == 0);
  CHECK(t.match("sess") == 7);
  CHECK(t.match("") == 7);
  CHECK(t.match("other") == 7);
}

TEST_CASE("a prefix given twice keeps its first target; an empty table routes nothing") {
  PrefixTable t;
  CHECK(t.empty());
  CHECK(t.match("a") == PrefixTable::kNoRoute);
  t.add("a:", 3);
  t.add("a:", 4);
  CHECK(t.match("a:b") == 3);
  CHECK_FALSE(t.empty());
}

}  // namespace
}  // namespace mcring::routing
