// The scalar parsers behind the pool keys: numbers, sizes, booleans, addresses, server lines.
#include "config/parse.h"

#include <doctest/doctest.h>

namespace mcring::config {
namespace {

TEST_CASE("parseBool takes exactly twemproxy's true and false") {
  std::string error;
  CHECK(parseBool("true", &error) == true);
  CHECK(parseBool("false", &error) == false);
  CHECK_FALSE(parseBool("yes", &error));
  CHECK(error == "expected true or false, got 'yes'");
  CHECK_FALSE(parseBool("True", &error));
}

TEST_CASE("parseUint takes decimal digits within range") {
  std::string error;
  CHECK(parseUint("0", 0, 10, &error) == 0u);
  CHECK(parseUint("10", 0, 10, &error) == 10u);
  CHECK_FALSE(parseUint("11", 0, 10, &error));
  CHECK(error == "11 is out of range 0..10");
  CHECK_FALSE(parseUint("-1", 0, 10, &error));
  CHECK(error == "'-1' is not a non-negative integer");
  CHECK_FALSE(parseUint("0x10", 0, 100, &error));
  CHECK_FALSE(parseUint("", 0, 100, &error));
  CHECK_FALSE(parseUint("1 ", 0, 100, &error));
  CHECK_FALSE(parseUint("99999999999999999999999", 0, 100, &error));
  CHECK(error == "99999999999999999999999 is out of range 0..100");
}

TEST_CASE("parseSize takes bytes and 1024-based suffixes") {
  std::string error;
  const uint64_t max = uint64_t{1} << 40;
  CHECK(parseSize("1048576", 0, max, &error) == 1048576u);
  CHECK(parseSize("512k", 0, max, &error) == 512u * 1024);
  CHECK(parseSize("512K", 0, max, &error) == 512u * 1024);
  CHECK(parseSize("1m", 0, max, &error) == 1048576u);
  CHECK(parseSize("1MB", 0, max, &error) == 1048576u);
  CHECK(parseSize("2g", 0, max, &error) == (uint64_t{2} << 30));
  CHECK(parseSize("100b", 0, max, &error) == 100u);
  CHECK_FALSE(parseSize("1.5m", 0, max, &error));
  CHECK(error == "'1.5m' is not a size (bytes, or a number with k, m or g)");
  CHECK_FALSE(parseSize("m", 0, max, &error));
  CHECK_FALSE(parseSize("1t", 0, max, &error));
  CHECK_FALSE(parseSize("1mm", 0, max, &error));
  CHECK_FALSE(parseSize("2g", 1024, uint64_t{1} << 30, &error));
  CHECK(error == "2g is out of range 1024..1073741824 bytes");
  // Overflow of count * unit must not wrap into range.
  CHECK_FALSE(parseSize("18014398509481984g", 0, UINT64_MAX, &error));
}

TEST_CASE("parseListenAddress: host:port") {
  std::string error;
  auto a = parseListenAddress("127.0.0.1:22121", &error);
  REQUIRE(a);
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 22121);
  CHECK_FALSE(a->isUnix());

  auto named = parseListenAddress("localhost:1", &error);
  REQUIRE(named);
  CHECK(named->host == "localhost");

  auto v6 = parseListenAddress("[::1]:22121", &error);
  REQUIRE(v6);
  CHECK(v6->host == "::1");
  CHECK(v6->toString() == "[::1]:22121");

