// net::Buffer's copies and prepend, across chunk boundaries (a value spans several chunks once
// a socket read split it or moveTo handed chunks over): what a route's shadow and failover copy
// and what its max_ttl puts back.
#include "proxy/net/buffer.h"

#include <doctest/doctest.h>

#include <string>

namespace mcring::net {
namespace {

// A buffer whose bytes sit in several chunks: moveTo hands over whole chunks of >= kMoveMin.
Buffer chunked(const std::string& a, const std::string& b, const std::string& c) {
  Buffer out;
  for (const std::string* part : {&a, &b, &c}) {
    Buffer piece;
    piece.append(*part);
    piece.moveTo(out, part->size());
  }
  return out;
}

std::string all(Buffer& b) {
  return std::string(b.contiguous(b.size()));
}

TEST_CASE("copyTo and copyOut copy a range across chunks and leave the source as it was") {
  const std::string a(Buffer::kMoveMin, 'a'), b(Buffer::kMoveMin + 5, 'b'), c = "tail";
  Buffer src = chunked(a, b, c);
  const std::string whole = a + b + c;
  REQUIRE(src.size() == whole.size());
  Buffer dst;
  dst.append("head:");
  src.copyTo(dst, a.size() - 3, 10);
  CHECK(all(dst) == "head:" + whole.substr(a.size() - 3, 10));
  std::string out(b.size() + 2, '?');
  src.copyOut(a.size() + 1, out.size(), out.data());
  CHECK(out == whole.substr(a.size() + 1, out.size()));
  CHECK(all(src) == whole);
  src.copyTo(dst, 0, 0);  // nothing
  CHECK(dst.size() == 15);
}

TEST_CASE("prepend puts bytes before the front") {
  Buffer b;
  b.append("v\r\n");
  b.prepend("set k 0 60 1\r\n");
  CHECK(all(b) == "set k 0 60 1\r\nv\r\n");
}

}  // namespace
}  // namespace mcring::net
