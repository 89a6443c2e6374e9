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

TEST_CASE("metaNotAppliedReply: ms's NS and md/ma's NF as memcached 1.6.18 answers, q or not") {
  using mcring::protocol::metaNotAppliedReply;
  // Recorded against memcached 1.6.18: `ms nope 1 MR O12 k` -> "NS O12 knope", with q too (q
  // hides only HD); `md nope k O3 q` -> "NF knope O3"; `ma nope q O4` -> "NF O4".
  CHECK(metaNotAppliedReply("NS", "nope", "1 MR O12 k") == "NS O12 knope\r\n");
  CHECK(metaNotAppliedReply("NS", "nope", "1 MR O12 k q") == "NS O12 knope\r\n");
  CHECK(metaNotAppliedReply("NS", "bm9wZQ==", "1 MR b k O1\r\n") == "NS kbm9wZQ== b O1\r\n");
  CHECK(metaNotAppliedReply("NF", "nope", "k O3 q") == "NF knope O3\r\n");
  CHECK(metaNotAppliedReply("NF", "nope", "q O4") == "NF O4\r\n");
  CHECK(metaNotAppliedReply("NF", "nope", "") == "NF\r\n");
}
