// mergeStats: two servers' answers to each view become one reply in memcached's format.
#include "proxy/protocol/stats_merge.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace mcring::protocol {
namespace {

std::map<std::string, std::string> parse(const std::string& reply) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < reply.size()) {
    size_t eol = reply.find("\r\n", pos);
    REQUIRE(eol != std::string::npos);
    std::string line = reply.substr(pos, eol - pos);
    pos = eol + 2;
    if (line == "END") {
      CHECK(pos == reply.size());
      break;
    }
    REQUIRE(line.rfind("STAT ", 0) == 0);
    size_t sp = line.find(' ', 5);
    out[line.substr(5, sp - 5)] = line.substr(sp + 1);
  }
  return out;
}

const std::string kGeneralA =
    "STAT pid 11\r\nSTAT uptime 500\r\nSTAT time 1700000000\r\nSTAT version 1.6.18\r\n"
    "STAT libevent 2.1.12-stable\r\nSTAT curr_connections 9\r\nSTAT cmd_get 10\r\n"
    "STAT get_hits 4\r\nSTAT get_misses 6\r\nSTAT limit_maxbytes 67108864\r\n"
    "STAT accepting_conns 1\r\nSTAT hash_power_level 16\r\nSTAT bytes 100\r\n"
    "STAT curr_items 3\r\nSTAT total_items 5\r\nSTAT evictions 1\r\nEND\r\n";
const std::string kGeneralB =
    "STAT pid 12\r\nSTAT uptime 400\r\nSTAT time 1700000001\r\nSTAT version 1.6.9\r\n"
    "STAT libevent 2.1.12-stable\r\nSTAT curr_connections 7\r\nSTAT cmd_get 1\r\n"
    "STAT get_hits 1\r\nSTAT get_misses 0\r\nSTAT limit_maxbytes 67108864\r\n"
    "STAT accepting_conns 0\r\nSTAT hash_power_level 17\r\nSTAT bytes 50\r\n"
    "STAT curr_items 2\r\nSTAT total_items 2\r\nSTAT evictions 0\r\nEND\r\n";

TEST_CASE("stats: data summed, the process and its connections the proxy's, clashes prefixed") {
  StatList own = {{"pid", "99"},          {"uptime", "7"},          {"time", "1700000002"},
                  {"mcring_version", "0.1.0"}, {"curr_connections", "3"}, {"cmd_get", "12"},
                  {"get_hits", "5"},      {"cmd_delete", "2"},       {"config_generation", "1"}};
  MergedStats m = mergeStats(StatsView::General, {kGeneralA, kGeneralB}, own, "1.6.18");
  auto s = parse(m.reply);
  CHECK(m.answered == 2);
  CHECK(m.failed == 0);
  CHECK(s["pid"] == "99");
  CHECK(s["uptime"] == "7");
  CHECK(s["curr_connections"] == "3");
  CHECK(s["version"] == "1.6.9");  // the lowest: what every server of the pool can do
  CHECK(m.version == "1.6.9");
  CHECK(s["mcring_version"] == "0.1.0");
  CHECK(s["libevent"] == "2.1.12-stable");
  CHECK(s["cmd_get"] == "11");
  CHECK(s["get_hits"] == "5");
  CHECK(s["get_misses"] == "6");
  CHECK(s["curr_items"] == "5");
  CHECK(s["total_items"] == "7");
  CHECK(s["bytes"] == "150");
  CHECK(s["limit_maxbytes"] == "134217728");
  CHECK(s["evictions"] == "1");
  CHECK(s["accepting_conns"] == "0");
  CHECK(s["hash_power_level"] == "17");
  CHECK(s["mcring_cmd_get"] == "12");
  CHECK(s["mcring_get_hits"] == "5");
  CHECK(s["cmd_delete"] == "2");  // not a memcached field: keeps its name
  CHECK(s.count("mcring_pid") == 0);
  CHECK(s["mcring_stats_servers"] == "2");
  CHECK(s["mcring_stats_servers_failed"] == "0");
  // memcached's order: pid first, version fourth.
  CHECK(m.reply.rfind("STAT pid 99\r\nSTAT uptime 7\r\nSTAT time 1700000002\r\nSTAT version 1.6.9\r\n", 0) == 0);
}

TEST_CASE("stats: a server that failed or answered an error is left out and counted") {
  MergedStats m = mergeStats(StatsView::General, {kGeneralA, std::nullopt, std::string_view("ERROR\r\n")},
                             {{"pid", "99"}}, "1.6.18");
  auto s = parse(m.reply);
  CHECK(m.answered == 1);
  CHECK(m.failed == 2);
  CHECK(s["curr_items"] == "3");
  CHECK(s["mcring_stats_servers_failed"] == "2");
}

TEST_CASE("stats with no server answering: the proxy's fields and the known version") {
  MergedStats m = mergeStats(StatsView::General, {std::nullopt}, {{"pid", "99"}, {"cmd_get", "1"}},
                             "1.6.17");
  auto s = parse(m.reply);
  CHECK(s["version"] == "1.6.17");
  CHECK(s["pid"] == "99");
  CHECK(s["mcring_cmd_get"] == "1");
  CHECK(s.count("curr_items") == 0);
  CHECK(m.version.empty());
}

