// The TLS and authentication keys: what goes together, paths relative to the config file, the
// per-server tls= suffix, and the -Y credentials format (memcached refuses any other line).
#include <doctest/doctest.h>

#include "config/config.h"
#include "config/credentials.h"
#include "config/parse.h"

namespace mcring::config {
namespace {

std::vector<std::string> errorsOf(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "/etc/mcring/t.yml");
  std::vector<std::string> out;
  for (const ConfigError& e : r.errors) {
    out.push_back(e.toString());
  }
  return out;
}

const std::string kPool = "a:\n  listen: 127.0.0.1:22122\n  servers:\n    - 127.0.0.1:11211:1\n";

TEST_CASE("a TLS listener needs a certificate and a key; they need a TLS listener") {
  auto e = errorsOf(kPool + "  listen_tls: true\n  tls_cert: c.pem\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "/etc/mcring/t.yml:5:3: pool 'a': a TLS listener needs tls_cert and tls_key");
  e = errorsOf(kPool + "  tls_cert: c.pem\n  tls_key: k.pem\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("set listen_tls: true or tls_listen") != std::string::npos);
  e = errorsOf(kPool + "  tls_listen: 127.0.0.1:22122\n  tls_cert: c\n  tls_key: k\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("tls_listen is the listen address") != std::string::npos);
}

TEST_CASE("mutual TLS needs the CA; a client certificate needs its key") {
  auto e = errorsOf(kPool + "  listen_tls: true\n  tls_cert: c\n  tls_key: k\n"
                            "  tls_verify_client: true\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("tls_verify_client needs tls_ca") != std::string::npos);
  e = errorsOf(kPool + "  server_tls: true\n  server_tls_cert: c\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("server_tls_cert and server_tls_key go together") != std::string::npos);
  e = errorsOf(kPool + "  tls_min_version: 1.1\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("expected 1.2 or 1.3, got '1.1'") != std::string::npos);
}

TEST_CASE("paths are relative to the config file; tls=on|off per server") {
  LoadResult r = loadConfigString(
      "a:\n  listen: 127.0.0.1:22122\n  tls_listen: 127.0.0.1:22123\n  tls_cert: tls/c.pem\n"
      "  tls_key: /abs/k.pem\n  server_tls: true\n  client_auth_file: clients\n"
      "  servers:\n    - 127.0.0.1:11211:1 one tls=off\n    - 127.0.0.1:11212:1\n",
      "/etc/mcring/t.yml");
  REQUIRE(r.ok());
  const PoolConfig& p = r.config->pools[0];
  CHECK(p.tls_cert == "/etc/mcring/tls/c.pem");
  CHECK(p.tls_key == "/abs/k.pem");
  CHECK(p.client_auth_file == "/etc/mcring/clients");
  REQUIRE(p.servers.size() == 2);
  CHECK(p.servers[0].spec.name == "one");
  CHECK_FALSE(p.serverUsesTls(p.servers[0]));
  CHECK(p.serverUsesTls(p.servers[1]));
  std::string error;
  CHECK_FALSE(parseServer("127.0.0.1:11211:1 tls=maybe", &error));
  CHECK(error == "expected 'tls=on' or 'tls=off', got 'tls=maybe'");
  auto s = parseServer("127.0.0.1:11211:1 tls=on", &error);
  REQUIRE(s);
  CHECK(s->spec.name.empty());
  CHECK(s->tls == std::optional<bool>(true));
}

TEST_CASE("credentials: memcached -Y's user:password lines") {
  std::string error;
  auto c = Credentials::parse("alice:s3cret\nbob:a:b\r\n", "f", &error);
  REQUIRE(c);
  CHECK(c->size() == 2);
  CHECK(c->check("alice", "s3cret"));
  CHECK(c->check("bob", "a:b"));  // split at the first ':'
  CHECK_FALSE(c->check("alice", "s3cre"));
  CHECK_FALSE(c->check("alice", "s3cret "));
  CHECK_FALSE(c->check("bob", "s3cret"));
  CHECK(c->first().user == "alice");
  // memcached refuses to start on a line that is not user:password, an empty one included;
  // the error names the file and the line, never the line's text.
  CHECK_FALSE(Credentials::parse("alice:s3cret\n\nbob:x\n", "f", &error));
  CHECK(error == "f: line 2 is not 'user:password' (memcached -Y format)");
  CHECK_FALSE(Credentials::parse("secretword\n", "f", &error));
  CHECK(error.find("secretword") == std::string::npos);
  CHECK_FALSE(Credentials::parse("", "f", &error));
  CHECK_FALSE(Credentials::parse(":pw\n", "f", &error));
}

}  // namespace
}  // namespace mcring::config
