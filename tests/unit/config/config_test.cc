// The config loader: examples load, defaults are twemproxy's, and every validation error is
// reported, all at once, as FILE:LINE:COL: context: message.
#include "config/config.h"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <ostream>

namespace mcring::config {
namespace {

// Error lines as the user reads them; printed one per line when a comparison fails.
struct Errors {
  Errors(std::initializer_list<std::string> l) : lines(l) {}
  explicit Errors(std::vector<std::string> l) : lines(std::move(l)) {}
  bool operator==(const Errors&) const = default;
  size_t size() const { return lines.size(); }
  const std::string& operator[](size_t i) const { return lines.at(i); }
  friend std::ostream& operator<<(std::ostream& os, const Errors& e) {
    for (const std::string& line : e.lines) {
      os << "\n  " << line;
    }
    return os << "\n";
  }
  std::vector<std::string> lines;
};

// Every error of loading `yaml` (as file "t.yml").
Errors errorsOf(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "t.yml");
  std::vector<std::string> out;
  for (const ConfigError& e : r.errors) {
    out.push_back(e.toString());
  }
  CHECK(r.config.has_value() == out.empty());
  return Errors(std::move(out));
}

Config loadOk(const std::string& yaml) {
  LoadResult r = loadConfigString(yaml, "t.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.ok());
  REQUIRE(r.config);
  return *r.config;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const PoolConfig& pool(const Config& c, const std::string& name) {
  for (const PoolConfig& p : c.pools) {
    if (p.name == name) {
      return p;
    }
  }
  FAIL("no pool " << name);
  return c.pools.front();
}

// --- text forms ---

TEST_CASE("Address::toString") {
  Address tcp;
  tcp.host = "10.0.0.1";
  tcp.port = 11211;
  CHECK(tcp.toString() == "10.0.0.1:11211");
  Address v6 = tcp;
  v6.host = "fe80::1";
  CHECK(v6.toString() == "[fe80::1]:11211");
  Address unix_socket;
  unix_socket.unix_path = "/run/mc.sock";
  unix_socket.unix_mode = 0666;
  CHECK(unix_socket.isUnix());
  CHECK(unix_socket.toString() == "/run/mc.sock");
}

TEST_CASE("ConfigError::toString") {
  ConfigError full{"a.yml", {3, 7}, "pool 'alpha': servers[2]", "weight 0 is out of range"};
  CHECK(full.toString() == "a.yml:3:7: pool 'alpha': servers[2]: weight 0 is out of range");
  ConfigError no_context{"a.yml", {1, 1}, "", "no pools defined"};
  CHECK(no_context.toString() == "a.yml:1:1: no pools defined");
  ConfigError no_mark{"a.yml", {}, "", "cannot read config file: Permission denied"};
  CHECK(no_mark.toString() == "a.yml: cannot read config file: Permission denied");
}

// --- examples ---

TEST_CASE("config/examples/local.yml is what `make run` starts") {
  LoadResult r = loadConfigFile("config/examples/local.yml");
  REQUIRE(r.errors.empty());
  REQUIRE(r.config);
  CHECK(r.config->path == "config/examples/local.yml");
  REQUIRE(r.config->pools.size() == 1);
  const PoolConfig& p = r.config->pools[0];
  CHECK(p.name == "local");
  CHECK(p.listen.toString() == "127.0.0.1:22122");
  CHECK(p.routing.hash == routing::HashFunction::Fnv1a_64);
  CHECK(p.routing.distribution == routing::Distribution::Ketama);
  CHECK(p.timeout_ms == 1000u);
  CHECK(p.allow_flush_all);  // a local playground
  CHECK(p.allow_watch);
  CHECK(p.log_keys == LogKeys::Plain);
  CHECK(p.slow_request_ms == 50u);
  REQUIRE(p.servers.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(p.servers[i].identity() == "127.0.0.1:" + std::to_string(11301 + i));
    CHECK(p.servers[i].spec.weight == 1u);
    CHECK(p.servers[i].mark.line == 8 + static_cast<int>(i));
    CHECK(p.servers[i].mark.column == 7);
  }
}

TEST_CASE("config/examples/nutcracker.yml: twemproxy's memcached pools load unchanged") {
  LoadResult r = loadConfigFile("config/examples/nutcracker.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.config);
  REQUIRE(r.config->pools.size() == 3);
  CHECK(r.config->pools[0].name == "gamma");  // file order is kept
  CHECK(r.config->pools[1].name == "delta");
  CHECK(r.config->pools[2].name == "omega");

  const PoolConfig& gamma = pool(*r.config, "gamma");
  CHECK(gamma.timeout_ms == 400u);
  CHECK(gamma.backlog == 1024);
  CHECK(gamma.preconnect);
  CHECK(gamma.auto_eject_hosts);
  CHECK(gamma.server_retry_timeout_ms == 2000u);
  CHECK(gamma.server_failure_limit == 3u);
  CHECK(gamma.servers.size() == 2);

  const PoolConfig& delta = pool(*r.config, "delta");
  CHECK(delta.timeout_ms == 100u);
  CHECK(delta.servers.size() == 10);
  CHECK(delta.servers.back().identity() == "127.0.0.1:11223");

  const PoolConfig& omega = pool(*r.config, "omega");
  CHECK(omega.listen.isUnix());
  CHECK(omega.listen.unix_path == "/tmp/gamma");
  CHECK(omega.listen.unix_mode == 0666u);
  CHECK(omega.routing.hash == routing::HashFunction::Hsieh);
  CHECK_FALSE(omega.auto_eject_hosts);
  REQUIRE(omega.servers.size() == 2);
  CHECK(omega.servers[0].spec.weight == 100000u);
  CHECK(omega.timeout_ms == 1000u);  // not set: twemproxy waits forever, mcring 1 s
}

TEST_CASE("config/examples/annotated.yml loads and sets what it says") {
  LoadResult r = loadConfigFile("config/examples/annotated.yml");
  for (const ConfigError& e : r.errors) {
    FAIL_CHECK(e.toString());
  }
  REQUIRE(r.config);
  REQUIRE(r.config->pools.size() == 1);
  const PoolConfig& p = r.config->pools[0];
  CHECK(p.routing.hash_tag == "{}");
  REQUIRE(p.servers.size() == 3);
  CHECK(p.servers[0].spec.name == "cache-a");
  CHECK(p.servers[2].address.isUnix());
  CHECK(p.servers[2].spec.weight == 2u);
  CHECK(p.servers[2].displayName() == "cache-c");
}

// --- defaults and values ---

TEST_CASE("defaults are twemproxy's (nc_conf.h) but where unsafe, and mcring's") {
  Config c = loadOk("p:\n  listen: 127.0.0.1:22121\n  servers:\n    - 127.0.0.1:11211:1\n");
  const PoolConfig& p = c.pools.at(0);
  CHECK(p.routing.hash == routing::HashFunction::Fnv1a_64);        // CONF_DEFAULT_HASH
  CHECK(p.routing.distribution == routing::Distribution::Ketama);  // CONF_DEFAULT_DIST
  CHECK(p.routing.hash_tag.empty());
  CHECK(p.timeout_ms == 1000u);       // twemproxy's -1 waits forever: a hung server holds all
  CHECK(p.backlog == 512);            // CONF_DEFAULT_LISTEN_BACKLOG
  CHECK(p.client_connections == 1024u);  // memcached's -c (twemproxy: unlimited)
  CHECK_FALSE(p.preconnect);
  CHECK_FALSE(p.auto_eject_hosts);
  CHECK(p.server_connections == 1u);
  CHECK(p.server_retry_timeout_ms == 30000u);
  CHECK(p.server_failure_limit == 2u);
  CHECK(p.tcpkeepalive);  // as memcached's sockets (twemproxy: off)
  CHECK_FALSE(p.reuseport);
  // mcring's
  CHECK(p.routing.ketama_compat == routing::KetamaCompat::Twemproxy);
  CHECK(p.item_size_max == 1048576u);
  CHECK_FALSE(p.allow_flush_all);  // memcached -F: no client empties the pool by default
  CHECK(p.max_multiget_keys == 100000u);
  CHECK(p.client_idle_timeout_ms == 0u);
  CHECK(p.client_request_timeout_ms == 30000u);
  CHECK(p.routing.maglev_table_size == 65537u);
  CHECK(p.mark.line == 1);
  CHECK(p.mark.column == 1);
}

TEST_CASE("every key sets its field") {
  Config c = loadOk(R"(p:
  listen: /run/mcring.sock 0600
  hash: murmur
  hash_tag: "$$"
  distribution: modula
  timeout: 250
  backlog: 64
  preconnect: true
  client_connections: 1000
  server_connections: 4
  auto_eject_hosts: true
  server_retry_timeout: 5000
  server_failure_limit: 7
  tcpkeepalive: false
  reuseport: true
  redis: false
  ketama_compat: libmemcached
  item_size_max: 512k
  allow_flush_all: true
  max_multiget_keys: 500
  client_idle_timeout: 30000
  client_request_timeout: 5000
  maglev_table_size: 251
  servers:
    - 10.0.0.1:11211:1 a
    - 10.0.0.2:11211:1
)");
  const PoolConfig& p = c.pools.at(0);
  CHECK(p.listen.unix_path == "/run/mcring.sock");
  CHECK(p.listen.unix_mode == 0600u);
  CHECK(p.routing.hash == routing::HashFunction::Murmur);
  CHECK(p.routing.hash_tag == "$$");
  CHECK(p.routing.distribution == routing::Distribution::Modula);
  CHECK(p.timeout_ms == 250u);
  CHECK(p.backlog == 64);
  CHECK(p.preconnect);
  CHECK(p.client_connections == 1000u);
  CHECK(p.server_connections == 4u);
  CHECK(p.auto_eject_hosts);
  CHECK(p.server_retry_timeout_ms == 5000u);
  CHECK(p.server_failure_limit == 7u);
  CHECK_FALSE(p.tcpkeepalive);
  CHECK(p.reuseport);
  CHECK(p.routing.ketama_compat == routing::KetamaCompat::Libmemcached);
  CHECK(p.item_size_max == 512u * 1024);
  CHECK(p.allow_flush_all);
  CHECK(p.max_multiget_keys == 500u);
  CHECK(p.client_idle_timeout_ms == 30000u);
  CHECK(p.client_request_timeout_ms == 5000u);
  CHECK(p.routing.maglev_table_size == 251u);
  REQUIRE(p.servers.size() == 2);
  CHECK(p.servers[0].spec.name == "a");
  CHECK(p.servers[1].mark.line == 26);
}

TEST_CASE("quoted scalars count as their text, as in twemproxy") {
  Config c = loadOk(
      "p:\n  listen: \"127.0.0.1:22121\"\n  timeout: '400'\n  preconnect: \"true\"\n"
      "  servers: [\"127.0.0.1:11211:1\"]\n");
  CHECK(c.pools.at(0).timeout_ms == 400u);
  CHECK(c.pools.at(0).preconnect);
}

TEST_CASE("item_size_max takes bytes and suffixes, 1k..1g") {
  auto sized = [](const std::string& v) {
    return loadOk("p:\n  listen: 127.0.0.1:1\n  item_size_max: " + v +
                  "\n  servers: [127.0.0.1:2:1]\n")
        .pools.at(0)
        .item_size_max;
  };
  CHECK(sized("2000000") == 2000000u);
  CHECK(sized("512k") == 524288u);
  CHECK(sized("1m") == 1048576u);
  CHECK(sized("1g") == 1073741824u);
  CHECK(errorsOf("p:\n  listen: 127.0.0.1:1\n  item_size_max: 2g\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:18: pool 'p': item_size_max: 2g is out of range 1024..1073741824 bytes"});
}

// --- redis ---

TEST_CASE("redis: true is refused; redis: false is accepted") {
  CHECK(errorsOf(R"(alpha:
  listen: 127.0.0.1:22121
  redis: true
  servers:
    - 127.0.0.1:6379:1
)") == Errors{"t.yml:3:10: pool 'alpha': redis: mcring proxies memcached only; remove "
              "'redis: true' from this pool"});
  Config c = loadOk("a:\n  listen: 127.0.0.1:1\n  redis: false\n  servers: [127.0.0.1:2:1]\n");
  CHECK(c.pools.size() == 1);
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  redis: maybe\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:10: pool 'a': redis: expected true or false, got 'maybe'"});
}

TEST_CASE("twemproxy's redis-only keys are refused") {
  CHECK(errorsOf(R"(a:
  listen: 127.0.0.1:1
  redis_auth: secret
  redis_db: 3
  servers: [127.0.0.1:2:1]
)") == Errors{
           "t.yml:3:15: pool 'a': redis_auth: redis_auth is a redis-only key; mcring proxies "
           "memcached only",
           "t.yml:4:13: pool 'a': redis_db: redis_db is a redis-only key; mcring proxies "
           "memcached only",
       });
}

// --- keys ---

TEST_CASE("allow_watch, slow_request_ms, log_keys: off and hashed by default") {
  const std::string head = "a:\n  listen: 127.0.0.1:1\n  servers:\n    - 127.0.0.1:2:1\n";
  const PoolConfig d = loadOk(head).pools[0];
  CHECK_FALSE(d.allow_watch);
  CHECK(d.slow_request_ms == 0u);
  CHECK(d.log_keys == LogKeys::Hash);
  const PoolConfig p =
      loadOk(head + "  allow_watch: true\n  slow_request_ms: 250\n  log_keys: none\n").pools[0];
  CHECK(p.allow_watch);
  CHECK(p.slow_request_ms == 250u);
  CHECK(p.log_keys == LogKeys::None);
  CHECK_FALSE(errorsOf(head + "  log_keys: secret\n").lines.empty());
  CHECK_FALSE(errorsOf(head + "  slow_request_ms: -1\n").lines.empty());
}

TEST_CASE("unknown key: suggests the closest known key") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  timout: 400\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:3: pool 'a': unknown key 'timout'; did you mean 'timeout'?"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  hashtag: '{}'\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:3: pool 'a': unknown key 'hashtag'; did you mean 'hash_tag'?"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  server: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:1:1: pool 'a': missing required key 'servers'",
               "t.yml:3:3: pool 'a': unknown key 'server'; did you mean 'servers'?"});
}

