// Replies in request order, and multi-gets split over backends and reassembled in key order.
#include <doctest/doctest.h>

#include "tests/unit/dataplane/harness.h"

using dataplane::DataPlane;
using dataplane::FakeBackend;
using dataplane::valueUnit;

TEST_CASE("replies leave in request order when backends answer out of order") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  const std::string a = dp.keyOn(0, "a"), b = dp.keyOn(1, "b"), c = dp.keyOn(1, "c");
  auto client = dp.connect();
  // Pipelined in one write: a get on b0, a get and a delete on b1, and a request mcring answers
  // itself (mn), which is complete at once but must still wait its turn.
  REQUIRE(client.send("get " + a + "\r\nget " + b + "\r\ndelete " + c + "\r\nmn\r\n"));
  CHECK(b0.expect("get " + a + "\r\n") == "get " + a + "\r\n");
  const std::string to_b1 = "get " + b + "\r\ndelete " + c + "\r\n";
  CHECK(b1.expect(to_b1) == to_b1);

  // b1 answers both of its requests first: nothing may reach the client before a's reply.
  REQUIRE(b1.send(valueUnit(b, "bee") + "END\r\nDELETED\r\n"));
  REQUIRE(DataPlane::waitFor([&] { return dp.counters().get_hits.load() == 1; }));
  CHECK(client.silentFor(20));

  REQUIRE(b0.send(valueUnit(a, "ay", 5) + "END\r\n"));
  const std::string want =
      valueUnit(a, "ay", 5) + "END\r\n" + valueUnit(b, "bee") + "END\r\nDELETED\r\nMN\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
}

TEST_CASE("three backends answering in reverse order: every reply in its request's place") {
  FakeBackend b0, b1, b2;
  DataPlane dp({&b0, &b1, &b2}, "  coalesce_gets: false\n");
  FakeBackend* backends[] = {&b0, &b1, &b2};
  auto client = dp.connect();
  // Nine requests, three per backend, interleaved: s0 s1 s2 s0 s1 s2 ...
  std::string request, want;
  std::string to[3];
  std::string answer[3];
  for (int i = 0; i < 9; ++i) {
    const uint32_t s = static_cast<uint32_t>(i % 3);
    const std::string key = dp.keyOn(s, "r", i / 3);
    request += "get " + key + "\r\n";
    to[s] += "get " + key + "\r\n";
    const std::string data = "v" + std::to_string(i);
    answer[s] += valueUnit(key, data) + "END\r\n";
    want += valueUnit(key, data) + "END\r\n";
  }
  REQUIRE(client.send(request));
  for (int s = 0; s < 3; ++s) {
    CHECK(backends[s]->expect(to[s]) == to[s]);
  }
  for (int s = 2; s >= 0; --s) {
    REQUIRE(backends[s]->send(answer[s]));
    if (s > 0) {
      CHECK(client.silentFor(5));
    }
  }
  CHECK(client.read(want.size()) == want);
}

