// AdminAccess: the loopback rule, Host matching (DNS rebinding never names the socket's own
// address), token files.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "proxy/admin/admin_access.h"

using mcring::core::AdminAccess;
using mcring::core::AdminAccessOptions;

namespace {

mcring::net::HttpRequest connectedTo(const std::string& address, uint16_t port) {
  mcring::net::HttpRequest r;
  r.local_address = address;
  r.local_port = port;
  return r;
}

std::string writeFile(const std::string& name, const std::string& content) {
  static std::string dir = [] {
    char d[] = "/tmp/mcring-unit-admin.XXXXXX";
    REQUIRE(mkdtemp(d) != nullptr);
    return std::string(d);
  }();
  std::string path = dir + "/" + name;
  std::ofstream(path) << content;
  chmod(path.c_str(), 0600);
  return path;
}

}  // namespace

TEST_CASE("loopback addresses") {
  CHECK(AdminAccess::isLoopbackAddress("127.0.0.1"));
  CHECK(AdminAccess::isLoopbackAddress("127.1.2.3"));
  CHECK(AdminAccess::isLoopbackAddress("::1"));
  CHECK(AdminAccess::isLoopbackAddress("[::1]"));
  CHECK(AdminAccess::isLoopbackAddress("::ffff:127.0.0.1"));
  CHECK(AdminAccess::isLoopbackAddress("LOCALHOST"));
  CHECK_FALSE(AdminAccess::isLoopbackAddress("0.0.0.0"));
  CHECK_FALSE(AdminAccess::isLoopbackAddress("::"));
  CHECK_FALSE(AdminAccess::isLoopbackAddress("10.0.0.1"));
  CHECK_FALSE(AdminAccess::isLoopbackAddress("admin.example"));
}

TEST_CASE("a non-loopback address needs a token; a loopback one does not") {
  AdminAccess a;
  std::string error;
  CHECK_FALSE(a.init({"0.0.0.0", 22222, "", {}}, &error));
  CHECK(error.find("--admin-token-file") != std::string::npos);
  AdminAccess b;
  CHECK(b.init({"127.0.0.1", 22222, "", {}}, &error));
  CHECK_FALSE(b.tokenRequired());
  AdminAccess c;
  CHECK(c.init({"0.0.0.0", 22222, writeFile("ok", "0123456789abcdef0123\n"), {}}, &error));
  CHECK(c.tokenRequired());
}

TEST_CASE("token files") {
  std::string token;
  std::string error;
  CHECK(AdminAccess::readToken(writeFile("t1", "  0123456789abcdef\n\n"), &token, &error));
  CHECK(token == "0123456789abcdef");
  CHECK_FALSE(AdminAccess::readToken(writeFile("t2", "short\n"), &token, &error));
  CHECK(error.find("shorter than 16") != std::string::npos);
  CHECK_FALSE(AdminAccess::readToken(writeFile("t3", "0123456789 abcdef\n"), &token, &error));
  CHECK_FALSE(AdminAccess::readToken(writeFile("t4", std::string(5000, 'a')), &token, &error));
  CHECK_FALSE(AdminAccess::readToken("/nonexistent/token", &token, &error));
  CHECK(error.find("/nonexistent/token") != std::string::npos);
  CHECK_FALSE(AdminAccess::readToken("/tmp", &token, &error));
}

TEST_CASE("Host names the endpoint: its local address, loopback names, -a, allowed names") {
  AdminAccess a;
  std::string error;
  REQUIRE(a.init({"0.0.0.0", 22222, writeFile("h", "0123456789abcdef\n"),
                  {"mcring.svc", "proxy.example:8080"}},
                 &error));
  auto pod = connectedTo("10.1.2.3", 22222);
  CHECK(a.hostAllowed("10.1.2.3:22222", pod));
  CHECK_FALSE(a.hostAllowed("10.1.2.4:22222", pod));  // another address: not where it connected
  CHECK_FALSE(a.hostAllowed("10.1.2.3:22223", pod));
  CHECK_FALSE(a.hostAllowed("10.1.2.3", pod));        // port 80 implied
  CHECK_FALSE(a.hostAllowed("localhost:22222", pod));  // not loopback on this connection
  CHECK_FALSE(a.hostAllowed("evil.example:22222", pod));
  CHECK(a.hostAllowed("MCRING.svc:22222", pod));
  CHECK_FALSE(a.hostAllowed("mcring.svc:1", pod));
  CHECK(a.hostAllowed("proxy.example:8080", pod));
  CHECK_FALSE(a.hostAllowed("proxy.example:22222", pod));
  auto local = connectedTo("127.0.0.1", 22222);
  CHECK(a.hostAllowed("localhost:22222", local));
  CHECK(a.hostAllowed("127.0.0.1:22222", local));
  CHECK(a.hostAllowed("[::1]:22222", local));
  auto v6 = connectedTo("fd00::5", 22222);
  CHECK(a.hostAllowed("[fd00::5]:22222", v6));
  CHECK_FALSE(a.hostAllowed("fd00::5:22222", v6));

  AdminAccess named;
  REQUIRE(named.init({"admin.internal", 9000, writeFile("n", "0123456789abcdef\n"), {}}, &error));
  CHECK(named.hostAllowed("admin.internal:9000", connectedTo("10.0.0.9", 9000)));
}
