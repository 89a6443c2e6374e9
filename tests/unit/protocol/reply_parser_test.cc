// ReplyParser: every reply memcached sends, garbage, and every fragmentation of each.
#include "proxy/protocol/reply_parser.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fragment_harness.h"

namespace mcring::protocol {
namespace {

using testing::allFragmentations;
using testing::feedReplies;

struct ReplyCase {
  std::string input;
  std::vector<std::string> expected;  // without the final "rest=... discard=..." line
};

// Checks the whole-input result, then that every fragmentation gives exactly the same.
void checkReplies(const ReplyCase& c) {
  CAPTURE(testing::escape(c.input));
  std::vector<std::string> expected = c.expected;
  const std::vector<std::string> whole = feedReplies(c.input, {c.input.size()});
  REQUIRE(whole.size() == expected.size() + 1);
  expected.push_back(whole.back());  // what is left over is compared across fragmentations
  CHECK(testing::joinLines(whole) == testing::joinLines(expected));
  for (const auto& cuts : allFragmentations(c.input.size())) {
    const std::vector<std::string> got = feedReplies(c.input, cuts);
    CAPTURE(cuts.front());
    CAPTURE(cuts.size());
    REQUIRE(testing::joinLines(got) == testing::joinLines(whole));
  }
}

// Lines captured from memcached 1.6.18 (see the request parser tests for the commands).
const std::vector<ReplyCase> kEveryKind = {
    {"VALUE a 5 2\r\nhi\r\n", {"Value key=a data=4 len=17"}},
    {"VALUE a 5 2 1\r\nhi\r\n", {"Value key=a data=4 len=19"}},
    {"VALUE k 4294967295 0 18446744073709551615\r\n\r\n", {"Value key=k data=2 len=45"}},
    {"VALUE k\t1 0 0\r\n\r\n", {"Value key=k\\x091 data=2 len=17"}},
    {"END\r\n", {"End len=5"}},
    {"STORED\r\n", {"Stored len=8"}},
    {"NOT_STORED\r\n", {"NotStored len=12"}},
    {"EXISTS\r\n", {"Exists len=8"}},
    {"NOT_FOUND\r\n", {"NotFound len=11"}},
    {"DELETED\r\n", {"Deleted len=9"}},
    {"TOUCHED\r\n", {"Touched len=9"}},
    {"OK\r\n", {"Ok len=4"}},
    {"VERSION 1.6.18\r\n", {"Version len=16"}},
    {"STAT pid 4802\r\n", {"Stat len=15"}},
    {"STAT libevent 2.1.12-stable\r\n", {"Stat len=29"}},
    {"ITEM k1 [3 b; 0 s]\r\n", {"Item len=20"}},  // stats cachedump
    {"15\r\n", {"Number len=4"}},
    {"0\r\n", {"Number len=3"}},
    {"18446744073709551615\r\n", {"Number len=22"}},
    {"ERROR\r\n", {"Error len=7"}},
    {"ERROR too many tokens\r\n", {"Error len=23"}},
    {"CLIENT_ERROR bad data chunk\r\n", {"ClientError len=29"}},
    {"CLIENT_ERROR\r\n", {"ClientError len=14"}},
    {"SERVER_ERROR object too large for cache\r\n", {"ServerError len=41"}},
    {"VA 2 f5 t-1 c1 ka s2 O123\r\nhi\r\n", {"MetaValue data=4 len=31"}},
    {"VA 2\r\nhi\r\n", {"MetaValue data=4 len=10"}},
    {"VA 0\r\n\r\n", {"MetaValue data=2 len=8"}},
    {"HD\r\n", {"MetaHit len=4"}},
    {"HD c123 O9 kfoo b\r\n", {"MetaHit len=19"}},
    {"EN\r\n", {"MetaMiss len=4"}},
    {"NF\r\n", {"MetaNotFound len=4"}},
    {"NS O1\r\n", {"MetaNotStored len=7"}},
    {"EX c5\r\n", {"MetaExists len=7"}},
    {"MN\r\n", {"MetaNoop len=4"}},
    {"ME a exp=-1 la=0 cas=1 fetch=yes cls=1 size=66\r\n", {"MetaDebug len=48"}},
};

TEST_CASE("reply parser: every reply kind, whole and at every fragmentation") {
  for (const ReplyCase& c : kEveryKind) {
    checkReplies(c);
  }
}

TEST_CASE("reply parser: a pipeline of every kind in one buffer") {
  std::string all;
  std::vector<std::string> expected;
  for (const ReplyCase& c : kEveryKind) {
    all += c.input;
    expected.insert(expected.end(), c.expected.begin(), c.expected.end());
  }
  checkReplies({all, expected});
  // And the same through frameReply() by hand, to check the consumed counts add up.
  const ReplyParser parser;
  Reply reply;
  std::string_view rest = all;
  size_t units = 0;
  while (!rest.empty()) {
    uint64_t consumed = 0;
    REQUIRE(frameReply(parser, rest, reply, &consumed) == ParseStatus::Ok);
    REQUIRE(consumed == reply.totalLength());
    rest.remove_prefix(consumed);
    ++units;
  }
  CHECK(units == kEveryKind.size());
}

TEST_CASE("reply parser: a multi-get reply, values containing reply-like bytes") {
  checkReplies({"VALUE a 0 5\r\nEND\r\n\r\nVALUE b 1 8 9\r\nVALUE \r\n\r\nEND\r\n",
                {"Value key=a data=7 len=20", "Value key=b data=10 len=25", "End len=5"}});
}

TEST_CASE("reply parser: parse() describes the line and leaves the data block to the caller") {
  const ReplyParser parser;
  Reply reply;
  CHECK(parser.parse("VALUE key 0 10\r\n", reply) == ParseStatus::Ok);
  CHECK(reply.kind == ReplyKind::Value);
  CHECK(reply.line_length == 16);
  CHECK(reply.data_length == 12);
  CHECK(reply.key.in("VALUE key 0 10\r\n") == "key");
  CHECK_FALSE(reply.isError());

  uint64_t consumed = 99;
  CHECK(frameReply(parser, "VALUE key 0 10\r\n0123", reply, &consumed) == ParseStatus::Incomplete);
  CHECK(consumed == 0);

  CHECK(parser.parse("SERVER_ERROR out of memory\r\n", reply) == ParseStatus::Ok);
  CHECK(reply.isError());
  CHECK(reply.data_length == 0);
  CHECK(parser.parse("CLIENT_ERROR x\r\n", reply) == ParseStatus::Ok);
  CHECK(reply.isError());
  CHECK(parser.parse("ERROR\r\n", reply) == ParseStatus::Ok);
  CHECK(reply.isError());
  CHECK(parser.parse("EN\r\n", reply) == ParseStatus::Ok);
  CHECK_FALSE(reply.isError());
}

TEST_CASE("reply parser: every proper prefix is Incomplete") {
  const ReplyParser parser;
  Reply reply;
  for (const ReplyCase& c : kEveryKind) {
    uint64_t consumed = 0;
    for (size_t n = 0; n < c.input.size(); ++n) {
      CAPTURE(testing::escape(c.input.substr(0, n)));
      REQUIRE(frameReply(parser, std::string_view(c.input).substr(0, n), reply, &consumed) ==
              ParseStatus::Incomplete);
    }
  }
}

TEST_CASE("reply parser: garbage is Invalid") {
  const std::vector<std::string> garbage = {
      "FOO\r\n",
      "\r\n",
      "END\n",     // memcached always sends \r\n
      "END \r\n",  // bare words take no arguments
      "END\rX\r\n",
      "end\r\n",
      "STORED extra\r\n",
      "OK c1\r\n",
      "VERSION\r\n",
      "VERSION \r\n",
      "STAT\r\n",
      "ITEM\r\n",
      "ME\r\n",
      "VALUE\r\n",
      "VALUE k\r\n",
      "VALUE k 0\r\n",
      "VALUE k 0 x\r\n",
      "VALUE k x 1\r\n",
      "VALUE k -1 1\r\n",
      "VALUE k 0 -1\r\n",
      "VALUE k 0 1 2 3\r\n",
      "VALUE  k 0 1\r\n",
      "VALUE k  0 1\r\n",
      "VALUE k 0 1 \r\n",
      "VALUE k 4294967296 1\r\n",
      "VALUE k 0 4294967296\r\n",
      "VALUE k 0 1 18446744073709551616\r\n",
      "VALUE k 0 1 x\r\n",
      "VALUE k 0 1\r\nxyz",  // data block not ending in \r\n
      "VALUE k 0 1\r\nx\n\n",
      "VA\r\n",
      "VA \r\n",
      "VA x\r\n",
      "VA -1\r\n",
      "VA 4294967296\r\n",
      "VA 2\r\nabcd",
      "123a\r\n",
      "-1\r\n",
      "+1\r\n",
      "1 2\r\n",
      "18446744073709551616\r\n",
      "ERRORS\r\n",
      "HDX\r\n",
      std::string("END\0\r\n", 6),
  };
  for (const std::string& g : garbage) {
    checkReplies({g, {"!invalid"}});
  }
}

TEST_CASE("reply parser: a line may be kMaxLine bytes long, not one more") {
  const size_t max = ReplyParser::kMaxLine;
  const std::string fits = "SERVER_ERROR " + std::string(max - 15, 'x') + "\r\n";
  REQUIRE(fits.size() == max);
  checkReplies({fits, {"ServerError len=" + std::to_string(max)}});
  const std::string too_long = "SERVER_ERROR " + std::string(max - 14, 'x') + "\r\n";
  checkReplies({too_long, {"!invalid"}});
  // Without its end: Invalid as soon as kMaxLine bytes have no "\n", Incomplete before.
  const ReplyParser parser;
  Reply reply;
  CHECK(parser.parse(std::string(max - 1, 'S'), reply) == ParseStatus::Incomplete);
  CHECK(parser.parse(std::string(max, 'S'), reply) == ParseStatus::Invalid);
}

TEST_CASE("reply parser: a valid unit followed by garbage stops at the garbage") {
  checkReplies(
      {"STORED\r\nHD\r\nGARBAGE\r\nEND\r\n", {"Stored len=8", "MetaHit len=4", "!invalid"}});
}

}  // namespace
}  // namespace mcring::protocol