TEST_CASE("unknown key far from any known key lists the known keys") {
  Errors e = errorsOf("a:\n  listen: 127.0.0.1:1\n  colour: blue\n  servers: [127.0.0.1:2:1]\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].starts_with("t.yml:3:3: pool 'a': unknown key 'colour' (known keys: listen, hash, "));
  CHECK(e[0].find("maglev_table_size)") != std::string::npos);
}

TEST_CASE("duplicate key in a pool and duplicate pool name") {
  CHECK(errorsOf(R"(a:
  listen: 127.0.0.1:1
  timeout: 100
  timeout: 200
  servers: [127.0.0.1:2:1]
a:
  listen: 127.0.0.1:3
  servers: [127.0.0.1:2:1]
)") == Errors{"t.yml:4:3: pool 'a': duplicate key 'timeout' (first at line 3)",
              "t.yml:6:1: pool 'a': duplicate pool name (first at line 1)"});
}

TEST_CASE("missing listen, and no route sends to the pool") {
  CHECK(errorsOf("a:\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:1:1: pool 'a': pool 'a' has no listen and no route sends to it"});
}

// --- types ---

TEST_CASE("wrong types name what was expected and what was found") {
  CHECK(errorsOf(R"(a:
  listen: [127.0.0.1, 22121]
  timeout: abc
  backlog: [1]
  preconnect: yes
  hash_tag: {}
  client_connections: -1
  server_connections: 0
  servers: 127.0.0.1:2:1
)") == Errors{
           "t.yml:2:11: pool 'a': listen: expected an address 'host:port' or "
           "'/path/to/socket [mode]', got a list",
           "t.yml:3:12: pool 'a': timeout: 'abc' is not a non-negative integer",
           "t.yml:4:12: pool 'a': backlog: expected a non-negative integer, got a list",
           "t.yml:5:15: pool 'a': preconnect: expected true or false, got 'yes'",
           "t.yml:6:13: pool 'a': hash_tag: expected a two-character string such as \"{}\" "
           "(quote it), got a mapping",
           "t.yml:7:23: pool 'a': client_connections: '-1' is not a non-negative integer",
           "t.yml:8:23: pool 'a': server_connections: 0 is out of range 1..2147483647",
           "t.yml:9:12: pool 'a': servers: expected a list of servers, got '127.0.0.1:2:1'",
       });
}