  // twemproxy splits at the last ':', so an unbracketed IPv6 literal works too.
  auto bare_v6 = parseListenAddress("::1:22121", &error);
  REQUIRE(bare_v6);
  CHECK(bare_v6->host == "::1");
}

TEST_CASE("parseListenAddress: bad host:port") {
  std::string error;
  CHECK_FALSE(parseListenAddress("127.0.0.1", &error));
  CHECK(error == "expected 'host:port' or an absolute unix socket path, got '127.0.0.1'");
  CHECK_FALSE(parseListenAddress("127.0.0.1:65536", &error));
  CHECK(error == "port 65536 is out of range 1..65535");
  CHECK_FALSE(parseListenAddress("127.0.0.1:0", &error));
  CHECK(error == "port 0 is out of range 1..65535");
  CHECK_FALSE(parseListenAddress("127.0.0.1:http", &error));
  CHECK(error == "port 'http' is not a non-negative integer");
  CHECK_FALSE(parseListenAddress(":22121", &error));
  CHECK(error == "missing host before ':'");
  CHECK_FALSE(parseListenAddress("my host:22121", &error));
  CHECK(error == "invalid host 'my host'");
  CHECK_FALSE(parseListenAddress("[::1]22121", &error));
  CHECK(error == "expected '[address]:port', got '[::1]22121'");
  CHECK_FALSE(parseListenAddress("", &error));
  CHECK(error == "empty address");
}

TEST_CASE("parseListenAddress: unix socket with optional mode") {
  std::string error;
  auto plain = parseListenAddress("/tmp/gamma", &error);
  REQUIRE(plain);
  CHECK(plain->unix_path == "/tmp/gamma");
  CHECK(plain->unix_mode == 0u);
  CHECK(plain->toString() == "/tmp/gamma");

  auto moded = parseListenAddress("/tmp/gamma 0666", &error);
  REQUIRE(moded);
  CHECK(moded->unix_path == "/tmp/gamma");
  CHECK(moded->unix_mode == 0666u);
  CHECK(moded->host.empty());

  CHECK_FALSE(parseListenAddress("/tmp/gamma 0999", &error));
  CHECK(error == "invalid unix socket mode '0999' (octal, at most 0777)");
  CHECK_FALSE(parseListenAddress("/tmp/gamma 1777", &error));
  CHECK_FALSE(parseListenAddress("/tmp/gamma rw", &error));
  CHECK_FALSE(parseListenAddress("/" + std::string(kMaxUnixPathLength, 'x'), &error));
  CHECK(error == "unix socket path is 108 bytes, longer than the 107 a socket address holds");
  CHECK(parseListenAddress("/" + std::string(kMaxUnixPathLength - 1, 'x'), &error));
}

TEST_CASE("parseServer: host:port:weight [name]") {
  std::string error;
  auto s = parseServer("127.0.0.1:11211:3 cache-a", &error);
  REQUIRE(s);
  CHECK(s->address.host == "127.0.0.1");
  CHECK(s->address.port == 11211);
  CHECK(s->spec.host == "127.0.0.1");
  CHECK(s->spec.port == 11211);
  CHECK(s->spec.weight == 3u);
  CHECK(s->spec.name == "cache-a");
  CHECK(s->identity() == "127.0.0.1:11211");
  CHECK(s->displayName() == "cache-a");

  auto unnamed = parseServer("mc1.example.com:11211:1", &error);
  REQUIRE(unnamed);
  CHECK(unnamed->spec.name.empty());
  CHECK(unnamed->displayName() == "mc1.example.com:11211");

  auto v6 = parseServer("[::1]:11211:2", &error);
  REQUIRE(v6);
  CHECK(v6->address.host == "::1");
  CHECK(v6->spec.weight == 2u);
  CHECK(v6->identity() == "[::1]:11211");
}

TEST_CASE("parseServer: unix socket path:weight [name]") {
  std::string error;
  auto s = parseServer("/var/run/mc.sock:2 local", &error);
  REQUIRE(s);
  CHECK(s->address.isUnix());
  CHECK(s->address.unix_path == "/var/run/mc.sock");
  CHECK(s->spec.host == "/var/run/mc.sock");
  CHECK(s->spec.port == 0);
  CHECK(s->spec.weight == 2u);
  CHECK(s->spec.name == "local");
  CHECK(s->identity() == "/var/run/mc.sock");
}

TEST_CASE("parseServer: errors") {
  std::string error;
  CHECK_FALSE(parseServer("127.0.0.1:11211", &error));
  CHECK(error ==
        "missing weight: write '127.0.0.1:11211:1' ('host:port:weight [name]' or "
        "'/path/to/socket:weight [name]')");
  CHECK_FALSE(parseServer("/var/run/mc.sock", &error));
  CHECK(error ==
        "missing weight: write '/var/run/mc.sock:1' ('host:port:weight [name]' or "
        "'/path/to/socket:weight [name]')");
  CHECK_FALSE(parseServer("127.0.0.1:11211:0", &error));
  CHECK(error == "weight 0 is out of range 1..2147483647");
  CHECK_FALSE(parseServer("127.0.0.1:11211:2147483648", &error));
  CHECK(error == "weight 2147483648 is out of range 1..2147483647");
  CHECK(parseServer("127.0.0.1:11211:2147483647", &error));
  CHECK_FALSE(parseServer("127.0.0.1:99999:1", &error));
  CHECK(error == "port 99999 is out of range 1..65535");
  CHECK_FALSE(parseServer("127.0.0.1:11211:x", &error));
  CHECK(error == "weight 'x' is not a non-negative integer");
  CHECK_FALSE(parseServer("127.0.0.1:11211:1 a b", &error));
  CHECK(error == "server name 'a b' must not contain spaces");
  CHECK_FALSE(parseServer("localhost", &error));
  CHECK(error ==
        "expected 'host:port:weight [name]' or '/path/to/socket:weight [name]', got "
        "'localhost'");
  CHECK_FALSE(parseServer(":1", &error));
  CHECK_FALSE(parseServer("[::1]", &error));
  CHECK_FALSE(parseServer("", &error));
  CHECK_FALSE(parseServer(" name", &error));
}

}  // namespace
}  // namespace mcring::config
