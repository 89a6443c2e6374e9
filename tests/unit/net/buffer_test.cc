// net::Buffer's copies and prepend, across chunk boundaries (a value spans several chunks once
// a socket read split it or moveTo handed chunks over): what a route's shadow and failover copy
// and what its max_ttl puts back.
#include "proxy/net/buffer.h"

#include <doctest/doctest.h>

#include <cstring>
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

// What a TcpConnection learns through the hooks (output to flush, input drained below its read
// watermark): every operation that adds or drains says so once, and reading a buffer says nothing.
struct HookCounts {
  int added = 0;
  int drained = 0;
  static void onAdded(void* arg) { ++static_cast<HookCounts*>(arg)->added; }
  static void onDrained(void* arg) { ++static_cast<HookCounts*>(arg)->drained; }
};

TEST_CASE("hooks: each add or drain calls its hook once; reads and empty operations none") {
  HookCounts src_counts, dst_counts;
  Buffer src, dst;
  src.setHooks(&HookCounts::onAdded, &HookCounts::onDrained, &src_counts);
  dst.setHooks(&HookCounts::onAdded, &HookCounts::onDrained, &dst_counts);
  src.append("get a b\r\n");
  src.prepend(">");
  CHECK(src_counts.added == 2);
  CHECK(src.size() == 10);
  CHECK(src.findNewline(0, 100) == 9);
  CHECK(src.byteAt(1) == 'g');
  CHECK(src.contiguous(4) == ">get");
  std::string copied(3, '?');
  src.copyOut(1, 3, copied.data());
  CHECK(src_counts.added == 2);
  CHECK(src_counts.drained == 0);
  src.copyTo(dst, 1, 4);
  CHECK(dst_counts.added == 1);
  CHECK(src_counts.drained == 0);
  src.drain(1);
  CHECK(src_counts.drained == 1);
  src.moveTo(dst, 4);
  CHECK(src_counts.drained == 2);
  CHECK(dst_counts.added == 2);
  CHECK(all(dst) == "get get ");
  src.append("");
  src.drain(0);
  src.moveTo(dst, 0);
  CHECK(src_counts.added == 2);
  CHECK(src_counts.drained == 2);
  CHECK(dst_counts.added == 2);
  src.setHooks(nullptr, nullptr, nullptr);
  src.drain(src.size());
  CHECK(src_counts.drained == 2);
  CHECK(src.empty());
}

// front() is the first chunk only; reserve/commit add one contiguous piece after what is there;
// moveTo within a chunk copies and leaves the rest in place.
TEST_CASE("front, reserve and commit, and a move within the first chunk") {
  const std::string a(Buffer::kMoveMin, 'a'), b(Buffer::kMoveMin + 5, 'b'), c = "tail";
  Buffer src = chunked(a, b, c);
  CHECK(src.front() == a);
  Buffer empty;
  CHECK(empty.front().empty());

  Buffer dst;
  dst.append("VALUE ");
  HookCounts counts;
  dst.setHooks(&HookCounts::onAdded, &HookCounts::onDrained, &counts);
  const std::string piece = "k 0 1\r\nx";
  const Buffer::Room room = dst.reserve(piece.size());
  REQUIRE(room.data != nullptr);
  CHECK(room.size >= piece.size());
  std::memcpy(room.data, piece.data(), piece.size());
  CHECK(dst.size() == 6);  // nothing counted before commit
  dst.commit(room, piece.size());
  CHECK(counts.added == 1);
  CHECK(all(dst) == "VALUE k 0 1\r\nx");

  src.moveTo(dst, 10);  // within a's chunk: copied
  CHECK(src.size() == a.size() - 10 + b.size() + c.size());
  CHECK(src.front() == a.substr(10));
  CHECK(all(dst) == "VALUE k 0 1\r\nx" + std::string(10, 'a'));
  src.moveTo(dst, a.size() - 10 + 3);  // the rest of a's chunk and 3 bytes of b's
  CHECK(src.front().substr(0, b.size() - 3) == b.substr(3));  // c may share b's chunk
  CHECK(dst.size() == 14 + a.size() + 3);
}

}  // namespace
}  // namespace mcring::net
