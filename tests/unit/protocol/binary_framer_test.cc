// The binary protocol: BinaryFramer at every fragmentation, memcached's answers to malformed
// packets, the meta commands each opcode becomes, and the binary responses meta replies become
// (exact bytes, as memcached 1.6.18 sends them).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "fragment_harness.h"
#include "proxy/protocol/binary_framer.h"
#include "proxy/protocol/binary_translation.h"

namespace mcring::protocol {
namespace {

std::string be32(uint32_t v) {
  std::string s;
  appendBigEndian32(s, v);
  return s;
}

std::string be64(uint64_t v) {
  std::string s;
  appendBigEndian64(s, v);
  return s;
}

// A request packet; body_length overrides the computed one when given.
std::string packet(uint8_t opcode, std::string_view key = {}, std::string_view value = {},
                   std::string_view extras = {}, uint32_t opaque = 0x1234, uint64_t cas = 0,
                   int64_t body_length = -1, uint8_t magic = 0x80) {
  std::string p;
  p.push_back(static_cast<char>(magic));
  p.push_back(static_cast<char>(opcode));
  p.push_back(static_cast<char>(key.size() >> 8));
  p.push_back(static_cast<char>(key.size()));
  p.push_back(static_cast<char>(extras.size()));
  p.push_back(0);
  p.append(2, '\0');
  const uint64_t body = body_length >= 0 ? static_cast<uint64_t>(body_length)
                                         : extras.size() + key.size() + value.size();
  p += be32(static_cast<uint32_t>(body));
  p += be32(opaque);
  p += be64(cas);
  p.append(extras);
  p.append(key);
  p.append(value);
  return p;
}

std::string response(uint8_t opcode, uint16_t status, uint32_t opaque, uint64_t cas,
                     std::string_view extras, std::string_view key, std::string_view value) {
  std::string p;
  appendBinaryResponse(p, opcode, static_cast<BinaryStatus>(status), opaque, cas, extras, key,
                       value);
  return p;
}

const RequestParser& parser() {
  static const RequestParser p{ParserLimits{}};
  return p;
}

// What the session does with each frame, as one line per frame: "req op=01 key=k value=3
// meta=ms k 3 F7 T0 c MS", "rej op=01 status=03 close=0 drop=35", "discard 10".
std::string describe(const BinaryFrame& f, const BinaryRequest& req) {
  std::string s;
  char op[8];
  std::snprintf(op, sizeof op, "%02x", req.header.opcode);
  switch (f.kind) {
    case BinaryFrameKind::Request: {
      BinaryTranslation t;
      translateBinaryRequest(req, t);
      s = "req op=" + std::string(op) + " key=" + testing::escape(req.key) +
          " value=" + std::to_string(req.value_length) + " len=" + std::to_string(f.length);
      s += t.local ? " local=" + testing::escape(t.reply) : " meta=" + testing::escape(t.line);
      return s;
    }
    case BinaryFrameKind::Rejected:
      return "rej op=" + std::string(op) + " status=" +
             std::to_string(static_cast<unsigned>(req.error)) +
             " close=" + std::to_string(req.close) + " silent=" + std::to_string(req.silent) +
             " drop=" + std::to_string(f.length);
    case BinaryFrameKind::Discard:
      return "discard " + std::to_string(f.length);
    case BinaryFrameKind::NeedMore:
      return "need " + std::to_string(f.length);
  }
  return s;
}

// Feeds `input` in pieces ending at `cuts`, dropping what each frame says, as the session does;
// stops at a frame that closes the connection.
std::vector<std::string> feed(std::string_view input, const std::vector<size_t>& cuts) {
  BinaryFramer framer(parser());
  BinaryRequest req;
  std::string buffered;
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t cut : cuts) {
    buffered.append(input.substr(at, cut - at));
    at = cut;
    for (int guard = 0; guard < 10000; ++guard) {
      StringSource src(buffered);
      const BinaryFrame f = framer.next(src, req);
      if (f.kind == BinaryFrameKind::NeedMore) {
        break;
      }
      if (f.kind == BinaryFrameKind::Discard && !out.empty() &&
          out.back().substr(0, 8) == "discard ") {
        // A discard arrives in as many pieces as the input: count them as one.
        out.back() = "discard " + std::to_string(std::stoull(out.back().substr(8)) + f.length);
      } else {
        out.push_back(describe(f, req));
      }
      if (f.kind == BinaryFrameKind::Rejected && req.close) {
        out.push_back("closed");
        return out;
      }
      buffered.erase(0, f.length);
    }
  }
  out.push_back("rest=" + std::to_string(buffered.size()) +
                " discard=" + std::to_string(framer.discardPending()));
  return out;
}

std::vector<std::string> feedWhole(std::string_view input) { return feed(input, {input.size()}); }

void checkEveryFragmentation(std::string_view input) {
  const std::string whole = testing::joinLines(feedWhole(input));
  for (const auto& cuts : testing::allFragmentations(input.size())) {
    REQUIRE(testing::joinLines(feed(input, cuts)) == whole);
  }
}

std::string storeExtras(uint32_t flags, uint32_t exptime) { return be32(flags) + be32(exptime); }

TEST_CASE("binary framer: every served opcode frames and becomes its meta command") {
  struct Case {
    std::string packet;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {packet(0x00, "k"), "req op=00 key=k value=0 len=25 meta=mg k v f c\\x0d\\x0a"},
      {packet(0x09, "k"), "req op=09 key=k value=0 len=25 meta=mg k v f c\\x0d\\x0a"},
      {packet(0x0c, "k"), "req op=0c key=k value=0 len=25 meta=mg k v f c\\x0d\\x0a"},
      {packet(0x0d, "k"), "req op=0d key=k value=0 len=25 meta=mg k v f c\\x0d\\x0a"},
      {packet(0x01, "k", "abc", storeExtras(7, 60)),
       "req op=01 key=k value=3 len=36 meta=ms k 3 F7 T60 c MS\\x0d\\x0a"},
      {packet(0x02, "k", "abc", storeExtras(7, 0)),
       "req op=02 key=k value=3 len=36 meta=ms k 3 F7 T0 c ME\\x0d\\x0a"},
      {packet(0x13, "k", "abc", storeExtras(0, 0)),
       "req op=13 key=k value=3 len=36 meta=ms k 3 F0 T0 c MR\\x0d\\x0a"},
      // A cas makes every store a compare-and-swap (memcached's NREAD_CAS).
      {packet(0x02, "k", "abc", storeExtras(0, 0), 1, 99),
       "req op=02 key=k value=3 len=36 meta=ms k 3 F0 T0 c MS C99\\x0d\\x0a"},
      {packet(0x0e, "k", "xy"), "req op=0e key=k value=2 len=27 meta=ms k 2 c MA\\x0d\\x0a"},
      {packet(0x1a, "k", "xy", {}, 1, 5), "req op=1a key=k value=2 len=27 meta=ms k 2 c MP C5\\x0d\\x0a"},
      {packet(0x04, "k"), "req op=04 key=k value=0 len=25 meta=md k\\x0d\\x0a"},
      {packet(0x14, "k", {}, {}, 1, 8), "req op=14 key=k value=0 len=25 meta=md k C8\\x0d\\x0a"},
      {packet(0x05, "n", {}, be64(3) + be64(10) + be32(0)),
       "req op=05 key=n value=0 len=45 meta=ma n v c D3 MI N0 J10\\x0d\\x0a"},
      {packet(0x16, "n", {}, be64(3) + be64(10) + be32(0xffffffff)),
       "req op=16 key=n value=0 len=45 meta=ma n v c D3 MD\\x0d\\x0a"},
      {packet(0x1c, "k", {}, be32(100)), "req op=1c key=k value=0 len=29 meta=mg k f c T100\\x0d\\x0a"},
      {packet(0x1d, "k", {}, be32(100)),
       "req op=1d key=k value=0 len=29 meta=mg k v f c T100\\x0d\\x0a"},
      {packet(0x24, "k", {}, be32(0)), "req op=24 key=k value=0 len=29 meta=mg k v f c T0\\x0d\\x0a"},
      {packet(0x08), "req op=08 key= value=0 len=24 meta=flush_all\\x0d\\x0a"},
      {packet(0x18, {}, {}, be32(30)), "req op=18 key= value=0 len=28 meta=flush_all 30\\x0d\\x0a"},
      {packet(0x0b), "req op=0b key= value=0 len=24 meta=version\\x0d\\x0a"},
      {packet(0x10), "req op=10 key= value=0 len=24 meta=stats\\x0d\\x0a"},
      {packet(0x10, "settings"), "req op=10 key=settings value=0 len=32 meta=stats settings\\x0d\\x0a"},
      // Keys the text protocol cannot carry (a space) go base64.
      {packet(0x00, "a b"), "req op=00 key=a b value=0 len=27 meta=mg YSBi v f c b\\x0d\\x0a"},
      {packet(0x0a, {}, {}, {}, 7),
       "req op=0a key= value=0 len=24 local=\\x81\\x0a\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
       "\\x00\\x00\\x00\\x00\\x00\\x07\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"},
      {packet(0x17), "req op=17 key= value=0 len=24 local="},
  };
  for (const Case& c : cases) {
    CAPTURE(c.expect);
    const auto lines = feedWhole(c.packet);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == c.expect);
    CHECK(lines[1] == "rest=0 discard=0");
  }
}