TEST_CASE("a long scalar is cut short in messages") {
  const std::string long_text(80, 'x');
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: " + long_text + "\n") ==
        Errors{"t.yml:3:12: pool 'a': servers: expected a list of servers, got '" +
               std::string(60, 'x') + "...'"});
}

TEST_CASE("an empty value is reported at its key") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  timeout:\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:3: pool 'a': timeout: expected a non-negative integer, got an empty "
               "value"});
}

TEST_CASE("timeout beyond twemproxy's int is out of range") {
  CHECK(
      errorsOf("a:\n  listen: 127.0.0.1:1\n  timeout: 2147483648\n  servers: [127.0.0.1:2:1]\n") ==
      Errors{"t.yml:3:12: pool 'a': timeout: 2147483648 is out of range 0..2147483647"});
}

TEST_CASE("warm-up keys: defaults, values, and out-of-range values") {
  auto ok = loadConfigString("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n");
  REQUIRE(ok.ok());
  CHECK(ok.config->pools[0].warmup_window_ms == 0u);  // off unless asked for
  CHECK(ok.config->pools[0].warmup_max_inflight == 1000u);
  auto set = loadConfigString(
      "a:\n  listen: 127.0.0.1:1\n  warmup_window: 120000\n  warmup_max_inflight: 50\n"
      "  servers: [127.0.0.1:2:1]\n");
  REQUIRE(set.ok());
  CHECK(set.config->pools[0].warmup_window_ms == 120000u);
  CHECK(set.config->pools[0].warmup_max_inflight == 50u);
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  warmup_window: 2m\n  warmup_max_inflight: 0\n"
                 "  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:18: pool 'a': warmup_window: '2m' is not a non-negative integer",
               "t.yml:4:24: pool 'a': warmup_max_inflight: 0 is out of range 1..2147483647"});
}