TEST_CASE("a multi-get is split per backend and reassembled in key order under one END") {
  for (const bool coalesce : {true, false}) {
    CAPTURE(coalesce);
    FakeBackend b0, b1, b2;
    DataPlane dp({&b0, &b1, &b2}, coalesce ? "" : "  coalesce_gets: false\n");
    auto client = dp.connect();
    // Keys in the client's order: A1 B1 C1 A2 B2 C2 (A on b0, B on b1, C on b2).
    const std::string A1 = dp.keyOn(0, "x", 0), A2 = dp.keyOn(0, "x", 1);
    const std::string B1 = dp.keyOn(1, "x", 0), B2 = dp.keyOn(1, "x", 1);
    const std::string C1 = dp.keyOn(2, "x", 0), C2 = dp.keyOn(2, "x", 1);
    REQUIRE(
        client.send("gets " + A1 + " " + B1 + " " + C1 + " " + A2 + " " + B2 + " " + C2 + "\r\n"));
    // Each backend gets its own keys, in the client's order, in one line.
    CHECK(b0.expect("gets " + A1 + " " + A2 + "\r\n") == "gets " + A1 + " " + A2 + "\r\n");
    CHECK(b1.expect("gets " + B1 + " " + B2 + "\r\n") == "gets " + B1 + " " + B2 + "\r\n");
    CHECK(b2.expect("gets " + C1 + " " + C2 + "\r\n") == "gets " + C1 + " " + C2 + "\r\n");
    // Answers in reverse server order; C1 and A2 miss. Values carry flags and cas.
    const std::string c2 = "VALUE " + C2 + " 3 2 33\r\nc2\r\n";
    const std::string b1v = "VALUE " + B1 + " 0 2 21\r\nb1\r\n";
    const std::string b2v = "VALUE " + B2 + " 0 4 22\r\nEND!\r\n";  // "END!" inside a value
    const std::string a1 = "VALUE " + A1 + " 7 0 11\r\n\r\n";       // an empty value
    REQUIRE(b2.send(c2 + "END\r\n"));
    REQUIRE(b1.send(b1v + b2v + "END\r\n"));
    CHECK(client.silentFor(10));  // a fragment is still owed
    REQUIRE(b0.send(a1 + "END\r\n"));
    const std::string want = a1 + b1v + b2v + c2 + "END\r\n";
    CHECK(client.read(want.size()) == want);
    CHECK(client.silentFor(5));
    CHECK(dp.counters().get_hits.load() == 4);
    CHECK(dp.counters().get_misses.load() == 2);
  }
}

// The assembly copies small held units into place in one piece; larger ones (past its 64 KiB
// bound, their chunks handed over) take the move per unit. Both give the client's key order.
TEST_CASE("a multi-get whose held units are large is reassembled in key order too") {
  for (const size_t big : {size_t{100}, size_t{70000}, size_t{300000}}) {
    CAPTURE(big);
    FakeBackend b0, b1, b2;
    DataPlane dp({&b0, &b1, &b2});
    auto client = dp.connect();
    const std::string A1 = dp.keyOn(0, "z", 0), A2 = dp.keyOn(0, "z", 1);
    const std::string B1 = dp.keyOn(1, "z", 0), C1 = dp.keyOn(2, "z", 0);
    REQUIRE(client.send("get " + A1 + " " + B1 + " " + A2 + " " + C1 + "\r\n"));
    CHECK(b0.expect("get " + A1 + " " + A2 + "\r\n") == "get " + A1 + " " + A2 + "\r\n");
    CHECK(b1.expect("get " + B1 + "\r\n") == "get " + B1 + "\r\n");
    CHECK(b2.expect("get " + C1 + "\r\n") == "get " + C1 + "\r\n");
    const std::string a1 = valueUnit(A1, std::string(big, 'a'));
    const std::string a2 = valueUnit(A2, "a2");
    const std::string b1v = valueUnit(B1, std::string(big / 2 + 1, 'b'));
    const std::string c1 = valueUnit(C1, "c1");
    REQUIRE(b2.send(c1 + "END\r\n"));
    REQUIRE(b0.send(a1 + a2 + "END\r\n"));
    REQUIRE(b1.send(b1v + "END\r\n"));
    const std::string want = a1 + b1v + a2 + c1 + "END\r\n";
    CHECK(client.read(want.size()) == want);
    CHECK(client.silentFor(5));
    CHECK(dp.counters().get_hits.load() == 4);
    CHECK(dp.counters().get_misses.load() == 0);
  }
}