// The meta line a request packet becomes.
std::string metaLine(const std::string& p) {
  BinaryFramer framer(parser());
  BinaryRequest req;
  StringSource src(p);
  REQUIRE(framer.next(src, req).kind == BinaryFrameKind::Request);
  BinaryTranslation t;
  translateBinaryRequest(req, t);
  return t.line;
}

TEST_CASE("binary expiration times: unsigned, so 2^31 and up are kept as the latest meta T") {
  // memcached reads the binary field unsigned (2^31 and up: Unix times after 2038, the key is
  // kept); its meta T is a signed 32-bit number, T2147483648 wraps negative and expires at once.
  CHECK(metaLine(packet(0x01, "k", "v", storeExtras(0, 0x7fffffff))) ==
        "ms k 1 F0 T2147483647 c MS\r\n");
  CHECK(metaLine(packet(0x01, "k", "v", storeExtras(0, 0x80000000))) ==
        "ms k 1 F0 T2147483647 c MS\r\n");
  CHECK(metaLine(packet(0x02, "k", "v", storeExtras(0, 0xffffffff))) ==
        "ms k 1 F0 T2147483647 c ME\r\n");
  CHECK(metaLine(packet(0x1c, "k", {}, be32(0xffffffff))) == "mg k f c T2147483647\r\n");
  CHECK(metaLine(packet(0x1d, "k", {}, be32(0x80000001))) == "mg k v f c T2147483647\r\n");
  CHECK(metaLine(packet(0x1d, "k", {}, be32(2592001))) == "mg k v f c T2592001\r\n");
  CHECK(metaLine(packet(0x05, "n", {}, be64(1) + be64(5) + be32(0xfffffffe))) ==
        "ma n v c D1 MI N2147483647 J5\r\n");
  CHECK(metaLine(packet(0x08, {}, {}, be32(0x80000000))) == "flush_all 2147483647\r\n");
}