// --- listen ---

TEST_CASE("bad listen addresses") {
  CHECK(errorsOf(R"(a:
  listen: 127.0.0.1
  servers: [127.0.0.1:2:1]
b:
  listen: 127.0.0.1:70000
  servers: [127.0.0.1:2:1]
c:
  listen: "/tmp/c.sock 888"
  servers: [127.0.0.1:2:1]
d:
  listen: tmp/d.sock
  servers: [127.0.0.1:2:1]
)") == Errors{
           "t.yml:2:11: pool 'a': listen: expected 'host:port' or an absolute unix socket "
           "path, got '127.0.0.1'",
           "t.yml:5:11: pool 'b': listen: port 70000 is out of range 1..65535",
           "t.yml:8:11: pool 'c': listen: invalid unix socket mode '888' (octal, at most 0777)",
           "t.yml:11:11: pool 'd': listen: expected 'host:port' or an absolute unix socket "
           "path, got 'tmp/d.sock'",
       });
}

TEST_CASE("two pools on one listen address") {
  CHECK(errorsOf(R"(a:
  listen: 127.0.0.1:22121
  servers: [127.0.0.1:2:1]
b:
  listen: 127.0.0.1:22121
  servers: [127.0.0.1:2:1]
c:
  listen: 0.0.0.0:22121
  servers: [127.0.0.1:2:1]
d:
  listen: /tmp/d.sock
  servers: [127.0.0.1:2:1]
e:
  listen: /tmp/d.sock 0666
  servers: [127.0.0.1:2:1]
f:
  listen: 127.0.0.1:22122
  servers: [127.0.0.1:2:1]
)") == Errors{
           "t.yml:5:3: pool 'b': listen address 127.0.0.1:22121 is already used by pool 'a' "
           "(line 1)",
           "t.yml:8:3: pool 'c': listen address 0.0.0.0:22121 overlaps 127.0.0.1:22121 of "
           "pool 'a' (line 1)",
           "t.yml:14:3: pool 'e': listen address /tmp/d.sock is already used by pool 'd' "
           "(line 10)",
       });
}

