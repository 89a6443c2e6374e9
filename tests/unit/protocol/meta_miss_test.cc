// metaMissReply: an mg miss in the client's format, byte for byte as memcached 1.6.18 answered
// each of these lines for a key it did not have (recorded with nc against memcached -p).
#include <doctest/doctest.h>

#include "proxy/protocol/meta_miss.h"

using mcring::protocol::metaMissReply;

TEST_CASE("metaMissReply: memcached 1.6.18's EN with the k, b and O flags in request order") {
  CHECK(metaMissReply("missing", "v") == "EN\r\n");
  CHECK(metaMissReply("missing", "") == "EN\r\n");
  CHECK(metaMissReply("missing", "k v") == "EN kmissing\r\n");
  CHECK(metaMissReply("missing", "O123 v") == "EN O123\r\n");
  CHECK(metaMissReply("missing", "k O123 f t s c") == "EN kmissing O123\r\n");
  CHECK(metaMissReply("x", "O9 k v") == "EN O9 kx\r\n");
  CHECK(metaMissReply("bWlzc2luZw==", "b k O9 v") == "EN kbWlzc2luZw== b O9\r\n");
  CHECK(metaMissReply("eA==", "O9 b k") == "EN O9 keA== b\r\n");
  CHECK(metaMissReply("missing", "k O1 T30") == "EN kmissing O1\r\n");
  CHECK(metaMissReply("x", "s v t f c") == "EN\r\n");
  CHECK(metaMissReply("x", "Oabc") == "EN Oabc\r\n");
  // The flags as they sit in a request line, with its end.
  CHECK(metaMissReply("x", "k v\r\n") == "EN kx\r\n");
}

TEST_CASE("metaMissReply: a quiet mg's miss is silent") {
  CHECK(metaMissReply("missing", "k O123 q v").empty());
  CHECK(metaMissReply("x", "q").empty());
}