TEST_CASE("binary keys: as they are, base64, or a stand-in past meta's 250-byte token") {
  // Control bytes, 0x7f, 0xff and a "\r" inside are text-key bytes (memcached keeps them).
  CHECK(metaLine(packet(0x00, "a\x01\x7f\xff\t\rb")) == "mg a\x01\x7f\xff\t\rb v f c\r\n");
  CHECK(metaLine(packet(0x00, std::string(250, '\x01'))) ==
        "mg " + std::string(250, '\x01') + " v f c\r\n");
  // A space, a newline, a NUL: base64 while it fits (186 bytes -> 248 characters)...
  CHECK(metaLine(packet(0x04, std::string("a\nb\0", 4))) == "md YQpiAA== b\r\n");
  std::string spaced;
  for (int i = 0; i < 100; ++i) {
    spaced += "a b";
  }
  const std::string line186 = metaLine(packet(0x00, spaced.substr(0, 186)));
  CHECK(line186.size() == 3 + 248 + 10);
  // ... then base64 of "\0mcring:" and the key's SHA-256.
  BinaryFramer framer(parser());
  BinaryRequest req;
  const std::string p250 = packet(0x00, spaced.substr(0, 250));
  StringSource src(p250);
  REQUIRE(framer.next(src, req).kind == BinaryFrameKind::Request);
  BinaryTranslation t;
  translateBinaryRequest(req, t);
  CHECK(t.key_form == BinaryKeyForm::StandIn);
  CHECK(t.line == "mg AG1jcmluZzraQitl6cwnR5shrk9EZCXkjPx/ypF7TjK/YbVSVYMcgA== v f c b\r\n");
  // The line parses, decoded to the stand-in's 40 bytes (the session routes by the key itself).
  Request meta;
  REQUIRE(parser().parse(t.line, meta) == ParseStatus::Ok);
  CHECK(meta.decoded_key.size() == 40);
  CHECK(metaLine(packet(0x00, spaced.substr(0, 187))).size() == 3 + 56 + 10);
}

