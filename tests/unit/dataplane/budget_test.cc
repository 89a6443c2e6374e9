// Back-pressure and the memory budget: a client that does not read is no longer read; a reply
// that would pass client_buffer_limit or the pool's buffer_limit while queued is refused with
// memcached's out-of-memory error; the FIFO head's reply streams whatever its size (a multi-get
// over several servers in key order, its later servers waiting for their turn); a client that
// holds almost nothing draws on the pool's reserve.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proxy/common/clock.h"
#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

namespace {
constexpr std::string_view kOom = "SERVER_ERROR out of memory writing get response\r\n";
}

TEST_CASE("back-pressure: a client that does not read its replies is no longer read") {
  FakeBackend b0;
  // Read no more at half of 64k buffered for the client.
  DataPlane dp({&b0}, "  client_buffer_limit: 64k\n");
  auto client = dp.connect(/*sndbuf=*/4096);
  const std::string value(16 * 1024, 'v');
  std::vector<std::string> keys;
  std::string stuck;  // the first request mcring did not read
  for (int i = 0; i < 20; ++i) {
    const std::string key = "bp" + std::to_string(i);
    const std::string req = "get " + key + "\r\n";
    REQUIRE(client.send(req));
    const std::string got = b0.read(req.size(), i == 0 ? 2000 : 100);
    if (got.empty()) {
      stuck = key;
      break;
    }
    REQUIRE(got == req);
    keys.push_back(key);
    REQUIRE(b0.send(valueUnit(key, value) + "END\r\n"));
  }
  // ~32k of replies (minus what the socket holds) stop the reading: a handful of requests.
  CHECK(!stuck.empty());
  CHECK(keys.size() >= 2);
  CHECK(keys.size() <= 5);

  // The client reads: every reply, in order, then its last request is read and answered.
  for (const std::string& key : keys) {
    const std::string want = valueUnit(key, value) + "END\r\n";
    REQUIRE(client.read(want.size()) == want);
  }
  REQUIRE(b0.expect("get " + stuck + "\r\n") == "get " + stuck + "\r\n");
  REQUIRE(b0.send("END\r\n"));
  CHECK(client.read(5) == "END\r\n");
  CHECK(dp.counters().client_oom_replies.load() == 0);
  CHECK(dp.counters().client_slow_closed.load() == 0);
}

TEST_CASE("back-pressure: at most 256 requests of one client are outstanding") {
  FakeBackend b0;
  DataPlane dp({&b0});
  auto client = dp.connect();
  std::string request;
  for (int i = 0; i < 300; ++i) {
    request += "delete d" + std::to_string(i) + "\r\n";
  }
  REQUIRE(client.send(request));
  std::string got = b0.read(1);
  got += b0.readQuiet(30);
  // All 300 were sent in one write; mcring forwards 256 and waits for replies.
  size_t lines = 0;
  for (char ch : got) {
    lines += ch == '\n';
  }
  CHECK(lines == 256);
  CHECK(request.compare(0, got.size(), got) == 0);
  std::string answers;
  for (int i = 0; i < 256; ++i) {
    answers += "NOT_FOUND\r\n";
  }
  REQUIRE(b0.send(answers));
  const std::string rest = request.substr(got.size());
  CHECK(b0.expect(rest) == rest);
  std::string more;
  for (int i = 256; i < 300; ++i) {
    more += "DELETED\r\n";
  }
  REQUIRE(b0.send(more));
  CHECK(client.read(answers.size() + more.size()) == answers + more);
}