// Units framed across reads: the client's line split, the backends' units a byte at a time
// or split inside a unit, so the framers take their chunked path and a fragment's held units may
// span chunks; the reply is the same.
TEST_CASE("a multi-get framed across reads is reassembled in key order") {
  for (const int how : {0, 1, 2}) {
    CAPTURE(how);
    FakeBackend b0, b1;
    DataPlane dp({&b0, &b1});
    auto client = dp.connect();
    const std::string A1 = dp.keyOn(0, "w", 0), A2 = dp.keyOn(0, "w", 1);
    const std::string B1 = dp.keyOn(1, "w", 0), B2 = dp.keyOn(1, "w", 1);
    const std::string request = "get " + A1 + " " + B1 + " " + A2 + " " + B2 + "\r\n";
    REQUIRE((how == 0 ? client.sendSplit(request, 7) : client.send(request)));
    CHECK(b0.expect("get " + A1 + " " + A2 + "\r\n") == "get " + A1 + " " + A2 + "\r\n");
    CHECK(b1.expect("get " + B1 + " " + B2 + "\r\n") == "get " + B1 + " " + B2 + "\r\n");
    const std::string a = valueUnit(A1, "first of a") + valueUnit(A2, std::string(300, 'x'));
    const std::string b = valueUnit(B1, "b1") + valueUnit(B2, "b2\r\nEND\r\n");
    if (how == 1) {
      REQUIRE(b0.sendBytewise(a + "END\r\n", 50));
      REQUIRE(b1.sendBytewise(b + "END\r\n", 50));
    } else {
      // Split inside a VALUE line, then inside a data block.
      REQUIRE(b0.sendSplit(a + "END\r\n", 9));
      REQUIRE(b1.sendSplit(b + "END\r\n", b.size() - 6));
    }
    const std::string want = valueUnit(A1, "first of a") + valueUnit(B1, "b1") +
                             valueUnit(A2, std::string(300, 'x')) +
                             valueUnit(B2, "b2\r\nEND\r\n") + "END\r\n";
    CHECK(client.read(want.size()) == want);
    CHECK(client.silentFor(5));
    CHECK(dp.counters().get_hits.load() == 4);
  }
}

TEST_CASE("a multi-get with one failed fragment answers one SERVER_ERROR, nothing else") {
  FakeBackend b0, b1;
  DataPlane dp({&b0, &b1});
  auto client = dp.connect();
  const std::string A = dp.keyOn(0, "y"), B = dp.keyOn(1, "y");
  REQUIRE(client.send("get " + A + " " + B + "\r\nget " + A + "\r\n"));
  // coalesce_gets (the default): both requests' keys for b0 share one line.
  CHECK(b0.expect("get " + A + " " + A + "\r\n") == "get " + A + " " + A + "\r\n");
  CHECK(b1.expect("get " + B + "\r\n") == "get " + B + "\r\n");
  // b0 answers the line (one VALUE per key asked, one END), b1 fails with an error of its own.
  REQUIRE(b0.send(valueUnit(A, "a") + valueUnit(A, "a") + "END\r\n"));
  REQUIRE(b1.send("SERVER_ERROR busy\r\n"));
  const std::string want = "SERVER_ERROR busy\r\n" + valueUnit(A, "a") + "END\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
}

TEST_CASE("a long gat goes to its server as lines under 2048 bytes, answered as one") {
  // memcached closes a connection on a gat line with no newline in its first 2048 bytes when
  // it arrives in pieces, failing every request on it: mcring never sends one.
  FakeBackend b0;
  DataPlane dp({&b0});
  auto client = dp.connect();
  std::string line = "gat 60";
  std::vector<std::string> keys;
  for (int i = 0; i < 12; ++i) {
    keys.push_back(std::string(200, static_cast<char>('a' + i)));
    line += " " + keys.back();
  }
  REQUIRE(line.size() > 2048);
  REQUIRE(client.send(line + "\r\n"));
  // Two lines: as many keys as fit in 2000 bytes, then the rest, in the client's order.
  std::string first = "gat 60", second = "gat 60";
  for (size_t i = 0; i < keys.size(); ++i) {
    (first.size() + 1 + keys[i].size() + 2 <= 2000 && second == "gat 60" ? first : second) +=
        " " + keys[i];
  }
  CHECK(first.size() + 2 <= 2000);
  CHECK(second.size() + 2 <= 2000);
  const std::string sent = b0.read(first.size() + 2 + second.size() + 2);
  CHECK(sent == first + "\r\n" + second + "\r\n");
  const std::string v0 = "VALUE " + keys[0] + " 0 1\r\nx\r\n";
  const std::string v11 = "VALUE " + keys[11] + " 0 1\r\ny\r\n";
  REQUIRE(b0.send(v0 + "END\r\n" + v11 + "END\r\n"));
  const std::string want = v0 + v11 + "END\r\n";
  CHECK(client.read(want.size()) == want);
  CHECK(client.silentFor(5));
}
