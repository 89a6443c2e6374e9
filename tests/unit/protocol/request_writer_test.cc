// RequestWriter: the lines mcring writes on its own account, byte for byte, and their length.
#include "proxy/protocol/request_writer.h"

#include <doctest/doctest.h>

#include <string>

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

}  // namespace
}  // namespace mcring::protocol