TEST_CASE("client_buffer_limit: a queued reply over the limit is refused, the head streams") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  client_buffer_limit: 64k\n");
  auto client = dp.connect();
  const std::string a = dp.keyOn(0, "a"), b = dp.keyOn(1, "b"), c = dp.keyOn(1, "c");
  REQUIRE(client.send("get " + a + "\r\nget " + b + "\r\n"));
  REQUIRE(b0.expect("get " + a + "\r\n") == "get " + a + "\r\n");
  REQUIRE(b1.expect("get " + b + "\r\n") == "get " + b + "\r\n");
  // b's reply (80k) comes first and would wait behind a's: over 64k, refused.
  REQUIRE(b1.send(valueUnit(b, std::string(80 * 1024, 'b')) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().client_oom_replies.load() == 1; }));
  // a's reply (200k) is the head's: it streams to the client though it is over the limit.
  const std::string big_a = std::string(200 * 1024, 'a');
  REQUIRE(b0.send(valueUnit(a, big_a) + "END\r\n"));
  const std::string want = valueUnit(a, big_a) + "END\r\n" + std::string(kOom);
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
  // The session goes on, and b's refusal gave its memory back: a 60k reply queued behind
  // another fits now.
  REQUIRE(client.send("get " + a + "\r\nget " + c + "\r\n"));
  REQUIRE(b0.expect("get " + a + "\r\n") == "get " + a + "\r\n");
  REQUIRE(b1.expect("get " + c + "\r\n") == "get " + c + "\r\n");
  const std::string c_value(60 * 1024, 'c');
  const uint64_t hits = dp.counters().get_hits.load();
  REQUIRE(b1.send(valueUnit(c, c_value) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().get_hits.load() == hits + 1; }));
  REQUIRE(b0.send("END\r\n"));
  const std::string want2 = "END\r\n" + valueUnit(c, c_value) + "END\r\n";
  CHECK(client.read(want2.size()) == want2);
  CHECK(dp.counters().client_oom_replies.load() == 1);
}

TEST_CASE("client_buffer_limit: a multi-get over two servers past the limit streams in key order") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  client_buffer_limit: 64k\n");
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "g"), B1 = dp.keyOn(1, "g", 0), B2 = dp.keyOn(1, "g", 1);
  REQUIRE(client.send("get " + A + " " + B1 + " " + B2 + "\r\n"));
  REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
  REQUIRE(b1.expect("get " + B1 + " " + B2 + "\r\n") == "get " + B1 + " " + B2 + "\r\n");
  // b1 answers first: B1 (40k) is held; B2 would pass 64k, and its turn has not come (A is
  // first): b1's connection waits instead of the reply being refused.
  const std::string v1(40 * 1024, 'x'), v2(40 * 1024, 'y');
  REQUIRE(b1.send(valueUnit(B1, v1) + valueUnit(B2, v2) + "END\r\n"));
  CHECK(client.silentFor(50));
  REQUIRE(b0.send(valueUnit(A, "small") + "END\r\n"));
  const std::string want =
      valueUnit(A, "small") + valueUnit(B1, v1) + valueUnit(B2, v2) + "END\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
  CHECK(dp.counters().client_oom_replies.load() == 0);
  CHECK(dp.counters().get_hits.load() == 3);
  // The session goes on.
  REQUIRE(client.send("get " + A + "\r\n"));
  REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
  REQUIRE(b0.send("END\r\n"));
  CHECK(client.read(5) == "END\r\n");
}

