// RequestParser: every command and every error, checked against what memcached 1.6.18 answers
// (its reply is quoted per case), whole and at every fragmentation.
#include "proxy/protocol/request_parser.h"

#include "proxy/protocol/byte_source.h"
#include "proxy/protocol/request_framer.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "fragment_harness.h"

// Counts heap allocations so a test can prove the parser stops allocating once warm.
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) {
    return p;
  }
  throw std::bad_alloc();
}
// The replacement new above allocates with malloc, so free is the matching release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop

namespace mcring::protocol {
namespace {

using testing::allFragmentations;
using testing::chunksOf;
using testing::feedRequests;
using testing::joinLines;

struct RequestCase {
  std::string input;
  // One line per framed request (see describeRequest), then "rest=<buffered> discard=<n>".
  std::vector<std::string> expected;
};

// The whole-input result must be `expected`, and every fragmentation must give the same.
void checkRequests(const RequestParser& parser, const RequestCase& c, bool every_byte = true) {
  CAPTURE(testing::escape(c.input.substr(0, 200)));
  const std::vector<std::string> whole = feedRequests(parser, c.input, {c.input.size()});
  CHECK(joinLines(whole) == joinLines(c.expected));
  if (every_byte) {
    for (const auto& cuts : allFragmentations(c.input.size())) {
      CAPTURE(cuts.front());
      CAPTURE(cuts.size());
      REQUIRE(joinLines(feedRequests(parser, c.input, cuts)) == joinLines(whole));
    }
  }
}

const std::string kDone = "rest=0 discard=0";

std::string repeat(std::string_view s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += s;
  }
  return out;
}

const std::string k251(251, 'a');
const std::string k250(250, 'a');

// Retrieval commands. memcached's reply in the comments; "ERROR" lines after a rejected storage
// line come from memcached reading the data block as a command, which the parser does as well.
const std::vector<RequestCase> kRetrieval = {
    {"get a\r\n", {"get keys=a len=7", kDone}},
    {"get a\n", {"get keys=a len=6", kDone}},  // bare \n accepted
    {"  get   a   b  \r\n", {"get keys=a,b len=17", kDone}},
    {"gets a b c\r\n", {"gets keys=a,b,c len=12", kDone}},
    {"get\r\n", {"!unknown_command len=5", kDone}},                 // ERROR
    {"get \r\n", {"!unknown_command len=6", kDone}},                // ERROR
    {"gets\r\n", {"!unknown_command len=6", kDone}},                // ERROR
    {"GET a\r\n", {"!unknown_command len=7", kDone}},               // ERROR: case-sensitive
    {"get\ta\r\n", {"!unknown_command len=7", kDone}},              // ERROR: tab is not a separator
    // memcached splits on spaces only: control bytes are key bytes; one "\r" before "\n" goes.
    {"get a\tb\r\n", {"get keys=a\\x09b len=9", kDone}},
    {"get a\r\r\n", {"get keys=a\\x0d len=8", kDone}},
    {"get a\x7f\r\n", {"get keys=a\\x7f len=8", kDone}},
    {"get \xc3\xa9t\xc3\xa9\r\n", {"get keys=\\xc3\\xa9t\\xc3\\xa9 len=11", kDone}},  // UTF-8 ok
    {std::string("get a\0b c\r\n", 11), {"get keys=a len=11", kDone}},   // END: stops at NUL
    {std::string("\0get a\r\n", 8), {"!unknown_command len=8", kDone}},  // ERROR
    {"gat 10 k\r\n", {"gat exptime=10 keys=k len=10", kDone}},
    {"gats -1 a b\r\n", {"gats exptime=-1 keys=a,b len=13", kDone}},
    {"gat +5 a\r\n", {"gat exptime=+5 keys=a len=10", kDone}},
    {"gat 10\t k\r\n", {"gat exptime=10\\x09 keys=k len=11", kDone}},  // END: "10\t" reads as 10
    {"gat\r\n", {"!unknown_command len=5", kDone}},                    // ERROR
    {"gat 10\r\n", {"!gat gat_without_keys len=8", kDone}},            // END
    {"gats 10   \r\n", {"!gats gat_without_keys len=12", kDone}},      // END
    {"gat abc k\r\n", {"!gat invalid_exptime len=11", kDone}},  // CLIENT_ERROR invalid exptime..
    {"gats 1x k\r\n", {"!gats invalid_exptime len=11", kDone}},
    {"gat 99999999999999999999 k\r\n", {"!gat invalid_exptime len=28", kDone}},  // ERANGE
    {"get " + k250 + "\r\n", {"get keys=" + k250 + " len=256", kDone}},
    {"get " + k251 + "\r\n", {"!get key_too_long len=257", kDone}},  // CLIENT_ERROR bad command..
    {"get a " + k251 + " b\r\n", {"!get key_too_long len=261", kDone}},  // no VALUE for a either
    {"gat 1 " + k251 + "\r\n", {"!gat key_too_long len=259", kDone}},
};

const std::vector<RequestCase> kStorage = {
    {"set k 0 0 1\r\nx\r\n", {"set keys=k data=1 len=16", kDone}},  // STORED
    {"add k 0 0 1\r\nx\r\n", {"add keys=k data=1 len=16", kDone}},
    {"replace k 0 0 1\r\nx\r\n", {"replace keys=k data=1 len=20", kDone}},
    {"append k 0 0 1\r\nx\r\n", {"append keys=k data=1 len=19", kDone}},
    {"prepend k 0 0 1\r\nx\r\n", {"prepend keys=k data=1 len=20", kDone}},
    {"set k 0 0 0\r\n\r\n", {"set keys=k data=0 len=15", kDone}},
    {"set k 0 0 1\nx\r\n", {"set keys=k data=1 len=15", kDone}},
    {"set k 0 0 5\r\nEND\r\n\r\n", {"set keys=k data=5 len=20", kDone}},  // data is never parsed
    {"set k 0 0 1 noreply\r\nx\r\n", {"set keys=k data=1 noreply=[ noreply] len=24", kDone}},
    {"set k 0 0 1   noreply  \r\nx\r\n", {"set keys=k data=1 noreply=[ noreply] len=28", kDone}},
    {"set k 0 0 1 junk\r\nx\r\n", {"set keys=k data=1 len=21", kDone}},  // STORED: 6th ignored
    {"set k 0 0\r\nx\r\n",
     {"!unknown_command len=11", "!unknown_command len=3", kDone}},  // ERROR x2
    {"set k 0 0 1 noreply extra\r\nx\r\n",
     {"!unknown_command len=27", "!unknown_command len=3", kDone}},  // ERROR ERROR
    {"set k\t0 0 1\r\nx\r\n", {"!unknown_command len=13", "!unknown_command len=3", kDone}},
    {"set k abc 0 1\r\nx\r\n",  // CLIENT_ERROR bad command line format, then ERROR for "x"
     {"!set bad_command_line len=15", "!unknown_command len=3", kDone}},
    {"set k 0 abc 1\r\nx\r\n", {"!set bad_command_line len=15", "!unknown_command len=3", kDone}},
    {"set k 0 0 abc\r\nx\r\n", {"!set bad_command_line len=15", "!unknown_command len=3", kDone}},
    {"set k 0 0 -1\r\nx\r\n", {"!set bad_command_line len=14", "!unknown_command len=3", kDone}},
    {"set k -1 0 1\r\nx\r\n", {"!set bad_command_line len=14", "!unknown_command len=3", kDone}},
    {"set k 0 0 5x\r\nhello\r\n",
     {"!set bad_command_line len=14", "!unknown_command len=7", kDone}},
    {"set k 0 0 2147483646\r\nx\r\n",  // > INT_MAX - 2
     {"!set bad_command_line len=22", "!unknown_command len=3", kDone}},
    {"set k 0 0 2147483648\r\nx\r\n",  // wraps negative in memcached's int32
     {"!set bad_command_line len=22", "!unknown_command len=3", kDone}},
    {"set k 0 0 99999999999999999999\r\nx\r\n",  // ERANGE
     {"!set bad_command_line len=32", "!unknown_command len=3", kDone}},
    {"set k 18446744073709551616 0 1\r\nx\r\n",
     {"!set bad_command_line len=32", "!unknown_command len=3", kDone}},
    {"set k -0 0 1\r\nx\r\n", {"set keys=k data=1 len=17", kDone}},           // STORED
    {"set k +5 0 1\r\nx\r\n", {"set keys=k data=1 len=17", kDone}},           // STORED
    {"set k 4294967296 0 1\r\nx\r\n", {"set keys=k data=1 len=25", kDone}},   // STORED, flags 0
    {"set k 0 99999999999 1\r\nx\r\n", {"set keys=k data=1 len=26", kDone}},  // STORED
    {"set k 0 0 4294967297\r\nx\r\n", {"set keys=k data=1 len=25", kDone}},   // STORED: len 1!
    {"set k 0 0 5\t\r\nhello\r\n", {"set keys=k data=5 len=21", kDone}},      // STORED
    {"set k 0 0 5\tjunk\r\nhello\r\n", {"set keys=k data=5 len=25", kDone}},  // STORED
    {"set k 0 0 5\r\r\nhello\r\n", {"set keys=k data=5 len=21", kDone}},      // STORED
    {"set k 0 0 \t5\r\nhello\r\n", {"set keys=k data=5 len=21", kDone}},      // STORED
    {std::string("set k 0 0 1\0 junk\r\nx\r\n", 22), {"set keys=k data=1 len=22", kDone}},
    {"set k abc 0 1 noreply\r\nx\r\n",  // memcached: only "ERROR" (for "x")
     {"!set bad_command_line noreply len=23", "!unknown_command len=3", kDone}},
    {"set k 0 0 noreply\r\nx\r\n",  // memcached: only "ERROR"
     {"!set bad_command_line noreply len=19", "!unknown_command len=3", kDone}},
    {"set " + k251 + " 0 0 1\r\nx\r\n",
     {"!set key_too_long len=263", "!unknown_command len=3", kDone}},
    {"set " + k251 + " 0 0 1 noreply\r\nx\r\n",  // memcached: only "ERROR"
     {"!set key_too_long noreply len=271", "!unknown_command len=3", kDone}},
    {"set a\x01 0 0 1\r\nx\r\nmn\r\n",  // STORED, as memcached: \x01 is a key byte
     {"set keys=a\\x01 data=1 len=17", "mn args=[] len=4", kDone}},
    {"set a\x01 0 0 1 noreply\r\nx\r\n",
     {"set keys=a\\x01 data=1 noreply=[ noreply] len=25", kDone}},
    {"set a\x01 0 0 x\r\nx\r\n",  // a bad line is still not swallowed
     {"!set bad_command_line len=14", "!unknown_command len=3", kDone}},
    {"set k 0 0 1\r\nabc\r\n",  // CLIENT_ERROR bad data chunk, then ERROR for "\r\n"
     {"!set bad_data_chunk swallow=3 len=16", "!unknown_command len=2", kDone}},
    {"set k 0 0 1\r\nx\n\r\n",
     {"!set bad_data_chunk swallow=3 len=16", "!unknown_command len=1", kDone}},
    {"set k 0 0 1 noreply\r\nabc\r\nmn\r\n",  // memcached: "ERROR", "MN"
     {"!set bad_data_chunk noreply swallow=3 len=24", "!unknown_command len=2", "mn args=[] len=4",
      kDone}},
    {"set k 0 0 1\r\nx", {"rest=14 discard=0"}},                      // waits for the data block
    {"cas k 0 0 1 5\r\nx\r\n", {"cas keys=k data=1 len=18", kDone}},  // EXISTS / NOT_FOUND
    {"cas k 0 0 1 5 noreply\r\nx\r\n", {"cas keys=k data=1 noreply=[ noreply] len=26", kDone}},
    {"cas k 0 0 1 5 junk\r\nx\r\n", {"cas keys=k data=1 len=23", kDone}},
    {"cas k 0 0 1 18446744073709551615\r\nx\r\n", {"cas keys=k data=1 len=37", kDone}},
    {"cas k 0 0 1\r\nx\r\n", {"!unknown_command len=13", "!unknown_command len=3", kDone}},
    {"cas k 0 0 1 abc\r\nx\r\n", {"!cas bad_command_line len=17", "!unknown_command len=3", kDone}},
    {"cas k 0 0 1 -1\r\nx\r\n", {"!cas bad_command_line len=16", "!unknown_command len=3", kDone}},
    {"cas k 0 0 1 18446744073709551616\r\nx\r\n",
     {"!cas bad_command_line len=34", "!unknown_command len=3", kDone}},
    {"cas k 0 0 1 5 noreply x\r\nx\r\n",
     {"!unknown_command len=25", "!unknown_command len=3", kDone}},
    {"add k 0 0 1 2 3\r\nx\r\n", {"!unknown_command len=17", "!unknown_command len=3", kDone}},
};

const std::vector<RequestCase> kKeyed = {
    {"delete k\r\n", {"delete keys=k len=10", kDone}},  // NOT_FOUND / DELETED
    {"delete k 0\r\n", {"delete keys=k len=12", kDone}},
    {"delete k noreply\r\n", {"delete keys=k noreply=[ noreply] len=18", kDone}},
    {"delete k 0 noreply\r\n", {"delete keys=k noreply=[ noreply] len=20", kDone}},
    {"delete\r\n", {"!unknown_command len=8", kDone}},                 // ERROR
    {"delete k 0 noreply x\r\n", {"!unknown_command len=22", kDone}},  // ERROR
    {"delete k 1\r\n", {"!delete delete_usage len=12", kDone}},  // CLIENT_ERROR ... Usage: ...
    {"delete k 0 junk\r\n", {"!delete delete_usage len=17", kDone}},
    {"delete k 1 noreply\r\n", {"!delete delete_usage noreply len=20", kDone}},  // (nothing)
    {"delete " + k251 + "\r\n", {"!delete key_too_long len=260", kDone}},
    {"delete " + k251 + " noreply\r\n", {"!delete key_too_long noreply len=268", kDone}},
    {"delete a\x02\r\n", {"delete keys=a\\x02 len=11", kDone}},
    {"incr k 1\r\n", {"incr keys=k len=10", kDone}},  // NOT_FOUND / value
    {"decr k 18446744073709551615\r\n", {"decr keys=k len=29", kDone}},
    {"incr k 1 noreply\r\n", {"incr keys=k noreply=[ noreply] len=18", kDone}},
    {"decr k 1 junk\r\n", {"decr keys=k len=15", kDone}},       // NOT_FOUND: 4th token ignored
    {"incr\r\n", {"!unknown_command len=6", kDone}},            // ERROR
    {"incr k\r\n", {"!unknown_command len=8", kDone}},          // ERROR
    {"incr k 1 2 3\r\n", {"!unknown_command len=14", kDone}},   // ERROR
    {"incr k abc\r\n", {"!incr invalid_delta len=12", kDone}},  // CLIENT_ERROR invalid numeric..
    {"incr k -1\r\n", {"!incr invalid_delta len=11", kDone}},
    {"incr k 18446744073709551616\r\n", {"!incr invalid_delta len=29", kDone}},
    {"incr k abc noreply\r\n", {"!incr invalid_delta noreply len=20", kDone}},  // (nothing)
    {"incr " + k251 + " 1\r\n", {"!incr key_too_long len=260", kDone}},
    {"touch k 10\r\n", {"touch keys=k len=12", kDone}},  // NOT_FOUND / TOUCHED
    {"touch k -1 noreply\r\n", {"touch keys=k noreply=[ noreply] len=20", kDone}},
    {"touch k\r\n", {"!unknown_command len=9", kDone}},             // ERROR
    {"touch k abc\r\n", {"!touch invalid_exptime len=13", kDone}},  // CLIENT_ERROR invalid exptime
    {"touch k abc noreply\r\n", {"!touch invalid_exptime noreply len=21", kDone}},
    {"touch " + k251 + " 1\r\n", {"!touch key_too_long len=261", kDone}},
};

const std::string kTwentyFlags = " b c d e f g h i j k l m n o p q r s";  // 18 flags

const std::vector<RequestCase> kMeta = {
    {"mg k\r\n", {"mg keys=k args=[k] len=6", kDone}},  // EN
    {"mg k v\r\n", {"mg keys=k args=[k v] len=8", kDone}},
    {"mg  k  v  \r\n", {"mg keys=k args=[k  v] len=12", kDone}},
    {"mg k q\r\n", {"mg keys=k noreply=[ q] args=[k q] len=8", kDone}},
    {"mg k qx\r\n", {"mg keys=k noreply=[ qx] args=[k qx] len=9", kDone}},  // q by first byte
    {"mg k v q t q\r\n", {"mg keys=k noreply=[ q] args=[k v q t q] len=14", kDone}},
    {"mg k ! O12345678901234567890123456789012345\r\n",  // flags are the backend's business
     {"mg keys=k args=[k ! O12345678901234567890123456789012345] len=45", kDone}},
    {"mg YQ== b v\r\n", {"mg keys=YQ== decoded=a args=[YQ== b v] len=13", kDone}},
    {"mg YWJj bx v\r\n", {"mg keys=YWJj decoded=abc args=[YWJj bx v] len=14", kDone}},
    {"mg AAB/+w== b\r\n",
     {"mg keys=AAB/+w== decoded=\\x00\\x00\\x7f\\xfb args=[AAB/+w== b] len=15", kDone}},
    {"mg YQ b v\r\n", {"!mg base64_key len=11", kDone}},  // CLIENT_ERROR error decoding key
    {"mg YQ= b v\r\n", {"!mg base64_key len=12", kDone}},
    {"mg ==== b v\r\n", {"!mg base64_key len=13", kDone}},
    {"mg !!!! b v\r\n", {"!mg base64_key len=13", kDone}},
    {"mg k bx v\r\n", {"!mg base64_key len=11", kDone}},
    {"mg k q b\r\n", {"!mg base64_key len=10", kDone}},   // errors ignore q
    {"mg YQ=a b\r\n", {"!mg base64_key len=11", kDone}},  // EN in memcached (deliberate)
    {"mg a" + kTwentyFlags + "\r\n", {"!mg meta_get_flags_too_long len=42", kDone}},
    {"mg a c d e f g h i j k l m n o p q r s\r\n",  // 19 tokens: the backend says invalid flag
     {"mg keys=a noreply=[ q] args=[a c d e f g h i j k l m n o p q r s] len=40", kDone}},
    {"mg\r\n", {"!unknown_command len=4", kDone}},                   // ERROR
    {"mg " + k251 + " v\r\n", {"!mg key_too_long len=258", kDone}},  // CLIENT_ERROR bad command..
    {"mg k\tv\r\n", {"mg keys=k\\x09v args=[k\\x09v] len=8", kDone}},  // EN: key "k\tv"
    {"mn\r\n", {"mn args=[] len=4", kDone}},
    {"mn x y\r\n", {"mn args=[x y] len=8", kDone}},                       // MN
    {"mx\r\n", {"!unknown_command len=4", kDone}},                        // ERROR
    {"m\r\n", {"!unknown_command len=3", kDone}},                         // ERROR
    {"ms k 2\r\nxx\r\n", {"ms keys=k data=2 args=[k 2] len=12", kDone}},  // HD
    {"ms k 2 T0 F5\r\nxx\r\n", {"ms keys=k data=2 args=[k 2 T0 F5] len=18", kDone}},
    {"ms k 2 q\r\nxx\r\n", {"ms keys=k data=2 noreply=[ q] args=[k 2 q] len=14", kDone}},
    {"ms YQ== 2 b\r\nxx\r\n", {"ms keys=YQ== decoded=a data=2 args=[YQ== 2 b] len=17", kDone}},
    {"ms k 4294967298\r\nxx\r\n", {"ms keys=k data=2 args=[k 4294967298] len=21", kDone}},  // HD
    {"ms k 2 ! T1 T1\r\nxx\r\n",  // CLIENT_ERROR invalid flag, swallowed (checked here: #16)
     {"!ms meta_unknown_flag swallow=4 len=20", kDone}},
    {"ms k 2 c f k s t v h l u I O P L T0 N0 R0\r\nxx\r\n",  // 19 tokens
     {"ms keys=k data=2 args=[k 2 c f k s t v h l u I O P L T0 N0 R0] len=47", kDone}},
    {"ms\r\n", {"!unknown_command len=4", kDone}},  // ERROR
    {"ms k\r\nxx\r\n",                              // CLIENT_ERROR bad command line format, ERROR
     {"!ms bad_command_line len=6", "!unknown_command len=4", kDone}},
    {"ms k abc\r\nxx\r\n", {"!ms bad_command_line len=10", "!unknown_command len=4", kDone}},
    {"ms k -1\r\nxx\r\n", {"!ms bad_command_line len=9", "!unknown_command len=4", kDone}},
    {"ms k 2x\r\nxx\r\n", {"!ms bad_command_line len=9", "!unknown_command len=4", kDone}},
    {"ms k S2\r\nxx\r\n", {"!ms bad_command_line len=9", "!unknown_command len=4", kDone}},
    {"ms k 2147483646\r\nxx\r\n", {"!ms bad_command_line len=17", "!unknown_command len=4", kDone}},
    {"ms " + k251 + " 2\r\nxx\r\n", {"!ms key_too_long len=258", "!unknown_command len=4", kDone}},
    {"ms k 2" + kTwentyFlags.substr(0, 34) + "\r\nxx\r\n",  // CLIENT_ERROR options flags too long
     {"!ms meta_flags_too_long len=42", "!unknown_command len=4", kDone}},
    {"ms k 2 b\r\nxx\r\n", {"!ms base64_key swallow=4 len=14", kDone}},  // swallowed
    {"ms k 2 q b\r\nxx\r\nmn\r\n", {"!ms base64_key swallow=4 len=16", "mn args=[] len=4", kDone}},
    {"ms a\x1b 2\r\nxx\r\n", {"ms keys=a\\x1b data=2 args=[a\\x1b 2] len=13", kDone}},
    {"ms k 2\r\nxxx\r\n",  // CLIENT_ERROR bad data chunk, then ERROR for the "\n" left
     {"!ms bad_data_chunk swallow=4 len=12", "!unknown_command len=1", kDone}},
    {"ms k 1 q\r\nabc\r\nmn\r\n",  // the error ignores q: bad data chunk, ERROR, MN
     {"!ms bad_data_chunk swallow=3 len=13", "!unknown_command len=2", "mn args=[] len=4", kDone}},
    {"md k\r\n", {"md keys=k args=[k] len=6", kDone}},  // NF
    {"md k q\r\n", {"md keys=k noreply=[ q] args=[k q] len=8", kDone}},
    {"md YQ== b q\r\n", {"md keys=YQ== decoded=a noreply=[ q] args=[YQ== b q] len=13", kDone}},
    {"md\r\n", {"!unknown_command len=4", kDone}},
    {"md !!!! b\r\n", {"!md meta_invalid_flag len=11", kDone}},  // CLIENT_ERROR invalid or dup..
    {"md YQ b\r\n", {"!md meta_invalid_flag len=9", kDone}},
    {"md a" + kTwentyFlags + "\r\n", {"!md meta_flags_too_long len=42", kDone}},
    {"md " + k251 + "\r\n", {"!md key_too_long len=256", kDone}},
    {"ma k\r\n", {"ma keys=k args=[k] len=6", kDone}},  // NF
    {"ma k N0 J5 v\r\n", {"ma keys=k args=[k N0 J5 v] len=14", kDone}},
    {"ma\r\n", {"!unknown_command len=4", kDone}},
    {"ma !!!! b\r\n", {"!ma meta_invalid_flag len=11", kDone}},
    {"ma a" + kTwentyFlags + "\r\n", {"!ma meta_flags_too_long len=42", kDone}},
    {"me k\r\n", {"me keys=k args=[k] len=6", kDone}},      // EN / ME k exp=...
    {"me k q\r\n", {"me keys=k args=[k q] len=8", kDone}},  // me has no flags: q is not read
    {"me YQ== b\r\n", {"me keys=YQ== decoded=a args=[YQ== b] len=11", kDone}},
    {"me YQ== x\r\n", {"me keys=YQ== args=[YQ== x] len=11", kDone}},
    {"me k bx\r\n", {"me keys=k args=[k bx] len=9", kDone}},  // only an exact "b"
    {"me\r\n", {"!me bad_command_line len=4", kDone}},        // CLIENT_ERROR bad command line..
    {"me a b\r\n", {"!me bad_command_line len=8", kDone}},
    {"me !!!! b\r\n", {"!me bad_command_line len=11", kDone}},
    {"me " + k251 + "\r\n", {"!me key_too_long len=256", kDone}},
};

const std::vector<RequestCase> kOther = {
    {"version\r\n", {"version args=[] len=9", kDone}},
    {"version x y\r\n", {"version args=[x y] len=13", kDone}},  // VERSION 1.6.18
    {"quit\r\n", {"quit args=[] len=6", kDone}},
    {"quit now\r\n", {"quit args=[now] len=10", kDone}},
    {"stats\r\n", {"stats args=[] len=7", kDone}},
    {"stats  detail  on  \r\n", {"stats args=[detail  on] len=21", kDone}},
    {"verbosity 1\r\n", {"verbosity args=[1] len=13", kDone}},      // OK
    {"verbosity 1 2\r\n", {"verbosity args=[1 2] len=15", kDone}},  // OK
    {"verbosity 1 noreply\r\n", {"verbosity noreply=[ noreply] args=[1 noreply] len=21", kDone}},
    {"verbosity\r\n", {"!unknown_command len=11", kDone}},        // ERROR
    {"verbosity 1 2 3\r\n", {"!unknown_command len=17", kDone}},  // ERROR
    {"verbosity abc\r\n", {"!verbosity bad_command_line len=15", kDone}},
    {"verbosity noreply\r\n", {"!verbosity bad_command_line noreply len=19", kDone}},  // nothing
    {"flush_all\r\n", {"flush_all args=[] len=11", kDone}},                            // OK
    {"lru_crawler metadump all\r\n", {"lru_crawler args=[metadump all] len=26", kDone}},
    {"lru_crawler metadump 1,2\r\n", {"lru_crawler args=[metadump 1,2] len=26", kDone}},
    {"lru_crawler metadump\r\n", {"!unknown_command len=22", kDone}},           // ERROR
    {"lru_crawler metadump all x\r\n", {"!unknown_command len=28", kDone}},     // ERROR
    {"lru_crawler enable\r\n", {"!unknown_command len=20", kDone}},  // one server's crawler
    {"flush_all 0\r\n", {"flush_all args=[0] len=13", kDone}},
    {"flush_all -1\r\n", {"flush_all args=[-1] len=14", kDone}},
    {"flush_all noreply\r\n", {"flush_all noreply=[ noreply] args=[noreply] len=19", kDone}},
    {"flush_all 0 noreply\r\n", {"flush_all noreply=[ noreply] args=[0 noreply] len=21", kDone}},
    {"flush_all 10 junk\r\n", {"flush_all args=[10 junk] len=19", kDone}},  // OK
    {"flush_all abc\r\n", {"!flush_all invalid_exptime len=15", kDone}},
    {"flush_all abc noreply\r\n", {"!flush_all invalid_exptime noreply len=23", kDone}},
    {"flush_all noreply 10\r\n", {"!flush_all invalid_exptime len=22", kDone}},
    {"flush_all 1 2 3\r\n", {"!unknown_command len=17", kDone}},  // ERROR
    {"\r\n", {"!unknown_command len=2", kDone}},
    {"\n", {"!unknown_command len=1", kDone}},
    {"   \r\n", {"!unknown_command len=5", kDone}},
    {"x\r\n", {"!unknown_command len=3", kDone}},
    {"\r\r\n", {"!unknown_command len=3", kDone}},
    // Commands memcached has and mcring does not proxy.
    {"shutdown\r\n", {"!unknown_command len=10", kDone}},
    {"bget a\r\n", {"!unknown_command len=8", kDone}},
    {"slabs reassign 1 2\r\n", {"!unknown_command len=20", kDone}},
    {"cache_memlimit 100\r\n", {"!unknown_command len=20", kDone}},
    {"lru_crawler crawl all\r\n", {"!unknown_command len=23", kDone}},
    // Not memcached's last branch, or another last token: ERROR as for any unknown command.
    {"FOO" + repeat(" a", 22) + " HTTP/1.0\r\n", {"!unknown_command len=58", kDone}},
    {"H HTTP/1.1\r\n", {"!unknown_command len=12", kDone}},
    {"mx HTTP/1.1\r\n", {"!unknown_command len=13", kDone}},
    {"gxx HTTP/1.1\r\n", {"!unknown_command len=14", kDone}},
    {"tx HTTP/1.1\r\n", {"!unknown_command len=13", kDone}},
    // watch is parsed (the session reads its names: an unknown one is memcached's ERROR).
    {"watch\r\n", {"watch args=[] len=7", kDone}},
    {"watch HTTP/1.1\r\n", {"watch args=[HTTP/1.1] len=16", kDone}},
    {"bget HTTP/1.1\r\n", {"!unknown_command len=15", kDone}},
    {"FOO HTTP/1.1 x\r\n", {"!unknown_command len=16", kDone}},
    {"FOO http/1.1\r\n", {"!unknown_command len=14", kDone}},
    {"FOO\tHTTP/1.1\r\n", {"!unknown_command len=14", kDone}},
    {std::string("GET /\0 HTTP/1.0\r\n", 17), {"!unknown_command len=17", kDone}},
};

// An unknown command whose last token starts with "HTTP/": memcached hangs up without a reply
// (its t/malicious-commands.t), and nothing after the line is read. (The lines that look alike and
// are answered ERROR are in kOther.)
const std::vector<RequestCase> kHttpHangups = {
    {"GET / HTTP/1.0\r\n", {"!http_request_line noreply close len=16", kDone}},
    {"PUT /a HTTP/1.1\r\nversion\r\n", {"!http_request_line noreply close len=17", kDone}},
    {"DELETE HTTP/1.1\r\n", {"!http_request_line noreply close len=17", kDone}},
    {"HTTP/1.1\r\n", {"!http_request_line noreply close len=10", kDone}},
    {"FOO HTTP/\r\n", {"!http_request_line noreply close len=11", kDone}},
    {"FOO HTTP/1.0\r\r\n", {"!http_request_line noreply close len=15", kDone}},
    {std::string("FOO HTTP/1.0\0junk\r\n", 19), {"!http_request_line noreply close len=19", kDone}},
    {"mxx HTTP/1.1\r\n", {"!http_request_line noreply close len=14", kDone}},
    {"FOO" + repeat(" a", 21) + " HTTP/1.0 b\r\n",  // the 23rd token: memcached stops there
     {"!http_request_line noreply close len=58", kDone}},
};

// Lines over the limit. memcached closes such a client without a reply; it only counts the bytes
// it holds, so it accepts a longer line that arrives in one read, which mcring does not.
const std::vector<RequestCase> kLongLines = {
    {std::string(2048, 'x'), {"rest=2048 discard=0"}},
    {std::string(2049, 'x'), {"!line_too_long noreply close len=0", kDone}},
    {std::string(2048, 'x') + "\n", {"!unknown_command len=2049", kDone}},
    {std::string(2049, 'x') + "\n", {"!line_too_long noreply close len=0", kDone}},
    {"set k 0 0 1" + std::string(3000, ' ') + "\r\nx\r\n",
     {"!line_too_long noreply close len=0", kDone}},
    {"get " + std::string(2045, 'a') + "\r\n", {"!get key_too_long len=2051", kDone}},
    {std::string(50, ' ') + "get " + std::string(3000, 'a') + "\r\n",
     {"!get key_too_long len=3056", kDone}},
    {std::string(101, ' ') + "get " + std::string(3000, 'a'),
     {"!line_too_long noreply close len=0", kDone}},
    {std::string(100, ' ') + "gets " + std::string(3000, 'a'), {"rest=3105 discard=0"}},
    {"gat 1 " + std::string(3000, 'a') + "\r\n", {"!gat key_too_long len=3008", kDone}},
    {"gats " + std::string(3000, 'a'), {"rest=3005 discard=0"}},
    {"get\t" + std::string(3000, 'a'), {"!line_too_long noreply close len=0", kDone}},
    {"ge" + std::string(3000, 'a'), {"!line_too_long noreply close len=0", kDone}},
    {"mg " + std::string(3000, 'a'), {"!line_too_long noreply close len=0", kDone}},
    // The client is closed: nothing after the long line is parsed.
    {std::string(2100, 'x') + "\r\nget a\r\n", {"!line_too_long noreply close len=0", kDone}},
};

TEST_CASE("request parser: HTTP request lines hang up") {
  const RequestParser parser;
  for (const RequestCase& c : kHttpHangups) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: retrieval commands") {
  const RequestParser parser;
  for (const RequestCase& c : kRetrieval) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: storage commands") {
  const RequestParser parser;
  for (const RequestCase& c : kStorage) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: delete, incr, decr, touch") {
  const RequestParser parser;
  for (const RequestCase& c : kKeyed) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: meta commands") {
  const RequestParser parser;
  for (const RequestCase& c : kMeta) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: local and broadcast commands, empty and unknown lines") {
  const RequestParser parser;
  for (const RequestCase& c : kOther) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: line length limits") {
  const RequestParser parser;
  for (const RequestCase& c : kLongLines) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: a retrieval line with many keys") {
  const RequestParser parser;
  std::string line = "get";
  std::string expected = "get keys=";
  for (int i = 0; i < 1500; ++i) {
    line += " k" + std::to_string(i);
    expected += (i > 0 ? ",k" : "k") + std::to_string(i);
  }
  line += "\r\n";
  checkRequests(parser, {line, {expected + " len=" + std::to_string(line.size()), kDone}});
}

// Everything that ends cleanly, one after another in one buffer: a pipeline must frame exactly
// as its requests do one at a time, at every fragmentation.
TEST_CASE("request parser: a pipeline of every command and error") {
  const RequestParser parser;
  std::string all;
  std::vector<std::string> expected;
  for (const auto* table : {&kRetrieval, &kStorage, &kKeyed, &kMeta, &kOther}) {
    for (const RequestCase& c : *table) {
      if (c.expected.back() != kDone || c.input.size() > 200) {
        continue;
      }
      all += c.input;
      expected.insert(expected.end(), c.expected.begin(), c.expected.end() - 1);
    }
  }
  expected.push_back(kDone);
  REQUIRE(expected.size() > 200);
  checkRequests(parser, {all, expected}, /*every_byte=*/false);
  for (const size_t chunk : {1, 2, 3, 5, 7, 10, 64, 100, 1000}) {
    CAPTURE(chunk);
    REQUIRE(joinLines(feedRequests(parser, all, chunksOf(all.size(), chunk))) ==
            joinLines(expected));
  }
  // Random fragmentations, reproducible.
  std::mt19937 rng(12345);
  for (int round = 0; round < 200; ++round) {
    std::vector<size_t> cuts;
    size_t at = 0;
    while (at < all.size()) {
      at = std::min(all.size(), at + 1 + rng() % 40);
      cuts.push_back(at);
    }
    REQUIRE(joinLines(feedRequests(parser, all, cuts)) == joinLines(expected));
  }
}

TEST_CASE("request parser: custom limits") {
  ParserLimits limits;
  limits.max_line = 64;
  limits.max_retrieval_line = 200;
  limits.item_size_max = 100;
  limits.max_keys = 3;
  limits.max_key_length = 10;
  const RequestParser parser(limits);
  const std::string v100(100, 'v');
  const std::string v101(101, 'v');
  const std::vector<RequestCase> cases = {
      {"set k 0 0 100\r\n" + v100 + "\r\n", {"set keys=k data=100 len=117", kDone}},
      // SERVER_ERROR object too large for cache; memcached swallows the block.
      {"set k 0 0 101\r\n" + v101 + "\r\nmn\r\n",
       {"!set too_large swallow=103 len=118", "mn args=[] len=4", kDone}},
      {"set k 0 0 101 noreply\r\n" + v101 + "\r\n",
       {"!set too_large noreply swallow=103 len=126", kDone}},
      {"ms k 101 q\r\n" + v101 + "\r\n", {"!ms too_large swallow=103 len=115", kDone}},
      // The rejected block has not all arrived: the rest is discarded as it comes.
      {"set k 0 0 1000\r\nabc", {"!set too_large swallow=1002 len=1018", "rest=0 discard=999"}},
      {"get a b c\r\n", {"get keys=a,b,c len=11", kDone}},
      {"get a b c d\r\n", {"!get too_many_keys len=13", kDone}},
      {"get aaaaaaaaaa\r\n", {"get keys=aaaaaaaaaa len=16", kDone}},
      {"get aaaaaaaaaaa\r\n", {"!get key_too_long len=17", kDone}},
      {"mg aaaaaaaaaaa\r\n", {"!mg key_too_long len=16", kDone}},
      {std::string(64, 'x') + "\n", {"!unknown_command len=65", kDone}},
      {std::string(65, 'x') + "\n", {"!line_too_long noreply close len=0", kDone}},
      {"get a " + std::string(190, ' ') + "\r\n", {"get keys=a len=198", kDone}},
      {"get a " + std::string(200, ' ') + "\r\n", {"!line_too_long noreply close len=0", kDone}},
  };
  for (const RequestCase& c : cases) {
    checkRequests(parser, c);
  }
  // Deciding whether an over-long line is a retrieval may need more bytes than max_line (up to
  // 100 leading spaces, then "gets "); fed in pieces it must still come to the same answer.
  const std::vector<RequestCase> spaced = {
      {std::string(80, ' ') + "get " + std::string(100, 'a') + "\r\n",
       {"!get key_too_long len=186", kDone}},
      {std::string(80, ' ') + "ge" + std::string(100, 'a') + "\r\n",
       {"!line_too_long noreply close len=0", kDone}},
      {std::string(80, ' ') + "g", {"rest=81 discard=0"}},
      {std::string(101, ' ') + "get a\r\n", {"!line_too_long noreply close len=0", kDone}},
  };
  for (const RequestCase& c : spaced) {
    checkRequests(parser, c);
  }
}

TEST_CASE("request parser: a value over memcached's default item size is swallowed") {
  const RequestParser parser;
  const std::string input =
      "set k 0 0 2000000\r\n" + std::string(2000000, 'x') + "\r\nget k\r\n";  // SERVER_ERROR..
  const RequestCase c{input,
                      {"!set too_large swallow=2000002 len=2000021", "get keys=k len=7", kDone}};
  checkRequests(parser, c, /*every_byte=*/false);
  for (const size_t chunk : {1000, 65536, 100000}) {
    REQUIRE(joinLines(feedRequests(parser, input, chunksOf(input.size(), chunk))) ==
            joinLines(c.expected));
  }
}

// Found by the differential fuzzer (tests/integration/diff_fuzz.py): each row is
// memcached 1.6.18's answer, measured (in the comment).
TEST_CASE("request parser: differential fuzzer case 1, a too-large set with noreply is silent") {
  const RequestParser parser;
  // memcached answers nothing (then MN). 1 MiB is not over item_size_max, so it goes to the
  // server, whose "object too large" the proxy drops for noreply (BackendConnection::deliver);
  // one byte more is refused here, silently.
  checkRequests(parser,
                {"set big0 0 0 1048576 noreply\r\n" + std::string(1048576, 'x') + "\r\nmn\r\n",
                 {"set keys=big0 data=1048576 noreply=[ noreply] len=1048608", "mn args=[] len=4",
                  kDone}},
                /*every_byte=*/false);
  checkRequests(parser,
                {"set big0 0 0 1048577 noreply\r\n" + std::string(1048577, 'x') + "\r\nmn\r\n",
                 {"!set too_large noreply swallow=1048579 len=1048609", "mn args=[] len=4",
                  kDone}},
                /*every_byte=*/false);
}

TEST_CASE("request parser: differential fuzzer case 2, ms flags are checked before the size") {
  const RequestParser parser;
  const std::string line = "ms big1 1048577 T0 c Mp F4294967295\r\n";
  // CLIENT_ERROR invalid mode for ms M token (not SERVER_ERROR object too large for cache),
  // the block swallowed; and no stale-value delete (Dispatcher::invalidateTooLarge) follows.
  checkRequests(parser,
                {line + std::string(1048577, 'x') + "\r\nmn\r\n",
                 {"!ms meta_set_invalid_mode swallow=1048579 len=" +
                      std::to_string(line.size() + 1048579),
                  "mn args=[] len=4", kDone}},
                /*every_byte=*/false);
}

const std::string kOpaque31 = "O" + std::string(31, '9');
const std::string kOpaque32 = "O" + std::string(32, '9');
const std::vector<RequestCase> kMetaFlagOrder = {
    // memcached's pre-parse: a bad number or M token is remembered, the last one's text wins;
    // a repeated, unknown or >= 0x7f flag stops the scan at once; then an opaque over 32 bytes
    // is remembered and a bad mode answered at once.
    {"ms k 2 Fx Mp\r\nxx\r\n", {"!ms bad_command_line swallow=4 len=18", kDone}},
    {"ms k 2 Mp Tx\r\nxx\r\n", {"!ms meta_bad_token swallow=4 len=18", kDone}},
    {"ms k 2 " + kOpaque32 + " Mp\r\nxx\r\n",
     {"!ms meta_set_invalid_mode swallow=4 len=49", kDone}},
    {"ms k 2 " + kOpaque32 + "\r\nxx\r\n", {"!ms meta_opaque_too_long swallow=4 len=46", kDone}},
    {"ms k 2 " + kOpaque31 + "\r\nxx\r\n",  // HD O999...
     {"ms keys=k data=2 args=[k 2 " + kOpaque31 + "] len=45", kDone}},
    {"ms k 2 MSS\r\nxx\r\n", {"!ms meta_mode_length swallow=4 len=16", kDone}},
    {"ms k 2 T1 T2\r\nxx\r\n", {"!ms meta_duplicate_flag swallow=4 len=18", kDone}},
    {"ms k 2 \x80\r\nxx\r\n", {"!ms meta_duplicate_flag swallow=4 len=14", kDone}},
    {"ms k 2 J\r\nxx\r\n", {"!ms meta_bad_initial swallow=4 len=14", kDone}},
    {"ms k 2 Dx\r\nxx\r\n", {"!ms meta_bad_delta swallow=4 len=15", kDone}},
    {"ms k 2 E5\r\nxx\r\n", {"!ms meta_unknown_flag swallow=4 len=15", kDone}},
    {"ms k 2 F4294967296 MS\r\nxx\r\n",  // HD: flags wrap to 32 bits
     {"ms keys=k data=2 args=[k 2 F4294967296 MS] len=27", kDone}},
    {"ms !!!! 2 b Tx\r\nxx\r\n", {"!ms meta_bad_token swallow=4 len=20", kDone}},
    {"ms !!!! 2 Z b\r\nxx\r\n", {"!ms meta_unknown_flag swallow=4 len=19", kDone}},
    {"ms !!!! 2 b\r\nxx\r\n", {"!ms base64_key swallow=4 len=17", kDone}},
    // A bad flag is reported even when the data block is bad too (then "\n" is ERROR).
    {"ms k5 0 C1 T0 E3\r\na\r\n",
     {"!ms meta_unknown_flag swallow=2 len=20", "!unknown_command len=1", kDone}},
    {"mg !!!! b Tx\r\n", {"!mg meta_bad_token len=14", kDone}},
    {"mg !!!! Tx b\r\n", {"!mg base64_key len=14", kDone}},
    {"mg !!!! b Z\r\n", {"!mg meta_unknown_flag len=13", kDone}},
    {"md !!!! b Tx\r\n", {"!md meta_invalid_flag len=14", kDone}},
};

TEST_CASE("request parser: differential fuzzer, meta flag errors in memcached's order") {
  const RequestParser parser;
  for (const auto& c : kMetaFlagOrder) {
    checkRequests(parser, c, /*every_byte=*/true);
  }
}

TEST_CASE("request parser: differential fuzzer case 3, a bare CR inside a line is a key byte") {
  const RequestParser parser;
  // VALUE k7 ..., VALUE n0\rget ..., END: memcached splits tokens on spaces only.
  checkRequests(parser, {"get k7 n0\rget x\r\n", {"get keys=k7,n0\\x0dget,x len=17", kDone}},
                /*every_byte=*/true);
}

TEST_CASE("request parser: parse() consumes nothing and reports offsets into the line") {
  const RequestParser parser;
  Request req;
  const std::string line = "set key 5 0 3 noreply\r\n";
  // Every proper prefix of the line is Incomplete.
  for (size_t n = 0; n < line.size(); ++n) {
    REQUIRE(parser.parse(std::string_view(line).substr(0, n), req) == ParseStatus::Incomplete);
  }
  // parse() answers Ok as soon as the line is there; frameRequest() waits for the block.
  REQUIRE(parser.parse(line, req) == ParseStatus::Ok);
  CHECK(req.command == Command::Set);
  CHECK(req.line_length == line.size());
  CHECK(req.has_data);
  CHECK(req.value_length == 3);
  CHECK(req.keys.size() == 1);
  CHECK(req.keys[0].in(line) == "key");
  CHECK(req.routingKey(line, 0) == "key");
  CHECK(req.noreply);
  CHECK(req.error == RequestError::None);
  uint64_t consumed = 7;
  CHECK(frameRequest(parser, line + "ab", req, &consumed) == ParseStatus::Incomplete);
  CHECK(consumed == 0);
  CHECK(frameRequest(parser, line + "abc\r\nget", req, &consumed) == ParseStatus::Ok);
  CHECK(consumed == line.size() + 5);
  // Cutting the noreply token out leaves the line the proxy forwards.
  std::string forwarded = line;
  forwarded.erase(req.noreply_token.offset, req.noreply_token.length);
  CHECK(forwarded == "set key 5 0 3\r\n");

  const std::string mg = "mg a2V5 v b q t\r\n";
  REQUIRE(parser.parse(mg, req) == ParseStatus::Ok);
  CHECK(req.key_base64);
  CHECK(req.keys[0].in(mg) == "a2V5");
  CHECK(req.routingKey(mg, 0) == "key");
  std::string mg_forwarded = mg;
  mg_forwarded.erase(req.noreply_token.offset, req.noreply_token.length);
  CHECK(mg_forwarded == "mg a2V5 v b t\r\n");
  // The parser resets the request: nothing of the mg survives into the next parse.
  REQUIRE(parser.parse("get x\r\n", req) == ParseStatus::Ok);
  CHECK_FALSE(req.key_base64);
  CHECK_FALSE(req.noreply);
  CHECK(req.decoded_key.empty());
  CHECK(req.keys.size() == 1);
  CHECK(req.args.in("get x\r\n") == "x");

  const std::string gat = "gat 300 a b\r\n";
  REQUIRE(parser.parse(gat, req) == ParseStatus::Ok);
  CHECK(req.exptime.in(gat) == "300");
  CHECK(req.args.in(gat) == "300 a b");
  CHECK(req.keys.size() == 2);
  CHECK(req.routingKey(gat, 1) == "b");
}

TEST_CASE("request parser: data block terminator") {
  CHECK(dataBlockTerminatorOk('\r', '\n'));
  CHECK_FALSE(dataBlockTerminatorOk('\n', '\r'));
  CHECK_FALSE(dataBlockTerminatorOk('\n', '\n'));
  CHECK_FALSE(dataBlockTerminatorOk('x', '\n'));
}

TEST_CASE("request parser: no allocation once warm") {
  const RequestParser parser;
  Request req;
  const std::string pipeline =
      "get a b c d e f g h i j k l m n o p\r\nmg YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo= b v q\r\n"
      "set key 0 0 5 noreply\r\nhello\r\nms a2V5 3 b T0\r\nabc\r\nincr n 1\r\nbogus\r\n"
      "set k 0 0 x\r\nflush_all 10\r\n";
  auto run = [&] {
    std::string_view rest = pipeline;
    int units = 0;
    while (!rest.empty()) {
      uint64_t consumed = 0;
      const ParseStatus status = frameRequest(parser, rest, req, &consumed);
      REQUIRE(status != ParseStatus::Incomplete);
      rest.remove_prefix(consumed);
      ++units;
    }
    return units;
  };
  REQUIRE(run() == 8);  // warm up: the key vector and the decoded key grow here
  const uint64_t before = g_allocations.load();
  for (int i = 0; i < 1000; ++i) {
    run();
  }
  CHECK(g_allocations.load() == before);
}

TEST_CASE("request errors: texts and counter names come from one table") {
  CHECK(requestErrorText(RequestError::UnknownCommand) == "ERROR");
  CHECK(requestErrorText(RequestError::BadCommandLine) == "CLIENT_ERROR bad command line format");
  CHECK(requestErrorText(RequestError::KeyTooLong) == "CLIENT_ERROR bad command line format");
  CHECK(requestErrorText(RequestError::TooManyKeys) == "CLIENT_ERROR too many keys");
  CHECK(requestErrorText(RequestError::Base64Key) == "CLIENT_ERROR error decoding key");
  CHECK(requestErrorText(RequestError::BadDataChunk) == "CLIENT_ERROR bad data chunk");
  CHECK(requestErrorText(RequestError::TooLarge) == "SERVER_ERROR object too large for cache");
  CHECK(requestErrorText(RequestError::LineTooLong).empty());  // memcached hangs up silently
  CHECK(requestErrorText(RequestError::HttpRequestLine).empty());
  CHECK(requestErrorText(RequestError::InvalidExptime) == "CLIENT_ERROR invalid exptime argument");
  CHECK(requestErrorText(RequestError::InvalidDelta) ==
        "CLIENT_ERROR invalid numeric delta argument");
  CHECK(requestErrorText(RequestError::DeleteUsage) ==
        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
  CHECK(requestErrorText(RequestError::MetaFlagsTooLong) == "CLIENT_ERROR options flags too long");
  CHECK(requestErrorText(RequestError::MetaGetFlagsTooLong) ==
        "CLIENT_ERROR options flags are too long");
  CHECK(requestErrorText(RequestError::MetaInvalidFlag) ==
        "CLIENT_ERROR invalid or duplicate flag");
  CHECK(requestErrorText(RequestError::GatWithoutKeys) == "END");

  CHECK(requestErrorName(RequestError::None) == "none");
  CHECK(requestErrorName(RequestError::UnknownCommand) == "unknown_command");
  CHECK(requestErrorName(RequestError::Base64Key) == "base64_key");
  CHECK(requestErrorName(RequestError::GatWithoutKeys) == "gat_without_keys");
  std::vector<std::string_view> names;
#define MCRING_X(id, text) names.push_back(requestErrorName(RequestError::id));
  MCRING_REQUEST_ERRORS(MCRING_X)
#undef MCRING_X
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = i + 1; j < names.size(); ++j) {
      CHECK(names[i] != names[j]);
    }
  }
}

}  // namespace
}  // namespace mcring::protocol

TEST_CASE("request framer: 0x80 is just a byte of a text line (the session picks the protocol)") {
  const mcring::protocol::RequestParser parser{mcring::protocol::ParserLimits{}};
  mcring::protocol::Request req;
  std::string text = "get a\r\n\x80x\r\n";
  mcring::protocol::StringSource later(text);
  mcring::protocol::RequestFramer framer2(parser);
  CHECK(framer2.next(later, req).kind == mcring::protocol::RequestFrameKind::Request);
  text.erase(0, 7);
  mcring::protocol::StringSource rest(text);
  const mcring::protocol::RequestFrame second = framer2.next(rest, req);
  CHECK(second.kind == mcring::protocol::RequestFrameKind::Rejected);
  CHECK(req.error == mcring::protocol::RequestError::UnknownCommand);
  CHECK_FALSE(req.close);
}