TEST_CASE("binary framer: memcached's answers to malformed and refused packets") {
  // Bad magic (after the first packet, which chose the protocol): closed, unanswered.
  CHECK(feedWhole(packet(0x0a, {}, {}, {}, 0, 0, -1, 0x81))[0] ==
        "rej op=0a status=4 close=1 silent=1 drop=0");
  // Key and extras longer than the body: "Unknown command", closed.
  CHECK(feedWhole(packet(0x00, "k1", {}, {}, 0, 0, 1))[0] ==
        "rej op=00 status=129 close=1 silent=0 drop=0");
  // A key over 250 bytes, a get with extras, a set without extras, a noop with a body:
  // "Invalid arguments", closed.
  for (const std::string& p :
       {packet(0x00, std::string(251, 'a')), packet(0x00, "k", {}, "abcd"), packet(0x01, "k", "v"),
        packet(0x0a, {}, "xx"), packet(0x05, "n", {}, be64(1) + be64(1)),
        packet(0x08, {}, {}, be64(0)), packet(0x1c, "k"), packet(0x00, "")}) {
    CAPTURE(testing::escape(p));
    const auto lines = feedWhole(p);
    CHECK(lines[0].find("status=4 close=1 silent=0 drop=0") != std::string::npos);
    CHECK(lines[1] == "closed");
  }
  CHECK(feedWhole(packet(0x00, std::string(250, 'a')))[0].substr(0, 10) == "req op=00 ");
  // Opcodes memcached does not serve: "Unknown command", the body skipped, the next served.
  const std::string unknown = packet(0x40, "kk", "vv") + packet(0x21, "PLAIN", std::string("\0u\0p", 4)) +
                              packet(0x1b, {}, {}, be32(1)) + packet(0x0a);
  const std::vector<std::string> expect = {
      "rej op=40 status=129 close=0 silent=0 drop=24", "discard 4",
      "rej op=21 status=129 close=0 silent=0 drop=24", "discard 9",
      "rej op=1b status=129 close=0 silent=0 drop=24", "discard 4",
      feedWhole(packet(0x0a))[0],
      "rest=0 discard=0"};
  CHECK(testing::joinLines(feedWhole(unknown)) == testing::joinLines(expect));
  // A value over item_size_max: "Too large.", the value discarded as it arrives.
  const std::string big(1024 * 1024 + 1, 'x');
  const auto lines = feedWhole(packet(0x01, "k", big, storeExtras(0, 0)) + packet(0x0a));
  CHECK(lines[0] == "rej op=01 status=3 close=0 silent=0 drop=33");
  CHECK(lines[1] == "discard 1048577");
  CHECK(lines[2].substr(0, 10) == "req op=0a ");
  // A value length past 2^31 (memcached's int goes negative): "Too large.", nothing swallowed.
  const auto huge = feedWhole(packet(0x01, "k", {}, storeExtras(0, 0), 0, 0, 0xfffffff0) +
                              packet(0x0a));
  CHECK(huge[0] == "rej op=01 status=3 close=0 silent=0 drop=33");
  CHECK(huge[1].substr(0, 10) == "req op=0a ");
  // touch and stat read their key and extras only: memcached reads what follows as a header.
  const auto touch = feedWhole(packet(0x1c, "k", "zzzzzzzzzzzzzzzzzzzzzzzz", be32(0)));
  CHECK(touch[0] == "req op=1c key=k value=0 len=29 meta=mg k f c T0\\x0d\\x0a");
}