TEST_CASE("a multi-get waiting for its turn gives way after 1 s to another client behind it") {
  FakeBackend b0, b1;
  // A long request timeout: b0's silence must not fail A's fragment first.
  DataPlane dp({&b0, &b1}, "  client_buffer_limit: 64k\n  timeout: 10000\n");
  auto x = dp.connect();
  auto y = dp.connect();
  const std::string A = dp.keyOn(0, "w"), B1 = dp.keyOn(1, "w", 0), B2 = dp.keyOn(1, "w", 1);
  const std::string C = dp.keyOn(1, "c");
  REQUIRE(x.send("get " + A + " " + B1 + " " + B2 + "\r\n"));
  REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
  REQUIRE(b1.expect("get " + B1 + " " + B2 + "\r\n") == "get " + B1 + " " + B2 + "\r\n");
  REQUIRE(y.send("get " + C + "\r\n"));
  REQUIRE(b1.expect("get " + C + "\r\n") == "get " + C + "\r\n");
  // B2 cannot be held and its turn does not come (b0 does not answer A): b1's connection waits,
  // and Y's reply with it, until the wait is given up: X's multi-get is refused memory.
  const std::string v(40 * 1024, 'x');
  REQUIRE(b1.send(valueUnit(B1, v) + valueUnit(B2, v) + "END\r\n" + valueUnit(C, "c") + "END\r\n"));
  CHECK(y.silentFor(30));
  CHECK(dp.counters().client_oom_replies.load() == 0);
  // 1 s passes on mcring's clock (in steps, whenever the wait began).
  bool answered = false;
  for (int i = 0; i < 12 && !answered; ++i) {
    mcring::common::advanceClockForTest(250'000'000ULL);
    answered = !y.silentFor(5);
  }
  const std::string want_y = valueUnit(C, "c") + "END\r\n";
  CHECK(y.read(want_y.size()) == want_y);
  CHECK(dp.counters().client_oom_replies.load() == 1);
  REQUIRE(b0.send(valueUnit(A, "a") + "END\r\n"));
  CHECK(x.read(kOom.size()) == kOom);
  CHECK(x.silentFor(5));
  CHECK(b1.accepted() == 1);  // the backend connection waited, never reset
}

TEST_CASE("client_buffer_limit: a queued multi-get over two servers past the limit is refused") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1}, "  client_buffer_limit: 64k\n");
  auto client = dp.connect();
  const std::string X = dp.keyOn(0, "x");
  const std::string A = dp.keyOn(0, "g"), B1 = dp.keyOn(1, "g", 0), B2 = dp.keyOn(1, "g", 1);
  REQUIRE(client.send("get " + X + "\r\n"));
  REQUIRE(b0.expect("get " + X + "\r\n") == "get " + X + "\r\n");
  REQUIRE(client.send("get " + A + " " + B1 + " " + B2 + "\r\n"));
  REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
  REQUIRE(b1.expect("get " + B1 + " " + B2 + "\r\n") == "get " + B1 + " " + B2 + "\r\n");
  // Behind X's reply nothing streams: 40k + 40k from b1 pass 64k, refused whole.
  const std::string v(40 * 1024, 'x');
  REQUIRE(b1.send(valueUnit(B1, v) + valueUnit(B2, v) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().client_oom_replies.load() == 1; }));
  REQUIRE(b0.send("END\r\n" + valueUnit(A, "small") + "END\r\n"));
  const std::string want = "END\r\n" + std::string(kOom);
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
  CHECK(dp.counters().client_oom_replies.load() == 1);
}

TEST_CASE("a multi-get that fits is assembled whole: a failed fragment answers only the error") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "f"), B = dp.keyOn(1, "f");
  REQUIRE(client.send("get " + A + " " + B + "\r\n"));
  REQUIRE(b0.expect("get " + A + "\r\n") == "get " + A + "\r\n");
  REQUIRE(b1.expect("get " + B + "\r\n") == "get " + B + "\r\n");
  REQUIRE(b0.send(valueUnit(A, std::string(1000, 'a')) + "END\r\n"));
  REQUIRE(b1.send("SERVER_ERROR busy\r\n"));
  CHECK(client.read(19) == "SERVER_ERROR busy\r\n");
  CHECK(client.silentFor(5));
}