// --- servers ---

TEST_CASE("server errors point at the entry, with its index") {
  CHECK(errorsOf(R"(alpha:
  listen: 127.0.0.1:22121
  servers:
    - 127.0.0.1:11211:1 one
    - 127.0.0.1:11212
    - 127.0.0.1:11213:0
    - 127.0.0.1:11214:1 one
    - 127.0.0.1:11211:2
    - 127.0.0.1:65536:1
    - [127.0.0.1, 11215, 1]
    - 127.0.0.1:11216:4294967296
)") == Errors{
           "t.yml:5:7: pool 'alpha': servers[1]: missing weight: write '127.0.0.1:11212:1' "
           "('host:port:weight [name]' or '/path/to/socket:weight [name]')",
           "t.yml:6:7: pool 'alpha': servers[2]: weight 0 is out of range 1..2147483647",
           "t.yml:7:7: pool 'alpha': servers[3]: duplicate server name 'one' (also servers[0])",
           "t.yml:8:7: pool 'alpha': servers[4]: duplicate server 127.0.0.1:11211 (also "
           "servers[0])",
           "t.yml:9:7: pool 'alpha': servers[5]: port 65536 is out of range 1..65535",
           "t.yml:10:7: pool 'alpha': servers[6]: expected a server 'host:port:weight [name]', "
           "got a list",
           "t.yml:11:7: pool 'alpha': servers[7]: weight 4294967296 is out of range "
           "1..2147483647",
       });
}