TEST_CASE("stats items: summed per slab class, ages the oldest, classes in order") {
  std::string a =
      "STAT items:1:number 3\r\nSTAT items:1:age 100\r\nSTAT items:1:evicted 1\r\n"
      "STAT items:12:number 1\r\nSTAT items:12:age 5\r\nEND\r\n";
  std::string b =
      "STAT items:2:number 4\r\nSTAT items:2:age 7\r\n"
      "STAT items:1:number 2\r\nSTAT items:1:age 300\r\nSTAT items:1:evicted 2\r\nEND\r\n";
  MergedStats m = mergeStats(StatsView::Items, {a, b}, {}, "1.6.18");
  CHECK(m.reply ==
        "STAT items:1:number 5\r\nSTAT items:1:age 300\r\nSTAT items:1:evicted 3\r\n"
        "STAT items:2:number 4\r\nSTAT items:2:age 7\r\n"
        "STAT items:12:number 1\r\nSTAT items:12:age 5\r\nEND\r\n");
}

TEST_CASE("stats slabs: per class summed, geometry kept, active_slabs recounted") {
  std::string a =
      "STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 3\r\nSTAT active_slabs 1\r\n"
      "STAT total_malloced 1048576\r\nEND\r\n";
  std::string b =
      "STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 2\r\nSTAT 5:chunk_size 240\r\n"
      "STAT 5:used_chunks 1\r\nSTAT active_slabs 2\r\nSTAT total_malloced 2097152\r\nEND\r\n";
  MergedStats m = mergeStats(StatsView::Slabs, {a, b}, {}, "1.6.18");
  CHECK(m.reply ==
        "STAT 1:chunk_size 96\r\nSTAT 1:used_chunks 5\r\nSTAT 5:chunk_size 240\r\n"
        "STAT 5:used_chunks 1\r\nSTAT active_slabs 2\r\nSTAT total_malloced 3145728\r\nEND\r\n");
}

TEST_CASE("stats settings is the first answering server's; sizes summed per size") {
  std::string a = "STAT maxbytes 67108864\r\nSTAT evictions on\r\nEND\r\n";
  std::string b = "STAT maxbytes 1024\r\nSTAT evictions off\r\nEND\r\n";
  CHECK(mergeStats(StatsView::Settings, {std::nullopt, a, b}, {}, "").reply == a);
  std::string sa = "STAT 96 2\r\nSTAT 192 1\r\nEND\r\n";
  std::string sb = "STAT 64 1\r\nSTAT 96 3\r\nEND\r\n";
  CHECK(mergeStats(StatsView::Sizes, {sa, sb}, {}, "").reply ==
        "STAT 64 1\r\nSTAT 96 5\r\nSTAT 192 1\r\nEND\r\n");
  std::string disabled = "STAT sizes_status disabled\r\nEND\r\n";
  CHECK(mergeStats(StatsView::Sizes, {disabled, disabled}, {}, "").reply == disabled);
}

TEST_CASE("stats conns: every server's lines, named by the server's position") {
  std::string a = "STAT 24:addr tcp:127.0.0.1:1\r\nEND\r\n";
  std::string b = "STAT 24:addr tcp:127.0.0.1:2\r\nEND\r\n";
  CHECK(mergeStats(StatsView::Conns, {a, std::nullopt, b}, {}, "").reply ==
        "STAT 0.24:addr tcp:127.0.0.1:1\r\nSTAT 2.24:addr tcp:127.0.0.1:2\r\nEND\r\n");
}

TEST_CASE("stats cachedump: ITEM lines in pool order; the servers' refusal when none listed") {
  std::string a = "ITEM a [1 b; 0 s]\r\nEND\r\n";
  std::string b = "ITEM b [2 b; 0 s]\r\nITEM c [3 b; 0 s]\r\nEND\r\n";
  CHECK(mergeStats(StatsView::CacheDump, {a, b}, {}, "").reply ==
        "ITEM a [1 b; 0 s]\r\nITEM b [2 b; 0 s]\r\nITEM c [3 b; 0 s]\r\nEND\r\n");
  std::string illegal = "CLIENT_ERROR Illegal slab id\r\n";
  CHECK(mergeStats(StatsView::CacheDump, {illegal, illegal}, {}, "").reply == illegal);
  CHECK(mergeStats(StatsView::CacheDump, {illegal, a}, {}, "").reply == a);
  CHECK(mergeStats(StatsView::CacheDump, {std::nullopt}, {}, "").reply == "END\r\n");
}