TEST_CASE("buffer_limit: a client holding almost nothing is not refused for others' output") {
  FakeBackend b0, b1, b2;
  // One worker: 1m in all, an eighth of it kept for clients holding under 64 KiB.
  DataPlane dp({&b0, &b1, &b2}, "  buffer_limit: 1m\n");
  const std::string s = dp.keyOn(0, "s"), d1 = dp.keyOn(1, "d"), d2 = dp.keyOn(2, "d");
  // A client that asked for 1.2 MB and reads (almost) nothing: its unsent output fills the pool.
  auto hog = dp.connect(/*sndbuf=*/4096);
  REQUIRE(hog.send("get " + s + "\r\n"));
  REQUIRE(b0.expect("get " + s + "\r\n") == "get " + s + "\r\n");
  REQUIRE(b0.send(valueUnit(s, std::string(1200 * 1000, 's'))));  // no END yet
  REQUIRE(hog.read(1).size() == 1);
  // Another client's small reply waits behind its first: held while the pool is over budget.
  auto small = dp.connect();
  REQUIRE(small.send("get " + d1 + "\r\nget " + d2 + "\r\n"));
  REQUIRE(b1.expect("get " + d1 + "\r\n") == "get " + d1 + "\r\n");
  REQUIRE(b2.expect("get " + d2 + "\r\n") == "get " + d2 + "\r\n");
  const std::string v(1000, 'v');
  const uint64_t hits = dp.counters().get_hits.load();
  REQUIRE(b2.send(valueUnit(d2, v) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] {
    return dp.counters().get_hits.load() == hits + 1 || dp.counters().client_oom_replies.load() > 0;
  }));
  REQUIRE(b1.send(valueUnit(d1, "x") + "END\r\n"));
  const std::string want = valueUnit(d1, "x") + "END\r\n" + valueUnit(d2, v) + "END\r\n";
  CHECK(small.read(want.size()) == want);
  CHECK(dp.counters().client_oom_replies.load() == 0);
}

TEST_CASE("buffer_limit: the pool's budget refuses a queued reply that fits its client's limit") {
  FakeBackend b0, b1;
  // One worker: it has the whole 1m; each client may hold up to the default 16m.
  DataPlane dp({&b0, &b1}, "  buffer_limit: 1m\n");
  auto ca = dp.connect();
  auto cb = dp.connect();
  const std::string a1 = dp.keyOn(0, "a"), a2 = dp.keyOn(1, "a");
  const std::string c1 = dp.keyOn(0, "c"), c2 = dp.keyOn(1, "c");
  REQUIRE(ca.send("get " + a1 + "\r\nget " + a2 + "\r\n"));
  REQUIRE(b0.expect("get " + a1 + "\r\n") == "get " + a1 + "\r\n");
  REQUIRE(b1.expect("get " + a2 + "\r\n") == "get " + a2 + "\r\n");
  REQUIRE(cb.send("get " + c1 + "\r\nget " + c2 + "\r\n"));
  REQUIRE(b0.expect("get " + c1 + "\r\n") == "get " + c1 + "\r\n");
  REQUIRE(b1.expect("get " + c2 + "\r\n") == "get " + c2 + "\r\n");
  // Both second replies (600k each) wait behind their clients' first: 1.2m held > 1m.
  const std::string v(600 * 1000, 'v');
  REQUIRE(b1.send(valueUnit(a2, v) + "END\r\n" + valueUnit(c2, v) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().client_oom_replies.load() == 1; }));
  REQUIRE(b0.send(valueUnit(a1, "x") + "END\r\n" + valueUnit(c1, "y") + "END\r\n"));
  const std::string want_a = valueUnit(a1, "x") + "END\r\n" + valueUnit(a2, v) + "END\r\n";
  CHECK(ca.read(want_a.size()) == want_a);
  const std::string want_c = valueUnit(c1, "y") + "END\r\n" + std::string(kOom);
  CHECK(cb.read(want_c.size()) == want_c);
  // Written out, a's 600k is no longer charged: the same queued reply fits now.
  REQUIRE(cb.send("get " + c1 + "\r\nget " + c2 + "\r\n"));
  REQUIRE(b0.expect("get " + c1 + "\r\n") == "get " + c1 + "\r\n");
  REQUIRE(b1.expect("get " + c2 + "\r\n") == "get " + c2 + "\r\n");
  const uint64_t hits = dp.counters().get_hits.load();
  REQUIRE(b1.send(valueUnit(c2, v) + "END\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().get_hits.load() == hits + 1; }));
  REQUIRE(b0.send(valueUnit(c1, "y") + "END\r\n"));
  const std::string want_c2 = valueUnit(c1, "y") + "END\r\n" + valueUnit(c2, v) + "END\r\n";
  CHECK(cb.read(want_c2.size()) == want_c2);
  CHECK(dp.counters().client_oom_replies.load() == 1);
}