TEST_CASE("binary framer: a stream frames the same at every fragmentation") {
  std::string stream;
  stream += packet(0x01, "alpha", "hello world", storeExtras(3, 0));
  stream += packet(0x0d, "alpha", {}, {}, 2);
  stream += packet(0x0d, "beta", {}, {}, 3);
  stream += packet(0x40, "zz", "body");
  stream += packet(0x0a, {}, {}, {}, 4);
  stream += packet(0x05, "n", {}, be64(1) + be64(0) + be32(0));
  stream += packet(0x0e, "alpha", "\r\ndelete victim\r\n");
  stream += packet(0x1d, "alpha", {}, be32(9));
  stream += packet(0x00, std::string("\x01\x02 ", 3));
  stream += packet(0x11, "big", std::string(1024 * 1024 + 3, 'v'), storeExtras(0, 0));
  stream += packet(0x10, "items");
  stream += packet(0x07);
  stream += packet(0x00, "k", {}, "ext");  // invalid: closes
  stream += packet(0x0a);
  const auto whole = feedWhole(stream);
  CHECK(whole.size() == 16);
  CHECK(whole.back() == "closed");
  // Every fragmentation of the small part, and chunked fragmentations of the whole.
  const size_t small = stream.find(std::string(1, '\x11'), 0) - 1;
  checkEveryFragmentation(std::string_view(stream).substr(0, small));
  for (size_t chunk : {1000, 4096, 65536}) {
    CHECK(testing::joinLines(feed(stream, testing::chunksOf(stream.size(), chunk))) ==
          testing::joinLines(whole));
  }
}

TEST_CASE("binary framer: a value holding text commands is data (the injection)") {
  const std::string inj = "payload\r\ndelete victim\r\nset injected 0 0 3\r\nyes\r\n";
  const auto lines = feedWhole(packet(0x01, "k", inj, storeExtras(0, 0)));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "req op=01 key=k value=" + std::to_string(inj.size()) + " len=" +
                        std::to_string(24 + 8 + 1 + inj.size()) + " meta=ms k " +
                        std::to_string(inj.size()) + " F0 T0 c MS\\x0d\\x0a");
}

BinaryContext ctx(uint8_t op, uint32_t opaque = 0x1234, std::string key = "k") {
  BinaryContext c;
  c.active = true;
  c.opcode = op;
  c.opaque = opaque;
  c.key = std::move(key);
  return c;
}

// The whole response the session writes for a reply (head, then the value when it follows).
std::string respond(const BinaryContext& c, std::string_view reply) {
  const size_t nl = reply.find('\n');
  const size_t end = nl == std::string_view::npos ? reply.size() : nl + 1;
  BinaryResponse r;
  translateBackendReply(c, reply.substr(0, end), reply.substr(end), r);
  std::string out = r.head;
  if (r.value_follows) {
    out.append(reply.substr(end, r.value_length));
  }
  return out;
}

