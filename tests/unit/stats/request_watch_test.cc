// The watch stream's pure parts: keys as log_keys shows them (escaped, hashed, hidden), the
// proxy_req and eventsskipped lines, a reply's status token, the bounded per-watcher buffer, and
// the hub delivering every line once to each watcher.
#include "proxy/stats/request_watch.h"

#include <doctest/doctest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "proxy/stats/hyperloglog.h"
#include "proxy/stats/request_line.h"

namespace mcring::stats {
namespace {

TEST_CASE("a plain key is escaped: no byte outside 0x21..0x7e is written raw") {
  CHECK(shownKey("user:42", KeyShown::Plain) == "user:42");
  CHECK(shownKey(std::string("a b\\c\n\r\x01\x7f\xff\0z", 12), KeyShown::Plain) ==
        "a\\x20b\\x5cc\\x0a\\x0d\\x01\\x7f\\xff\\x00z");
  const std::string escaped = shownKey(std::string("\x00\x80\xfe\t", 4), KeyShown::Plain);
  for (unsigned char c : escaped) {
    CHECK(c > 0x20);
    CHECK(c < 0x7f);
  }
}

TEST_CASE("hash and none hide the key") {
  const std::string hashed = shownKey("secret", KeyShown::Hash);
  CHECK(hashed.size() == 5 + 16);
  CHECK(hashed.rfind("xxh3:", 0) == 0);
  CHECK(hashed.find("secret") == std::string::npos);
  CHECK(hashed == shownKey("secret", KeyShown::Hash));
  CHECK(hashed != shownKey("secret2", KeyShown::Hash));
  char expect[32];
  std::snprintf(expect, sizeof(expect), "xxh3:%016" PRIx64, HyperLogLog::hashKey("secret"));
  CHECK(hashed == expect);  // the form hot-key events and /metrics use
  CHECK(shownKey("secret", KeyShown::None) == "-");
}

TEST_CASE("proxy_req line: memcached's ts/gid/type, then mcring's fields") {
  RequestRecord r;
  r.verb = "get";
  r.key = "k\x01";
  r.keys = 1;
  r.status = "VALUE";
  r.backend = "127.0.0.1:11211";
  r.client = "127.0.0.1:5000";
  r.elapsed_us = 1234;
  std::string out;
  appendProxyReqLine(out, 1700000000000042, 7, r, KeyShown::Plain);
  CHECK(out ==
        "ts=1700000000.000042 gid=7 type=proxy_req elapsed=1234 cmd=get key=k\\x01 "
        "status=VALUE be=127.0.0.1:11211 client=127.0.0.1:5000\r\n");
  out.clear();
  r.keys = 3;
  r.route = "users";
  r.status = "";
  r.backend = "";
  appendProxyReqLine(out, 1700000000000042, 8, r, KeyShown::None);
  CHECK(out ==
        "ts=1700000000.000042 gid=8 type=proxy_req elapsed=1234 cmd=get key=- keys=3 status=- "
        "be=- client=127.0.0.1:5000 route=users\r\n");
  out.clear();
  r.keys = 0;  // a keyless command
  r.verb = "version";
  r.route = "";
  appendProxyReqLine(out, 1700000000000042, 9, r, KeyShown::Plain);
  CHECK(out.find(" cmd=version key=- status=-") != std::string::npos);
}

TEST_CASE("eventsskipped line") {
  std::string out;
  appendEventsSkippedLine(out, 1700000001500000, 12, 345);
  CHECK(out == "ts=1700000001.500000 gid=12 type=eventsskipped skipped=345\r\n");
}

TEST_CASE("a reply's status is its first token, printable and short") {
  CHECK(replyStatus("STORED\r\n") == "STORED");
  CHECK(replyStatus("VALUE k 0 1\r\nx\r\nEND\r\n") == "VALUE");
  CHECK(replyStatus("SERVER_ERROR backend timeout\r\n") == "SERVER_ERROR");
  CHECK(replyStatus("") == "");
  CHECK(replyStatus("\x80\x01") == "");
  CHECK(replyStatus("AVERYLONGSTATUSTOKENINDEED\r\n").size() == kStatusMax);
}

TEST_CASE("the watcher buffer is bounded: lines past it are counted, then reported first") {
  WatchBuffer b(100);
  const std::string line(30, 'a');
  CHECK(b.push(line, 1000000, 1));
  CHECK(b.push(line, 1000000, 2));
  CHECK(b.push(line, 1000000, 3));
  CHECK_FALSE(b.push(line, 1000000, 4));  // 120 > 100
  CHECK_FALSE(b.push(line, 1000000, 5));
  CHECK(b.size() == 90);
  CHECK(b.skipped() == 2);
  std::string out;
  b.takeAll(out, 2000000, 6);
  CHECK(out == line + line + line);
  CHECK(b.size() == 0);
  // The next line that fits comes after the count of those lost.
  CHECK(b.push("x\r\n", 3000000, 7));
  out.clear();
  b.takeAll(out, 3000000, 8);
  CHECK(out == "ts=3.000000 gid=7 type=eventsskipped skipped=2\r\nx\r\n");
  CHECK(b.skipped() == 0);
  // Nothing more arrived after a loss: taking reports the loss alone.
  for (int i = 0; i < 5; ++i) {
    b.push(std::string(60, 'b'), 4000000, 9);
  }
  out.clear();
  b.takeAll(out, 4000000, 10);
  CHECK(out == std::string(60, 'b'));
  out.clear();
  b.takeAll(out, 5000000, 11);
  CHECK(out == "ts=5.000000 gid=11 type=eventsskipped skipped=4\r\n");
  out.clear();
  b.takeAll(out, 5000000, 12);
  CHECK(out.empty());
  // Never more than its capacity, whatever is pushed.
  for (int i = 0; i < 1000; ++i) {
    b.push(std::string(i % 70, 'c'), 6000000, 13);
    CHECK(b.size() <= b.capacity());
  }
}

TEST_CASE("the hub: watching() only while attached; every line to every watcher, once") {
  RequestWatch& hub = RequestWatch::instance();
  CHECK_FALSE(watching());
  int wakes_a = 0;
  int wakes_b = 0;
  auto a = hub.attach("p", [&] { ++wakes_a; });
  auto b = hub.attach(
      "p", [&] { ++wakes_b; }, 400);
  int wakes_other = 0;
  auto other = hub.attach("other", [&] { ++wakes_other; });
  CHECK(watching());
  RequestRecord r;
  r.verb = "set";
  r.keys = 1;
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&hub, t] {
      for (int i = 0; i < 100; ++i) {
        RequestRecord rec;
        rec.verb = "set";
        std::string key = "t" + std::to_string(t) + "-" + std::to_string(i);
        rec.key = key;
        rec.keys = 1;
        hub.publish("p", rec, KeyShown::Plain);
      }
    });
  }
  for (auto& p : producers) {
    p.join();
  }
  std::string got_a;
  a->take(got_a);
  size_t lines = 0;
  for (size_t pos = 0; (pos = got_a.find("type=proxy_req", pos)) != std::string::npos; ++pos) {
    ++lines;
  }
  CHECK(lines == 400);
  CHECK(wakes_a == 1);  // woken once until it takes
  std::string got_b;
  b->take(got_b);
  CHECK(got_b.size() <= 400);
  b->take(got_b);  // the loss, once its buffer is drained
  CHECK(got_b.find("type=eventsskipped skipped=") != std::string::npos);
  std::string got_other;
  other->take(got_other);
  CHECK(got_other.empty());  // another pool's requests are not its to see
  CHECK(wakes_other == 0);
  hub.detach(a);
  hub.detach(b);
  hub.detach(other);
  CHECK_FALSE(watching());
  hub.publish("p", r, KeyShown::Plain);  // no watcher: nothing
}

TEST_CASE("the hub: at most kMaxWatchers, as memcached's WATCHER_LIMIT") {
  RequestWatch& hub = RequestWatch::instance();
  std::vector<std::shared_ptr<Watcher>> attached;
  for (size_t i = 0; i < RequestWatch::kMaxWatchers; ++i) {
    attached.push_back(hub.attach("p", [] {}));
    CHECK(attached.back() != nullptr);
  }
  CHECK(hub.attach("p", [] {}) == nullptr);
  hub.detach(attached.back());
  attached.pop_back();
  attached.push_back(hub.attach("p", [] {}));
  CHECK(attached.back() != nullptr);
  for (const auto& w : attached) {
    hub.detach(w);
  }
  CHECK_FALSE(watching());
}

}  // namespace
}  // namespace mcring::stats