TEST_CASE("duplicate unix socket servers") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers:\n    - /run/mc.sock:1\n"
                 "    - /run/mc.sock:2 other\n") ==
        Errors{"t.yml:5:7: pool 'a': servers[1]: duplicate server /run/mc.sock (also "
               "servers[0])"});
}

TEST_CASE("empty servers list") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: []\n") ==
        Errors{"t.yml:3:12: pool 'a': servers: empty servers list: a pool needs at least one "
               "server"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers:\n") ==
        Errors{"t.yml:3:3: pool 'a': servers: expected a list of servers, got an empty value"});
}

// --- hash, hash_tag, distribution ---

TEST_CASE("hash_tag must be exactly two characters") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  hash_tag: \"{\"\n  servers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:13: pool 'a': hash_tag: hash_tag must be exactly two characters, e.g. "
               "\"{}\"; got '{'"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  hash_tag: \"\"\n  servers: [127.0.0.1:2:1]\n")
            .size() == 1);
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  hash_tag: \"{}}\"\n  servers: [127.0.0.1:2:1]\n")
            .size() == 1);
}

TEST_CASE("unknown hash, distribution and ketama_compat") {
  CHECK(errorsOf(R"(a:
  listen: 127.0.0.1:1
  hash: fnv1a64
  distribution: consistent
  ketama_compat: libmemcache
  servers: [127.0.0.1:2:1]
)") == Errors{
           "t.yml:3:9: pool 'a': hash: unknown hash function 'fnv1a64'; did you mean "
           "'fnv1a_64'?",
           "t.yml:4:17: pool 'a': distribution: unknown distribution 'consistent' (expected "
           "one of: ketama, modula, random, jump, rendezvous, maglev)",
           "t.yml:5:18: pool 'a': ketama_compat: unknown ketama_compat 'libmemcache'; did you "
           "mean 'libmemcached'?",
       });
}