TEST_CASE("binary responses from meta replies: memcached's exact packets") {
  const std::string f7 = be32(7);
  // get, getk: hit with flags and cas; miss "Not found", getk's miss carries the key.
  CHECK(respond(ctx(0x00), "VA 3 f7 c12\r\nval\r\n") == response(0x00, 0, 0x1234, 12, f7, {}, "val"));
  CHECK(respond(ctx(0x0c), "VA 3 f7 c12\r\nval\r\n") == response(0x0c, 0, 0x1234, 12, f7, "k", "val"));
  CHECK(respond(ctx(0x00), "EN\r\n") == response(0x00, 1, 0x1234, 0, {}, {}, "Not found"));
  CHECK(respond(ctx(0x0c), "EN\r\n") == response(0x0c, 1, 0x1234, 0, {}, "k", {}));
  // Quiet gets hide a miss, not a hit.
  CHECK(respond(ctx(0x09), "EN\r\n").empty());
  CHECK(respond(ctx(0x0d), "EN\r\n").empty());
  CHECK(respond(ctx(0x0d), "VA 1 f0 c3\r\nv\r\n") == response(0x0d, 0, 0x1234, 3, be32(0), "k", "v"));
  // touch: flags and cas, no value.
  CHECK(respond(ctx(0x1c), "HD f7 c12\r\n") == response(0x1c, 0, 0x1234, 12, f7, {}, {}));
  CHECK(respond(ctx(0x1c), "EN\r\n") == response(0x1c, 1, 0x1234, 0, {}, {}, "Not found"));
  // Stores: cas of the new item; NS by opcode; EX and NF.
  CHECK(respond(ctx(0x01), "HD c13\r\n") == response(0x01, 0, 0x1234, 13, {}, {}, {}));
  CHECK(respond(ctx(0x11), "HD c13\r\n").empty());
  CHECK(respond(ctx(0x02), "NS\r\n") == response(0x02, 2, 0x1234, 0, {}, {}, "Data exists for key."));
  CHECK(respond(ctx(0x13), "NS\r\n") == response(0x13, 1, 0x1234, 0, {}, {}, "Not found"));
  CHECK(respond(ctx(0x0e), "NS\r\n") == response(0x0e, 5, 0x1234, 0, {}, {}, "Not stored."));
  CHECK(respond(ctx(0x01), "EX\r\n") == response(0x01, 2, 0x1234, 0, {}, {}, "Data exists for key."));
  CHECK(respond(ctx(0x01), "NF\r\n") == response(0x01, 1, 0x1234, 0, {}, {}, "Not found"));
  CHECK(respond(ctx(0x01), "SERVER_ERROR object too large for cache\r\n") ==
        response(0x01, 3, 0x1234, 0, {}, {}, "Too large."));
  CHECK(respond(ctx(0x00), "SERVER_ERROR out of memory writing get response\r\n") ==
        response(0x00, 0x82, 0x1234, 0, {}, {}, "Out of memory"));
  CHECK(respond(ctx(0x00), "SERVER_ERROR backend timeout\r\n") ==
        response(0x00, 0x85, 0x1234, 0, {}, {}, "backend timeout"));
  // delete: no cas in its response.
  CHECK(respond(ctx(0x04), "HD\r\n") == response(0x04, 0, 0x1234, 0, {}, {}, {}));
  CHECK(respond(ctx(0x14), "HD\r\n").empty());
  CHECK(respond(ctx(0x14), "NF\r\n") == response(0x14, 1, 0x1234, 0, {}, {}, "Not found"));
  // incr/decr: the new value as 8 bytes, with the item's cas.
  CHECK(respond(ctx(0x05), "VA 2 c6\r\n15\r\n") == response(0x05, 0, 0x1234, 6, {}, {}, be64(15)));
  CHECK(respond(ctx(0x15), "VA 2 c6\r\n15\r\n").empty());
  CHECK(respond(ctx(0x06), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n") ==
        response(0x06, 6, 0x1234, 0, {}, {}, "Non-numeric server-side value for incr or decr"));
  // flush: OK; refused by the pool as memcached -F refuses it.
  CHECK(respond(ctx(0x08), "OK\r\n") == response(0x08, 0, 0x1234, 0, {}, {}, {}));
  CHECK(respond(ctx(0x18), "OK\r\n").empty());
  CHECK(respond(ctx(0x18), "CLIENT_ERROR flush_all not allowed\r\n") ==
        response(0x18, 0x20, 0x1234, 0, {}, {}, "Auth failure."));
  CHECK(respond(ctx(0x0b), "VERSION 1.6.18\r\n") == response(0x0b, 0, 0x1234, 0, {}, {}, "1.6.18"));
}

TEST_CASE("binary stat: one packet per statistic, then an empty one") {
  std::string out;
  translateStatsReply(ctx(0x10, 5), "STAT pid 42\r\nSTAT version 1.6.18\r\nEND\r\n", out);
  CHECK(out == response(0x10, 0, 5, 0, {}, "pid", "42") +
                   response(0x10, 0, 5, 0, {}, "version", "1.6.18") +
                   response(0x10, 0, 5, 0, {}, {}, {}));
  out.clear();
  translateStatsReply(ctx(0x10, 5), "ERROR\r\n", out);
  CHECK(out == response(0x10, 1, 5, 0, {}, {}, "Not found"));
}

}  // namespace
}  // namespace mcring::protocol