TEST_CASE("version: the lowest the servers report, else the fallback") {
  MergedStats m = mergeStats(StatsView::Version,
                             {std::string_view("VERSION 1.6.18\r\n"), std::nullopt,
                              std::string_view("VERSION 1.6.9\r\n")},
                             {}, "1.6.18");
  CHECK(m.reply == "VERSION 1.6.9\r\n");
  CHECK(m.answered == 2);
  CHECK(m.failed == 1);
  CHECK(mergeStats(StatsView::Version, {std::nullopt}, {}, "1.6.18").reply == "VERSION 1.6.18\r\n");
  CHECK(mergeStats(StatsView::Version, {std::string_view("ERROR\r\n")}, {}, "1.6.17").reply ==
        "VERSION 1.6.17\r\n");
}

TEST_CASE("versions compare by their dotted numbers") {
  CHECK(compareVersions("1.6.9", "1.6.18") < 0);
  CHECK(compareVersions("1.6.18", "1.6.18") == 0);
  CHECK(compareVersions("1.10.0", "1.9.99") > 0);
  CHECK(compareVersions("1.6", "1.6.0") < 0);
  CHECK(compareVersions("1.6.21-rc1", "1.6.21") == 0);
}

std::string statLines(uint32_t n, const char* fmt) {
  std::string out;
  char line[64];
  for (uint32_t i = 0; i < n; ++i) {
    snprintf(line, sizeof line, fmt, i);
    out += line;
  }
  return out + "END\r\n";
}

TEST_CASE("an answer over its view's line bound makes the reply one error line") {
  const std::string big = statLines(kMaxStatsLines + 1, "STAT f%u 1\r\n");
  const std::string fits = statLines(kMaxStatsLines, "STAT 1:f%u 1\r\n");
  for (StatsView v : {StatsView::General, StatsView::Settings, StatsView::Items, StatsView::Slabs,
                      StatsView::Sizes}) {
    MergedStats m = mergeStats(v, {kGeneralA, big}, {}, "1.6.18");
    CHECK(m.too_large);
    CHECK(m.reply == "SERVER_ERROR stats answer too large: a server sent more than 100000 lines\r\n");
  }
  CHECK_FALSE(mergeStats(StatsView::Slabs, {fits}, {}, "").too_large);
  // conns and cachedump are passed on, not merged: their bound is higher.
  CHECK_FALSE(mergeStats(StatsView::Conns, {big}, {}, "").too_large);
  const std::string conns = statLines(kMaxListedLines + 1, "STAT %u:addr x\r\n");
  CHECK(mergeStats(StatsView::Conns, {conns}, {}, "").reply ==
        "SERVER_ERROR stats answer too large: a server sent more than 500000 lines\r\n");
  const std::string items = statLines(kMaxListedLines + 1, "ITEM k%u [1 b; 0 s]\r\n");
  MergedStats dump = mergeStats(StatsView::CacheDump, {items}, {}, "");
  CHECK(dump.too_large);
  CHECK(dump.reply.rfind("SERVER_ERROR stats answer too large", 0) == 0);
}

TEST_CASE("a merge of more distinct names than its bound is one error line") {
  // Two servers each within the line bound, together over the name bound.
  const std::string a = statLines(kMaxStatsNames / 2 + 1, "STAT a%u 1\r\n");
  const std::string b = statLines(kMaxStatsNames / 2 + 1, "STAT b%u 1\r\n");
  for (StatsView v : {StatsView::General, StatsView::Sizes, StatsView::Slabs}) {
    MergedStats m = mergeStats(v, {a, b}, {}, "1.6.18");
    CHECK(m.too_large);
    CHECK(m.reply == "SERVER_ERROR stats answer too large: more than 100000 distinct names\r\n");
  }
  const std::string ia = statLines(kMaxStatsNames / 2 + 1, "STAT items:%u:number 1\r\n");
  const std::string ib = statLines(kMaxStatsNames / 2 + 1, "STAT items:%u:age 1\r\n");
  CHECK(mergeStats(StatsView::Items, {ia, ib}, {}, "").too_large);
  // The same names from both: within the bound, summed.
  MergedStats same = mergeStats(StatsView::Sizes, {a, a}, {}, "");
  CHECK_FALSE(same.too_large);
  CHECK(same.reply.rfind("STAT a0 2\r\nSTAT a1 2\r\n", 0) == 0);
}

TEST_CASE("which stats arguments are the servers' views") {
  CHECK(statsViewOf("") == StatsView::General);
  CHECK(statsViewOf("items") == StatsView::Items);
  CHECK(statsViewOf("slabs") == StatsView::Slabs);
  CHECK(statsViewOf("settings") == StatsView::Settings);
  CHECK(statsViewOf("sizes") == StatsView::Sizes);
  CHECK(statsViewOf("conns") == StatsView::Conns);
  CHECK(statsViewOf("cachedump 1 0") == StatsView::CacheDump);
  CHECK_FALSE(statsViewOf("reloads").has_value());
  CHECK_FALSE(statsViewOf("backends").has_value());
  CHECK_FALSE(statsViewOf("detail dump").has_value());
  CHECK_FALSE(statsViewOf("itemsx").has_value());
}

}  // namespace
}  // namespace mcring::protocol