TEST_CASE("unavailable_writes: error (the default) or not_stored, anything else refused") {
  const std::string head = "a:\n  listen: 127.0.0.1:1\n";
  const std::string servers = "  servers: [127.0.0.1:2:1]\n";
  CHECK(pool(loadOk(head + servers), "a").unavailable_writes == UnavailableWrites::Error);
  CHECK(pool(loadOk(head + "  unavailable_writes: not_stored\n" + servers), "a")
            .unavailable_writes == UnavailableWrites::NotStored);
  CHECK(pool(loadOk(head + "  unavailable_writes: error\n" + servers), "a").unavailable_writes ==
        UnavailableWrites::Error);
  CHECK(errorsOf(head + "  unavailable_writes: notstored\n" + servers) ==
        Errors{"t.yml:3:23: pool 'a': unavailable_writes: unknown unavailable_writes "
               "'notstored'; did you mean 'not_stored'?"});
  CHECK(errorsOf(head + "  unavailable_writes: ignore\n" + servers) ==
        Errors{"t.yml:3:23: pool 'a': unavailable_writes: unknown unavailable_writes 'ignore' "
               "(expected one of: error, not_stored)"});
  CHECK(errorsOf(head + "  unavailable_writes: [error]\n" + servers).size() == 1);
}

// --- options the router refuses ---

TEST_CASE("options that do not fit the servers are refused by routing::Router::build") {
  Errors jump = errorsOf(R"(a:
  listen: 127.0.0.1:1
  distribution: jump
  servers:
    - 127.0.0.1:2:1
    - 127.0.0.1:3:2
)");
  REQUIRE(jump.size() == 1);
  CHECK(jump[0].starts_with("t.yml:3:3: pool 'a': "));
  CHECK(jump[0].find("weight 2") != std::string::npos);

  Errors maglev = errorsOf(R"(a:
  listen: 127.0.0.1:1
  distribution: maglev
  maglev_table_size: 100
  servers: [127.0.0.1:2:1]
)");
  REQUIRE(maglev.size() == 1);
  CHECK(maglev[0].starts_with("t.yml:4:3: pool 'a': maglev_table_size"));

  // A name equal to another server's host:port gives both the same ring identity.
  Errors alias = errorsOf(R"(a:
  listen: 127.0.0.1:1
  servers:
    - 127.0.0.1:2:1 127.0.0.1:3
    - 127.0.0.1:3:1
)");
  REQUIRE(alias.size() == 1);
  CHECK(alias[0].starts_with("t.yml:1:1: pool 'a': "));
  CHECK(alias[0].find("127.0.0.1:3") != std::string::npos);

  // Unused options do not matter: maglev_table_size without maglev, weights with ketama.
  Config ok =
      loadOk("a:\n  listen: 127.0.0.1:1\n  maglev_table_size: 100\n  servers: [127.0.0.1:2:5]\n");
  CHECK(ok.pools.at(0).servers.at(0).spec.weight == 5u);
}

// --- document shape ---

TEST_CASE("a pool that is not a mapping") {
  CHECK(errorsOf("alpha: 127.0.0.1:22121\nbeta:\ngamma:\n  - listen\n") ==
        Errors{
            "t.yml:1:8: pool 'alpha': expected a mapping of pool keys (listen, servers, ...), got "
            "'127.0.0.1:22121'",
            "t.yml:2:1: pool 'beta': expected a mapping of pool keys (listen, servers, ...), got "
            "an empty value",
            "t.yml:4:3: pool 'gamma': expected a mapping of pool keys (listen, servers, ...), got "
            "a list",
        });
}

