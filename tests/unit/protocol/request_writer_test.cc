// RequestWriter: the lines mcring writes on its own account, byte for byte, and their length.
#include "proxy/protocol/request_writer.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace mcring::protocol {
namespace {

TEST_CASE("verb, args, flags and end make one line; written() counts its bytes") {
  std::string out;
  RequestWriter w(out);
  w.verb(Command::Gat).arg("30").arg("a").arg("b").end();
  CHECK(out == "gat 30 a b\r\n");
  CHECK(w.written() == out.size());
  w.verb("mg").metaKey("a2V5", true).flag('v').flag('T', "60").end();
  CHECK(out == "gat 30 a b\r\nmg a2V5 b v T60\r\n");
  CHECK(w.written() == out.size());
}

TEST_CASE("the whole lines: mn, md, touch") {
  std::string out;
  RequestWriter w(out);
  w.noop().metaDelete("k", false).metaDelete("a2V5", true).touch("k", "100");
  CHECK(out == "mn\r\nmd k\r\nmd a2V5 b\r\ntouch k 100\r\n");
  CHECK(w.written() == out.size());
}

TEST_CASE("raw bytes pass as they are") {
  std::string out;
  RequestWriter w(out);
  w.raw("set k 0 0 1\r\n").raw("x\r\n");
  CHECK(out == "set k 0 0 1\r\nx\r\n");
  CHECK(w.written() == 16);
}

// The staged form of arg(): the same bytes whatever the tokens' sizes, past its stack buffer and
// with tokens larger than it.
TEST_CASE("args writes what arg writes, for tokens of every size") {
  for (const size_t size : {1, 3, 250, 1000, 1022, 1023, 1024, 3000}) {
    std::vector<std::string> tokens;
    for (size_t i = 0; i < 9; ++i) {
      tokens.push_back(std::string(size + i % 3, static_cast<char>('a' + i)));
    }
    std::string by_arg;
    RequestWriter one(by_arg);
    one.verb("get");
    for (const std::string& t : tokens) {
      one.arg(t);
    }
    one.end();
    std::string by_args;
    RequestWriter many(by_args);
    many.verb("get").args(tokens, [](const std::string& t) { return std::string_view(t); }).end();
    CHECK(by_args == by_arg);
    CHECK(many.written() == by_args.size());
  }
  std::string empty;
  RequestWriter none(empty);
  none.verb("get").args(std::vector<std::string>{}, [](const std::string& t) {
    return std::string_view(t);
  });
  CHECK(empty == "get");
}

}  // namespace
}  // namespace mcring::protocol