TEST_CASE("the file must be a mapping of pools") {
  CHECK(errorsOf("- a\n- b\n") ==
        Errors{"t.yml:1:1: expected a mapping of pool names to pools, got a list"});
  CHECK(errorsOf("") == Errors{"t.yml: no pools defined"});
  CHECK(errorsOf("# only a comment\n") == Errors{"t.yml: no pools defined"});
  CHECK(errorsOf("{}\n") == Errors{"t.yml:1:1: no pools defined"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n---\nb: 1\n") ==
        Errors{"t.yml:5:1: only one YAML document is allowed per file"});
  // An empty trailing document is no document, as in twemproxy.
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n---\n").size() == 0);
}

TEST_CASE("YAML syntax error, with its line and column") {
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1\n") ==
        Errors{"t.yml:4:1: YAML syntax error: end of sequence flow not found"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n\tservers: [127.0.0.1:2:1]\n") ==
        Errors{"t.yml:3:1: YAML syntax error: illegal tab when looking for indentation"});
  // yaml-cpp does not always say "tab"; then the loader does.
  CHECK(errorsOf("a:\n\tb: 1\n") ==
        Errors{"t.yml:2:3: YAML syntax error: illegal map value (this line is indented with a "
               "tab; YAML allows spaces only)"});
}

TEST_CASE("a stray ',' is a syntax error, not a hang (yaml-cpp 0.7 loops in LoadAll)") {
  CHECK(errorsOf("# comment\n,alpha:\n  listen: 127.0.0.1:1\n") ==
        Errors{"t.yml:2:1: YAML syntax error: unexpected ','"});
  CHECK(errorsOf(",") == Errors{"t.yml:1:1: YAML syntax error: unexpected ','"});
  CHECK(errorsOf("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n---\n,\n").size() == 0);
}

TEST_CASE("unreadable file") {
  LoadResult missing = loadConfigFile("config/examples/no-such-file.yml");
  REQUIRE(missing.errors.size() == 1);
  CHECK_FALSE(missing.config);
  CHECK(missing.errors[0].toString() ==
        "config/examples/no-such-file.yml: cannot read config file: No such file or directory");
  LoadResult directory = loadConfigFile("config/examples");
  REQUIRE(directory.errors.size() == 1);
  CHECK(directory.errors[0].toString() ==
        "config/examples: cannot read config file: it is a directory, not a regular file");
}

TEST_CASE("all errors at once, across pools, in file order") {
  Errors e = errorsOf(R"(alpha:
  listen: 127.0.0.1:22121
  hash: md6
  servers:
    - 127.0.0.1:11211:1
    - 127.0.0.1:11211:1
beta:
  listen: 127.0.0.1:22121
  distribution: ketama
  auto_eject_host: true
  servers: []
gamma: 1
)");
  CHECK(e == Errors{
                 "t.yml:3:9: pool 'alpha': hash: unknown hash function 'md6'; did you mean 'md5'?",
                 "t.yml:6:7: pool 'alpha': servers[1]: duplicate server 127.0.0.1:11211 (also "
                 "servers[0])",
                 "t.yml:8:3: pool 'beta': listen address 127.0.0.1:22121 is already used by "
                 "pool 'alpha' (line 1)",
                 "t.yml:10:3: pool 'beta': unknown key 'auto_eject_host'; did you mean "
                 "'auto_eject_hosts'?",
                 "t.yml:11:12: pool 'beta': servers: empty servers list: a pool needs at least "
                 "one server",
                 "t.yml:12:8: pool 'gamma': expected a mapping of pool keys (listen, servers, "
                 "...), got '1'",
             });
}

TEST_CASE("errors carry file, mark and context as fields too") {
  LoadResult r =
      loadConfigString("a:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:0]\n", "f.yml");
  REQUIRE(r.errors.size() == 1);
  CHECK(r.errors[0].file == "f.yml");
  CHECK(r.errors[0].mark.line == 3);
  CHECK(r.errors[0].mark.column == 13);
  CHECK(r.errors[0].context == "pool 'a': servers[0]");
  CHECK(r.errors[0].message == "weight 0 is out of range 1..2147483647");
}

// --- digest ---

TEST_CASE("digest: of the file's bytes") {
  const std::string text = readFile("config/examples/local.yml");
  REQUIRE_FALSE(text.empty());
  LoadResult from_file = loadConfigFile("config/examples/local.yml");
  LoadResult from_string = loadConfigString(text);
  REQUIRE(from_file.config);
  REQUIRE(from_string.config);
  CHECK(from_string.config->path == "<string>");
  CHECK(from_file.config->digest.size() == 32);
  CHECK(from_file.config->digest == from_string.config->digest);
  CHECK(loadConfigFile("config/examples/local.yml").config->digest == from_file.config->digest);
  // Any byte changes it, even one that does not change the meaning: the digest only lets an
  // unchanged file skip the reload.
  LoadResult commented = loadConfigString(text + "# edited\n");
  REQUIRE(commented.config);
  CHECK(commented.config->digest != from_file.config->digest);
}

}  // namespace
}  // namespace mcring::config
