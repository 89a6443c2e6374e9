// The pool key table (see pool_keys.h): twemproxy's keys with twemproxy's meaning and defaults
// (src/nc_conf.c), except where twemproxy's default is unsafe in production (timeout,
// client_connections, tcpkeepalive: each row says why), then mcring's own.
#include "config/pool_keys.h"

#include <algorithm>
#include <array>
#include <limits>

#include "config/parse.h"
#include "config/route_keys.h"
#include "proxy/routing/hash.h"
#include "proxy/routing/router.h"

namespace mcring::config {
namespace {

// twemproxy keeps numbers in a C int and refuses negatives (nc_atoi).
constexpr uint64_t kIntMax = std::numeric_limits<int32_t>::max();

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

std::string joined(const std::vector<std::string_view>& names) {
  std::string out;
  for (auto n : names) {
    out += out.empty() ? "" : ", ";
    out += n;
  }
  return out;
}

// routing keeps each name list in one table and exposes lookups both ways, not the list; its
// enums count from 0, and the name of a value past the end is "?".
template <typename E>
std::vector<std::string_view> enumNames(std::string_view (*name_of)(E)) {
  std::vector<std::string_view> names;
  for (int i = 0; i <= std::numeric_limits<uint8_t>::max(); ++i) {
    std::string_view n = name_of(static_cast<E>(i));
    if (n == "?") {
      break;
    }
    names.push_back(n);
  }
  return names;
}

std::vector<std::string_view> hashNames() {
  return enumNames(&routing::hashFunctionName);
}
std::vector<std::string_view> distributionNames() {
  return enumNames(&routing::distributionName);
}
std::vector<std::string_view> ketamaCompatNames() {
  return enumNames(&routing::ketamaCompatName);
}

// --- value readers shared by the rows ---

template <typename T>
void setNumber(ValueReader& v, T& field, uint64_t min, uint64_t max) {
  auto text = v.scalar("a non-negative integer");
  if (!text) {
    return;
  }
  std::string error;
  if (auto n = parseUint(*text, min, max, &error)) {
    field = static_cast<T>(*n);
  } else {
    v.error(error);
  }
}

void setBool(ValueReader& v, bool& field) {
  auto text = v.scalar("true or false");
  if (!text) {
    return;
  }
  std::string error;
  if (auto b = parseBool(*text, &error)) {
    field = *b;
  } else {
    v.error(error);
  }
}

template <typename E>
void setName(ValueReader& v, E& field, std::string_view what,
             std::optional<E> (*parse)(std::string_view), std::vector<std::string_view> names) {
  auto text = v.scalar("a name");
  if (!text) {
    return;
  }
  if (auto e = parse(*text)) {
    field = *e;
    return;
  }
  std::string message = "unknown " + std::string(what) + " " + quoted(*text);
  std::string_view near = closestName(*text, names);
  if (!near.empty()) {
    message += "; did you mean " + quoted(near) + "?";
  } else {
    message += " (expected one of: " + joined(names) + ")";
  }
  v.error(message);
}

std::string showBool(bool b) {
  return b ? "true" : "false";
}

std::string showSize(uint64_t bytes) {
  if (bytes != 0 && bytes % (uint64_t{1} << 30) == 0) {
    return std::to_string(bytes >> 30) + "g";
  }
  if (bytes != 0 && bytes % (uint64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + "m";
  }
  if (bytes != 0 && bytes % (uint64_t{1} << 10) == 0) {
    return std::to_string(bytes >> 10) + "k";
  }
  return std::to_string(bytes);
}

void setString(ValueReader& v, std::string& field, std::string_view what) {
  auto text = v.scalar(what);
  if (!text) {
    return;
  }
  if (text->empty()) {
    v.error("expected " + std::string(what) + ", got an empty string");
    return;
  }
  field = *text;
}

void setFile(ValueReader& v, std::string& field) {
  setString(v, field, "a file path");
}

void setServers(ValueReader& v, PoolConfig& pool) {
  auto elements = v.sequence("a list of servers");
  if (!elements) {
    return;
  }
  if (elements->empty()) {
    v.error("empty servers list: a pool needs at least one server");
    return;
  }
  // Later duplicates point back at the first, by index.
  std::vector<std::pair<std::string, size_t>> identities;
  std::vector<std::pair<std::string, size_t>> names;
  auto firstOf = [](const std::vector<std::pair<std::string, size_t>>& seen,
                    const std::string& key) -> std::optional<size_t> {
    for (const auto& [k, i] : seen) {
      if (k == key) {
        return i;
      }
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < elements->size(); ++i) {
    ValueReader& element = *(*elements)[i];
    auto text = element.scalar("a server 'host:port:weight [name]'");
    if (!text) {
      continue;
    }
    std::string error;
    auto server = parseServer(*text, &error);
    if (!server) {
      element.error(error);
      continue;
    }
    server->mark = element.mark();
    bool ok = true;
    std::string identity = server->identity();
    if (auto first = firstOf(identities, identity)) {
      element.error("duplicate server " + identity + " (also servers[" + std::to_string(*first) +
                    "])");
      ok = false;
    }
    identities.emplace_back(identity, i);
    if (!server->spec.name.empty()) {
      if (auto first = firstOf(names, server->spec.name)) {
        element.error("duplicate server name " + quoted(server->spec.name) + " (also servers[" +
                      std::to_string(*first) + "])");
        ok = false;
      }
      names.emplace_back(server->spec.name, i);
    }
    if (ok) {
      pool.servers.push_back(std::move(*server));
    }
  }
}

// clang-format off
const std::array kPoolKeys = {
    // ---------------------------------------------------------------- twemproxy's keys
    PoolKey{
        .name = "listen", .type = "address", .origin = KeyOrigin::Twemproxy,
        .meaning = "Where clients connect: `host:port`, `[ipv6]:port`, or an absolute unix socket "
                   "path with an optional octal mode (`/var/run/mcring.sock 0666`). Required, "
                   "except for a pool that is only a route's pool (then it has no listener).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("an address 'host:port' or '/path/to/socket [mode]'");
          std::string error;
          if (!text) {
            return;
          }
          if (auto a = parseListenAddress(*text, &error)) {
            p.listen = *a;
          } else {
            v.error(error);
          }
        },
    },
    PoolKey{
        .name = "hash", .type = "name", .origin = KeyOrigin::Twemproxy,
        .meaning = "Hash function applied to the key (after `hash_tag`); each is bit-identical "
                   "to twemproxy's of the same name (`xxh3` is mcring's).",
        .choices = &hashNames,
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.routing.hash, "hash function", &routing::parseHashFunction, hashNames());
        },
        .show = [](const PoolConfig& p) {
          return std::string(routing::hashFunctionName(p.routing.hash));
        },
    },
    PoolKey{
        .name = "hash_tag", .type = "string", .origin = KeyOrigin::Twemproxy,
        .meaning = "Two characters, e.g. `\"{}\"` (quoted): when a key contains both, only the "
                   "part between them is hashed, so related keys land on one server.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a two-character string such as \"{}\" (quote it)");
          if (!text) {
            return;
          }
          if (text->size() != 2) {
            v.error("hash_tag must be exactly two characters, e.g. \"{}\"; got " + quoted(*text));
            return;
          }
          p.routing.hash_tag = *text;
        },
        .show = [](const PoolConfig& p) {
          return p.routing.hash_tag.empty() ? std::string("none")
                                            : "\"" + p.routing.hash_tag + "\"";
        },
    },
    PoolKey{
        .name = "distribution", .type = "name", .origin = KeyOrigin::Twemproxy,
        .meaning = "How key hashes map to servers. `ketama`, `modula` and `random` are "
                   "twemproxy's; `jump`, `rendezvous` and `maglev` are mcring's.",
        .choices = &distributionNames,
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.routing.distribution, "distribution", &routing::parseDistribution,
                  distributionNames());
        },
        .show = [](const PoolConfig& p) {
          return std::string(routing::distributionName(p.routing.distribution));
        },
    },
    PoolKey{
        .name = "timeout", .type = "integer (ms)", .origin = KeyOrigin::Twemproxy,
        .meaning = "How long to wait to connect to a server, or for the next byte of its reply "
                   "while replies are owed; then the requests in flight on that connection get "
                   "`SERVER_ERROR backend timeout` and count as a failure of the server. 0 waits "
                   "forever. Default 1000 (twemproxy's is 0): with no timeout a hung or "
                   "partitioned server holds every request routed to it, and those clients, "
                   "forever, and is never ejected; a memcached that sends nothing for a second "
                   "with requests owed is down.",
        .apply = [](ValueReader& v, PoolConfig& p) { setNumber(v, p.timeout_ms, 0, kIntMax); },
        .show = [](const PoolConfig& p) { return std::to_string(p.timeout_ms); },
    },
    PoolKey{
        .name = "backlog", .type = "integer", .origin = KeyOrigin::Twemproxy,
        .meaning = "TCP listen backlog of the pool's listening socket (twemproxy's default; "
                   "the kernel caps it at net.core.somaxconn).",
        .apply = [](ValueReader& v, PoolConfig& p) { setNumber(v, p.backlog, 0, kIntMax); },
        .show = [](const PoolConfig& p) { return std::to_string(p.backlog); },
    },
    PoolKey{
        .name = "preconnect", .type = "bool", .origin = KeyOrigin::Twemproxy,
        .meaning = "Accepted for twemproxy files and ignored: mcring connects to a server on "
                   "first use either way.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.preconnect); },
        .show = [](const PoolConfig& p) { return showBool(p.preconnect); },
    },
    PoolKey{
        .name = "client_connections", .type = "integer", .origin = KeyOrigin::Twemproxy,
        .meaning = "Most client connections the pool accepts at once; one more is answered "
                   "`ERROR Too many open connections` and closed (memcached's answer). 0: "
                   "unlimited (the OS limit on open files still applies). Default 1024, "
                   "memcached's `-c` (twemproxy's is unlimited): a client that leaks connections "
                   "then meets a clear error instead of using up the process's file descriptors, "
                   "which would stop every other client's accepts and backend connects. Raise it "
                   "with the fd limit (`LimitNOFILE`, `ulimit -n`) for many clients.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.client_connections, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.client_connections); },
    },
    PoolKey{
        .name = "server_connections", .type = "integer", .origin = KeyOrigin::Twemproxy,
        .meaning = "Connections to each server, at least 1. twemproxy has one thread, so its "
                   "count is per process; mcring's is per worker thread. Pools that name the "
                   "same server with the same `timeout`, `server_connections` and "
                   "`server_auth_file`, without TLS, share these connections.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.server_connections, 1, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.server_connections); },
    },
    PoolKey{
        .name = "auto_eject_hosts", .type = "bool", .origin = KeyOrigin::Twemproxy,
        .meaning = "Take a server out of the ring after `server_failure_limit` consecutive "
                   "failures, and retry it after `server_retry_timeout`.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.auto_eject_hosts); },
        .show = [](const PoolConfig& p) { return showBool(p.auto_eject_hosts); },
    },
    PoolKey{
        .name = "server_retry_timeout", .type = "integer (ms)", .origin = KeyOrigin::Twemproxy,
        .meaning = "How long an ejected server stays out before it is tried again.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.server_retry_timeout_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.server_retry_timeout_ms); },
    },
    PoolKey{
        .name = "server_failure_limit", .type = "integer", .origin = KeyOrigin::Twemproxy,
        .meaning = "Consecutive failures that eject a server when `auto_eject_hosts` is true "
                   "(twemproxy's default).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.server_failure_limit, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.server_failure_limit); },
    },
    PoolKey{
        .name = "tcpkeepalive", .type = "bool", .origin = KeyOrigin::Twemproxy,
        .meaning = "Set SO_KEEPALIVE on accepted client connections, so a client whose host "
                   "vanished without closing is noticed (after the kernel's keepalive time, 2 h "
                   "by default) and its connection, and its `client_connections` slot, freed. "
                   "Default true, as memcached's sockets (twemproxy's is false).",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.tcpkeepalive); },
        .show = [](const PoolConfig& p) { return showBool(p.tcpkeepalive); },
    },
    PoolKey{
        .name = "reuseport", .type = "bool", .origin = KeyOrigin::Twemproxy,
        .meaning = "Set SO_REUSEPORT on the listening socket, so several processes can listen "
                   "on the same address. Off by default: with it, a second mcring (or another "
                   "program of the same user) started by mistake silently takes half the "
                   "connections.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.reuseport); },
        .show = [](const PoolConfig& p) { return showBool(p.reuseport); },
    },
    PoolKey{
        .name = "servers", .type = "list", .origin = KeyOrigin::Twemproxy, .required = true,
        .meaning = "The pool's servers, one per entry: `host:port:weight [name]` or "
                   "`/path/to/socket:weight [name]`. Weight 1..2147483647 (required, as in "
                   "twemproxy); the name, when given, replaces `host:port` in the ketama ring, so "
                   "a server can move without moving its keys. No two entries may share "
                   "`host:port` or a name. Not with `routes` (a routed pool's servers are its "
                   "routes' pools'), nor with `servers_dns` (required unless that is given).",
        .apply = &setServers,
    },
    PoolKey{
        .name = "routes", .type = "list", .origin = KeyOrigin::Mcring,
        .meaning = "This pool is a front listener whose keys go to other pools by prefix (see "
                   "[Routes](#routes)): then it has `listen` and no `servers`; its client-side "
                   "keys govern its clients, the routes' pools' server-side keys their servers.",
        .apply = &setRoutes,
    },
    PoolKey{
        .name = "servers_dns", .type = "name:port", .origin = KeyOrigin::Mcring,
        .meaning = "Discovery (see [Discovery](#discovery)): the pool's servers are the addresses "
                   "this DNS name resolves to (A and AAAA records), each a server "
                   "`address:port` with weight 1, exactly as the same `servers` entry; "
                   "re-resolved every `dns_interval`. Instead of `servers`.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a DNS name and the servers' port, 'name:port'");
          if (!text) {
            return;
          }
          std::string error;
          if (auto a = parseDnsTarget(*text, &error)) {
            p.servers_dns = *a;
          } else {
            v.error(error);
          }
        },
    },
    PoolKey{
        .name = "servers_srv", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "Discovery from SRV records (`_memcache._tcp.example.com`): each record's "
                   "target's addresses are servers `address:port` with the record's port and "
                   "weight (0 counts as 1; priorities are ignored: every record is a server). "
                   "Instead of `servers` and `servers_dns`.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("an SRV name such as '_memcache._tcp.example.com'");
          if (!text) {
            return;
          }
          std::string error;
          if (auto name = parseSrvName(*text, &error)) {
            p.servers_srv = *name;
          } else {
            v.error(error);
          }
        },
    },
    PoolKey{
        .name = "dns_resolver", .type = "address", .origin = KeyOrigin::Mcring,
        .meaning = "The DNS server `servers_dns` or `servers_srv` asks: an IP address with an optional port "
                   "(`10.0.0.10:53`, `[fd00::a]:53`). Unset: the nameservers and search domains "
                   "of /etc/resolv.conf.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("an IP address and port, 'address:port'");
          if (!text) {
            return;
          }
          std::string error;
          if (auto a = parseNameserver(*text, &error)) {
            p.dns_resolver = *a;
          } else {
            v.error(error);
          }
        },
    },
    PoolKey{
        .name = "dns_interval", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "How often `servers_dns` or `servers_srv` is resolved again, 100 or more. "
                   "Each query waits for its reply at most the smaller of this and 2000 ms, and "
                   "is tried twice.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.dns_interval_ms, 100, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.dns_interval_ms); },
    },
    PoolKey{
        .name = "dns_remove_after", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "A discovered server leaves the pool once it is missing from this many "
                   "consecutive answers (1 to 1000), so a flapping record does not move keys "
                   "back and forth. A new address joins at the first answer that has it.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.dns_remove_after, 1, 1000);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.dns_remove_after); },
    },
    PoolKey{
        .name = "redis", .type = "bool", .origin = KeyOrigin::Twemproxy,
        .meaning = "Accepted only as `false`: mcring proxies memcached only.",
        .apply = [](ValueReader& v, PoolConfig&) {
          bool redis = false;
          setBool(v, redis);
          if (redis) {
            v.error("mcring proxies memcached only; remove 'redis: true' from this pool");
          }
        },
        .show = [](const PoolConfig&) { return std::string("false"); },
    },
    PoolKey{
        .name = "redis_auth", .type = "string", .origin = KeyOrigin::Twemproxy,
        .meaning = "Refused: redis-only (mcring proxies memcached only).",
        .apply = [](ValueReader& v, PoolConfig&) {
          v.error("redis_auth is a redis-only key; mcring proxies memcached only");
        },
    },
    PoolKey{
        .name = "redis_db", .type = "integer", .origin = KeyOrigin::Twemproxy,
        .meaning = "Refused: redis-only (mcring proxies memcached only).",
        .apply = [](ValueReader& v, PoolConfig&) {
          v.error("redis_db is a redis-only key; mcring proxies memcached only");
        },
    },
    // ---------------------------------------------------------------- mcring's keys
    PoolKey{
        .name = "ketama_compat", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "With `distribution: ketama`, whose ring to reproduce bit for bit, so mcring "
                   "can replace that client or proxy without moving keys.",
        .choices = &ketamaCompatNames,
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.routing.ketama_compat, "ketama_compat", &routing::parseKetamaCompat,
                  ketamaCompatNames());
        },
        .show = [](const PoolConfig& p) {
          return std::string(routing::ketamaCompatName(p.routing.ketama_compat));
        },
    },
    PoolKey{
        .name = "item_size_max", .type = "size", .origin = KeyOrigin::Mcring,
        .meaning = "Largest value accepted from clients, in bytes or with a 1024-based suffix "
                   "(`512k`, `1m`, `1g`), from 1k to 1g; larger stores are refused without "
                   "reaching a server. Match memcached's `-I`.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a size such as 1048576, 512k or 1m");
          if (!text) {
            return;
          }
          std::string error;
          if (auto n = parseSize(*text, uint64_t{1} << 10, uint64_t{1} << 30, &error)) {
            p.item_size_max = *n;
          } else {
            v.error(error);
          }
        },
        .show = [](const PoolConfig& p) { return showSize(p.item_size_max); },
    },
    PoolKey{
        .name = "client_buffer_limit", .type = "size", .origin = KeyOrigin::Mcring,
        .meaning = "Memory budget of one client connection: reply bytes mcring holds for it "
                   "(unsent in its socket's output, or waiting behind an earlier reply, or a "
                   "multi-get's keys from several servers being put in key order). At half of it "
                   "the client is no longer read; a reply that would pass it is answered "
                   "`SERVER_ERROR out of memory writing get response` (memcached's error, counted "
                   "in `client_oom_replies` and logged) if it is waiting behind an earlier reply, "
                   "and a reply being written stops reading its backend until the client reads (a "
                   "client that reads nothing for 1 s is then closed). A multi-get over several "
                   "servers that does not fit is written in key order instead of being refused "
                   "(the servers whose keys come later are not read until their turn), so a "
                   "single `get` larger than this limit arrives whole. From 64k to 1g.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a size such as 16m");
          if (!text) {
            return;
          }
          std::string error;
          if (auto n = parseSize(*text, uint64_t{64} << 10, uint64_t{1} << 30, &error)) {
            p.client_buffer_limit = *n;
          } else {
            v.error(error);
          }
        },
        .show = [](const PoolConfig& p) { return showSize(p.client_buffer_limit); },
    },
    PoolKey{
        .name = "buffer_limit", .type = "size", .origin = KeyOrigin::Mcring,
        .meaning = "Memory budget of all the pool's clients together, split evenly between worker "
                   "threads: held and unsent reply bytes count against it. An eighth of it is "
                   "kept for clients holding less than 64 KiB, so other clients' large or slowly "
                   "read replies never make a small reply fail. A reply that would pass it is "
                   "refused as with client_buffer_limit, and while it is passed a reply being "
                   "written waits once its client has 256 KiB unsent. Requests larger than 32 KiB "
                   "being received may use a quarter of it more (beyond that such a client waits, "
                   "unread, until memory is free). From 1m to 64g.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a size such as 64m");
          if (!text) {
            return;
          }
          std::string error;
          if (auto n = parseSize(*text, uint64_t{1} << 20, uint64_t{64} << 30, &error)) {
            p.buffer_limit = *n;
          } else {
            v.error(error);
          }
        },
        .show = [](const PoolConfig& p) { return showSize(p.buffer_limit); },
    },
    PoolKey{
        .name = "allow_flush_all", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: `flush_all` (and `flush_all <delay>`) is sent to every server of the "
                   "pool. false: it is answered `CLIENT_ERROR flush_all not allowed` (nothing "
                   "with `noreply`), as memcached started with `-F`, and reaches no server "
                   "(counted in `cmd_flush_refused`). Default false: any client that can connect "
                   "could otherwise empty every server of the pool at once, the one cache "
                   "failure a consistent ring cannot soften (mcrouter refuses it unless enabled; "
                   "twemproxy never forwards it).",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.allow_flush_all); },
        .show = [](const PoolConfig& p) { return showBool(p.allow_flush_all); },
    },
    PoolKey{
        .name = "allow_dump", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: `stats cachedump` (what `memcdump` sends) and `lru_crawler metadump` "
                   "are sent to every server of the pool and their keys listed together. false: "
                   "they are answered `CLIENT_ERROR stats cachedump not allowed` and `ERROR "
                   "metadump not allowed`, as by a memcached started with `-X`; key dumps let any "
                   "client list the pool's keys.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.allow_dump); },
        .show = [](const PoolConfig& p) { return showBool(p.allow_dump); },
    },
    PoolKey{
        .name = "allow_watch", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: a client of the pool may send memcached's `watch proxyreqs` (or "
                   "`watch`) and receive one line per request of the pool's clients, from every "
                   "worker, with its key (as `log_keys` shows it), server, client and elapsed "
                   "time; a watcher that reads too slowly loses lines and is told how many. "
                   "false: `watch` is answered `CLIENT_ERROR watch not allowed`. Default false: "
                   "keys are data.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.allow_watch); },
        .show = [](const PoolConfig& p) { return showBool(p.allow_watch); },
    },
    PoolKey{
        .name = "slow_request_ms", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "A request of the pool's clients whose reply is written more than this many "
                   "ms after it was read is logged (at most 5 lines a second, the rest counted in "
                   "one \"suppressed\" line) with its command, key (as `log_keys` shows it), "
                   "server, client and elapsed time, counted in `mcring_slow_requests_total`, and "
                   "kept among the last 32 in `/slow` and the console. 0: off.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.slow_request_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.slow_request_ms); },
    },
    PoolKey{
        .name = "log_keys", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "How keys appear in the watch stream, the slow-request log and `/slow`, and "
                   "hot-key log lines: `plain` (the key; bytes outside printable ASCII, space "
                   "and backslash as `\\xNN`), `hash` (`xxh3:` and the key's 64-bit XXH3 in hex) "
                   "or `none` (`-`), whatever `hot_key_metrics` shows in /metrics and the hot-key "
                   "events.",
        .choices = [] { return std::vector<std::string_view>{"plain", "hash", "none"}; },
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.log_keys, "log_keys", &parseLogKeys, {"plain", "hash", "none"});
        },
        .show = [](const PoolConfig& p) { return std::string(logKeysName(p.log_keys)); },
    },
    PoolKey{
        .name = "coalesce_gets", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: the `get`/`gets` keys that many client requests send to one server in "
                   "one pass of the event loop go out as one `get`/`gets` line (up to 2 KB), and "
                   "the reply is split back by key. memcached answers one 16-key `get` for about "
                   "a fifth of the CPU of 16 pipelined one-key `get`s. false: each request's keys "
                   "for a server go as a line of their own.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.coalesce_gets); },
        .show = [](const PoolConfig& p) { return showBool(p.coalesce_gets); },
    },
    PoolKey{
        .name = "unavailable_reads", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "What a read answers for a key whose server is unavailable (backing off "
                   "after a failure, connect failed, connection closed with the request in "
                   "flight, timeout, protocol error). `miss`: the key is a miss (absent from a "
                   "get's VALUE list, `EN` for `mg`, not found in the binary protocol) and the "
                   "other keys of the request are served, so one dead server does not look like "
                   "a dead mcring to clients that mark a whole server failed after one "
                   "SERVER_ERROR; counted per server in `unavailable_misses`. `error`: "
                   "`SERVER_ERROR backend ...`, and a multi-get touching the server is that one "
                   "line (twemproxy's rule). Writes: see `unavailable_writes`.",
        .choices = [] { return std::vector<std::string_view>{"miss", "error"}; },
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.unavailable_reads, "unavailable_reads", &parseUnavailableReads,
                  {"miss", "error"});
        },
        .show = [](const PoolConfig& p) {
          return std::string(unavailableReadsName(p.unavailable_reads));
        },
    },
    PoolKey{
        .name = "unavailable_writes", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "What a write (storage, cas, delete, incr/decr, touch, meta ms/md/ma, their "
                   "binary forms) answers for a key whose server is unavailable. `error`: "
                   "`SERVER_ERROR backend ...`; php-memcache then marks mcring (its one server) "
                   "failed for about 15 s and npm `memcached` for 30 s, so the reads of every "
                   "key fail too, and a cache-aside client sends such a set after each miss. "
                   "`not_stored`: memcached's answer for a write it did not apply: `NOT_STORED` "
                   "(set, add, replace, append, prepend; `NS` for ms), `NOT_FOUND` (cas, "
                   "delete, incr/decr, touch; `NF`), never success, nothing for noreply; "
                   "counted per server in `unavailable_writes`. A write whose server failed "
                   "with it in flight may have been applied. Not for replicated pools "
                   "(`replicas` > 1) or a spread hot key's writes, which answer SERVER_ERROR.",
        .choices = [] { return std::vector<std::string_view>{"error", "not_stored"}; },
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.unavailable_writes, "unavailable_writes", &parseUnavailableWrites,
                  {"error", "not_stored"});
        },
        .show = [](const PoolConfig& p) {
          return std::string(unavailableWritesName(p.unavailable_writes));
        },
    },
    PoolKey{
        .name = "max_multiget_keys", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "Most keys in one `get`/`gets`/`gat`/`gats`, at least 1; a longer request is "
                   "refused.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.max_multiget_keys, 1, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.max_multiget_keys); },
    },
    PoolKey{
        .name = "client_idle_timeout", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "A client connection that sends no request for this many ms while it has "
                   "no request in flight and no reply unwritten is closed (as memcached's "
                   "`-o idle_timeout`). A partial request line counts as idle, so a slowloris "
                   "client is closed too. Checked every eighth of the timeout (10 ms to 1 s), "
                   "so a connection goes up to two checks after its timeout. 0 keeps idle "
                   "clients forever.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.client_idle_timeout_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.client_idle_timeout_ms); },
    },
    PoolKey{
        .name = "client_request_timeout", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "A client connection that has sent part of a request (a command line without "
                   "its newline, or a storage command whose data block has not all arrived) is "
                   "closed, without a reply, if the rest has not arrived this many ms after the "
                   "part was first seen: a deadline for the whole request, not a gap between "
                   "bytes, so a client that drips a byte now and then is closed too (counted in "
                   "`client_request_timeout_closed`). Time spent unread because mcring holds "
                   "back (the client's replies unread, memory for a large request) does not "
                   "count. Checked as `client_idle_timeout`: closed between the timeout and two "
                   "checks after it. 0: never. Default 30000, as a web server's header timeout: "
                   "a whole request, even a `set` of 1 MiB at 35 KB/s, arrives well within it, "
                   "while a half-sent request would otherwise hold its connection, its "
                   "`client_connections` slot and its buffered bytes for ever. Raise it with "
                   "`item_size_max` for clients on slow links.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.client_request_timeout_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.client_request_timeout_ms); },
    },
    PoolKey{
        .name = "warmup_window", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "Warm migration: for this many ms after a membership change (reload, "
                   "ejection, return), a `get`/`gets`/`gat`/`gats`/`mg` miss on a key whose "
                   "server changed is answered from its previous server, and the value is copied "
                   "to the new one (meta `ms` in add mode, flags and remaining TTL kept, so a "
                   "newer value is never overwritten). Writes and deletes of moved keys also "
                   "invalidate the previous server's copy. A second change closes the window and "
                   "opens a new one from the topology it replaced. 0 turns warm-up off.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.warmup_window_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.warmup_window_ms); },
    },
    PoolKey{
        .name = "warmup_max_inflight", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "Warm-up fetches from previous servers in flight at once, per worker thread, "
                   "at least 1; a miss beyond it is answered as a miss (counted as a skip).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.warmup_max_inflight, 1, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.warmup_max_inflight); },
    },
    // ---------------------------------------------------------------- TLS and authentication
    PoolKey{
        .name = "listen_tls", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "The `listen` address speaks TLS only (with `tls_cert` and `tls_key`); a "
                   "plaintext client there is refused by the handshake. See docs/tls.md.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.listen_tls); },
        .show = [](const PoolConfig& p) { return showBool(p.listen_tls); },
    },
    PoolKey{
        .name = "tls_listen", .type = "address", .origin = KeyOrigin::Mcring,
        .meaning = "A second listener, speaking TLS, beside the plaintext `listen` (same forms "
                   "as `listen`).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("an address 'host:port' or '/path/to/socket [mode]'");
          std::string error;
          if (!text) {
            return;
          }
          if (auto a = parseListenAddress(*text, &error)) {
            p.tls_listen = *a;
          } else {
            v.error(error);
          }
        },
    },
    PoolKey{
        .name = "tls_cert", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "PEM certificate chain of the TLS listener(s). Re-read at every reload "
                   "(SIGHUP, file change, `POST /reload`); connections already open keep the "
                   "certificate they started with. A relative path is relative to the config "
                   "file.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.tls_cert); },
    },
    PoolKey{
        .name = "tls_key", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "PEM private key of `tls_cert` (unencrypted). An unreadable key, or one "
                   "that does not match the certificate, is a config error naming the file; on "
                   "reload the previous certificate keeps serving.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.tls_key); },
    },
    PoolKey{
        .name = "tls_ca", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "PEM CA certificates that client certificates must chain to (with "
                   "`tls_verify_client`).",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.tls_ca); },
    },
    PoolKey{
        .name = "tls_verify_client", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "Mutual TLS: a client must present a certificate signed by `tls_ca`, or its "
                   "handshake fails and it is closed.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.tls_verify_client); },
        .show = [](const PoolConfig& p) { return showBool(p.tls_verify_client); },
    },
    PoolKey{
        .name = "tls_min_version", .type = "string", .origin = KeyOrigin::Mcring,
        .meaning = "Lowest TLS version accepted, by the listeners and toward TLS servers: `1.2` "
                   "or `1.3`.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("1.2 or 1.3");
          if (!text) {
            return;
          }
          if (*text != "1.2" && *text != "1.3") {
            v.error("expected 1.2 or 1.3, got " + quoted(*text));
            return;
          }
          p.tls_min_version = *text;
        },
        .show = [](const PoolConfig& p) { return p.tls_min_version; },
    },
    PoolKey{
        .name = "tls_ciphers", .type = "string", .origin = KeyOrigin::Mcring,
        .meaning = "OpenSSL cipher list for TLS 1.2, on both sides (TLS 1.3 uses OpenSSL's "
                   "suites). The default allows only forward-secret AEAD ciphers.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setString(v, p.tls_ciphers, "an OpenSSL cipher list");
        },
        .show = [](const PoolConfig& p) { return p.tls_ciphers; },
    },
    PoolKey{
        .name = "tls_handshake_timeout", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "A client of the pool's TLS listener that has not finished its TLS handshake "
                   "this many ms after it connected is closed (counted in "
                   "`client_tls_handshake_timeouts`): a deadline for the whole handshake, so a "
                   "client that sends part of a ClientHello, or drips it, cannot hold its "
                   "`client_connections` slot and tens of KiB of TLS buffers for ever. 0: never. "
                   "Default 5000: a handshake is two round trips.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.tls_handshake_timeout_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.tls_handshake_timeout_ms); },
    },
    PoolKey{
        .name = "server_tls", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "Connect to the pool's servers with TLS (memcached `-Z`). A server entry "
                   "ending in `tls=on` or `tls=off` differs from this. TLS connections are "
                   "pooled and pipelined like plaintext ones.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.server_tls); },
        .show = [](const PoolConfig& p) { return showBool(p.server_tls); },
    },
    PoolKey{
        .name = "server_tls_ca", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "PEM CAs the servers' certificates must chain to; unset, the system's "
                   "trusted CAs.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.server_tls_ca); },
    },
    PoolKey{
        .name = "server_tls_cert", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "Client certificate (PEM) mcring presents to servers that require one "
                   "(memcached `-o ssl_verify_mode=2`); with `server_tls_key`.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.server_tls_cert); },
    },
    PoolKey{
        .name = "server_tls_key", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "Private key of `server_tls_cert`.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.server_tls_key); },
    },
    PoolKey{
        .name = "server_tls_name", .type = "string", .origin = KeyOrigin::Mcring,
        .meaning = "The name every server's certificate must carry, also sent as SNI; unset, "
                   "each server's own host (a name, or an IP address matched against the "
                   "certificate's IP entries).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setString(v, p.server_tls_name, "a host name");
        },
    },
    PoolKey{
        .name = "server_tls_verify", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "Verify the servers' certificates and names. `false` encrypts without "
                   "authenticating the server (tests only).",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.server_tls_verify); },
        .show = [](const PoolConfig& p) { return showBool(p.server_tls_verify); },
    },
    PoolKey{
        .name = "client_auth_file", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "Clients must authenticate as with memcached `-Y`: their first command is "
                   "`set <any key> <flags> <exptime> <bytes>` carrying `user password`, checked "
                   "against this file's `user:password` lines; anything else first is answered "
                   "`CLIENT_ERROR unauthenticated`. Re-read at every reload. Passwords never "
                   "appear in logs, stats or `/metrics`.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.client_auth_file); },
    },
    PoolKey{
        .name = "server_auth_file", .type = "path", .origin = KeyOrigin::Mcring,
        .meaning = "mcring authenticates to the pool's servers (memcached `-Y`) with the first "
                   "`user:password` line of this file, on every connection it opens. Re-read at "
                   "every reload.",
        .apply = [](ValueReader& v, PoolConfig& p) { setFile(v, p.server_auth_file); },
    },
    PoolKey{
        .name = "hot_keys", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: each worker thread counts the pool's most requested keys (a "
                   "Space-Saving sketch of `hot_key_capacity` keys, fixed memory, about 0.1 µs a "
                   "key) over one-second windows; `GET /hotkeys` and `stats hotkeys` show them "
                   "merged. false: nothing is counted.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.hot_keys); },
        .show = [](const PoolConfig& p) { return showBool(p.hot_keys); },
    },
    PoolKey{
        .name = "hot_key_capacity", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "Keys each worker's hot-key sketch monitors, 8 to 4096 (about 280 bytes each). "
                   "Every key above 1/capacity of a window's requests is sure to be listed.",
        .apply = [](ValueReader& v, PoolConfig& p) { setNumber(v, p.hot_key_capacity, 8, 4096); },
        .show = [](const PoolConfig& p) { return std::to_string(p.hot_key_capacity); },
    },
    PoolKey{
        .name = "prefix_delimiter", .type = "character", .origin = KeyOrigin::Mcring,
        .meaning = "The byte that ends a key's prefix for `stats detail` (memcached's `-D`): a key "
                   "counts under the bytes before its first one; a key without it is not counted. "
                   "Unlike `-D`, setting it does not turn detail on (`stats detail on` does).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          std::string text;
          setString(v, text, "one character");
          if (text.size() > 1 || (text.size() == 1 && (text[0] <= ' ' || text[0] == 0x7f))) {
            v.error("expected one printable character, got \"" + text + "\"");
          } else if (text.size() == 1) {
            p.prefix_delimiter = text[0];
          }
        },
        .show = [](const PoolConfig& p) { return std::string(1, p.prefix_delimiter); },
    },
    PoolKey{
        .name = "detail_max_prefixes", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "Prefixes `stats detail` counts, 1 to 10000 (per worker, and in the merged "
                   "dump): the keys of any further prefix count on one line, `PREFIX *<d>other` "
                   "(`<d>` the delimiter, so no real prefix has that name), so random keys cannot "
                   "grow its memory (about 100 bytes a prefix a worker).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.detail_max_prefixes, 1, 10000);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.detail_max_prefixes); },
    },
    PoolKey{
        .name = "hot_key_event_percent", .type = "integer (%)", .origin = KeyOrigin::Mcring,
        .meaning = "A key whose share of the pool's requests over a window reaches this percentage "
                   "is logged and recorded as a hot-key event (and again once it has cooled "
                   "below half of it). 0: no events.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.hot_key_event_percent, 0, 100);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.hot_key_event_percent); },
    },
    PoolKey{
        .name = "hot_key_min_rate", .type = "integer (requests/s)", .origin = KeyOrigin::Mcring,
        .meaning = "A key is a hot-key event (and spread, with `hot_key_spread`) only at this "
                   "many requests a second at least, whatever its share: on an idle pool a key "
                   "read a few times a second is a large share of nothing. It cools below half "
                   "of it. 0: no minimum.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.hot_key_min_rate, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.hot_key_min_rate); },
    },
    PoolKey{
        .name = "hot_key_spread", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "0: off. 2 to 16: a key that turns hot (`hot_key_event_percent`, with "
                   "`hot_keys` on) is spread over this many servers, its own and the servers of "
                   "the salted names key#1, key#2, ...: every write of it goes to each copy, "
                   "plain reads (get, gat, mg without c) to one filled copy at random; undone "
                   "when it cools. Costs R backend writes per write of a spread key.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.hot_key_spread, 0, 16);
          if (p.hot_key_spread == 1) {
            v.error("must be 0 (off) or 2 to 16");
          }
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.hot_key_spread); },
    },
    PoolKey{
        .name = "hot_key_copy_ttl", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "With `hot_key_spread`: a copy is read for at most this many ms after it was "
                   "filled from the key's own server, then filled again (and a fill sets the "
                   "copy's TTL to at most this). This bounds how stale a copy can be when another "
                   "mcring, or a client, writes the key's own server only. 0: no bound (only when "
                   "this mcring is the pool's only writer).",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.hot_key_copy_ttl_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.hot_key_copy_ttl_ms); },
    },
    PoolKey{
        .name = "hot_key_metrics", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "How `/metrics` shows the pool's five hottest keys (`mcring_hot_key_rate`): "
                   "`off` (keys can be sensitive), `hashed` (label `key` is `xxh3:` and the "
                   "key's 64-bit XXH3 in hex) or `plain` (the key itself).",
        .choices = [] { return std::vector<std::string_view>{"off", "hashed", "plain"}; },
        .apply = [](ValueReader& v, PoolConfig& p) {
          setName(v, p.hot_key_metrics, "hot_key_metrics", &parseHotKeyMetrics,
                  {"off", "hashed", "plain"});
        },
        .show = [](const PoolConfig& p) { return std::string(hotKeyMetricsName(p.hot_key_metrics)); },
    },
    PoolKey{
        .name = "replicas", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "Servers that hold each key, 1 to 8 and at most the pool's servers: its own "
                   "server and the next distinct ones of its preference list (ketama: the next "
                   "servers clockwise on the ring; rendezvous: the next highest scores; maglev, "
                   "modula: the next slots of the table; jump and random: 1 only). 1: no "
                   "replication. Writes go to every replica, reads fail over to the next one "
                   "(README, \"Replication and failover\").",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.routing.replicas, 1, routing::kMaxReplicas);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.routing.replicas); },
    },
    PoolKey{
        .name = "replica_write_reply", .type = "name", .origin = KeyOrigin::Mcring,
        .meaning = "With `replicas` > 1, the reply a client gets to a write (sent to every "
                   "replica): `primary`, the reply of the first replica in preference order that "
                   "answered without an error (normally the primary's, sent as soon as it "
                   "arrives; the others are read in the background and only counted), or `all`, "
                   "once every replica answered, the worst reply: a failure or error over a "
                   "refusal (NOT_STORED, EXISTS, NOT_FOUND, NS, EX, NF) over a success, the "
                   "earliest replica's among equals.",
        .choices = [] { return std::vector<std::string_view>{"primary", "all"}; },
        .apply = [](ValueReader& v, PoolConfig& p) {
          auto text = v.scalar("a name");
          if (!text) {
            return;
          }
          if (*text == "primary" || *text == "all") {
            p.replica_write_all = *text == "all";
          } else {
            v.error("unknown replica_write_reply " + quoted(*text) + " (primary or all)");
          }
        },
        .show = [](const PoolConfig& p) {
          return std::string(p.replica_write_all ? "all" : "primary");
        },
    },
    PoolKey{
        .name = "read_failover_on_miss", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "With `replicas` > 1: true, a read that misses at a replica also asks the "
                   "next replica of the key (a miss costs up to `replicas` round trips). false: "
                   "only an error, a timeout, a closed connection or an unavailable server fails "
                   "a read over to the next replica.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.read_failover_on_miss); },
        .show = [](const PoolConfig& p) { return showBool(p.read_failover_on_miss); },
    },
    PoolKey{
        .name = "return_flush", .type = "bool", .origin = KeyOrigin::Mcring,
        .meaning = "true: a server that missed writes while it could not be reached (a replica "
                   "write that failed; with `auto_eject_hosts`, keys rerouted while it was "
                   "ejected) gets `flush_all` when a connection to it is next established, "
                   "before it serves any read (until then its reads go to the next replica), so "
                   "it never serves a value overwritten or deleted meanwhile; then for "
                   "`return_window` a miss there asks the next replica. Logged and counted "
                   "(`return_flushes`). false: a returning server serves what it kept.",
        .apply = [](ValueReader& v, PoolConfig& p) { setBool(v, p.return_flush); },
        .show = [](const PoolConfig& p) { return showBool(p.return_flush); },
    },
    PoolKey{
        .name = "return_window", .type = "integer (ms)", .origin = KeyOrigin::Mcring,
        .meaning = "With `return_flush` and `replicas` > 1: for this long after a returning "
                   "server was flushed, a miss there asks the key's next replica. 0: no window.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.return_window_ms, 0, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.return_window_ms); },
    },
    PoolKey{
        .name = "maglev_table_size", .type = "integer", .origin = KeyOrigin::Mcring,
        .meaning = "With `distribution: maglev`, the lookup table size: a prime larger than the "
                   "number of servers.",
        .apply = [](ValueReader& v, PoolConfig& p) {
          setNumber(v, p.routing.maglev_table_size, 1, kIntMax);
        },
        .show = [](const PoolConfig& p) { return std::to_string(p.routing.maglev_table_size); },
    },
};
// clang-format on

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Markdown table cells may not contain '|' or newlines.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  }
  return out;
}

}  // namespace

std::span<const PoolKey> poolKeys() {
  return kPoolKeys;
}

const PoolKey* findPoolKey(std::string_view name) {
  for (const PoolKey& key : kPoolKeys) {
    if (key.name == name) {
      return &key;
    }
  }
  return nullptr;
}

std::string_view closestName(std::string_view name, std::span<const std::string_view> candidates) {
  // Short names tolerate one typo, longer ones up to three.
  size_t limit = name.size() <= 4 ? 1 : name.size() <= 8 ? 2 : 3;
  // On a tie, prefer a candidate the name is a subsequence of: a left-out character (often an
  // underscore) is the likeliest typo, so "fnv1a64" means "fnv1a_64", not "fnv1_64".
  auto omits = [name](std::string_view candidate) {
    size_t i = 0;
    for (char c : candidate) {
      i += i < name.size() && name[i] == c ? 1 : 0;
    }
    return i == name.size();
  };
  std::string_view best;
  size_t best_distance = limit + 1;
  for (std::string_view candidate : candidates) {
    size_t d = editDistance(name, candidate);
    if (d < best_distance || (d == best_distance && !omits(best) && omits(candidate))) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string poolKeyReferenceMarkdown() {
  const PoolConfig defaults;
  std::string out =
      "| key | type | default | from | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const PoolKey& key : kPoolKeys) {
    std::string def = key.required ? "required" : key.show ? "`" + key.show(defaults) + "`" : "—";
    std::string meaning(key.meaning);
    if (key.choices) {
      meaning += " One of: ";
      std::string list;
      for (auto n : key.choices()) {
        list += list.empty() ? "" : ", ";
        list += "`" + std::string(n) + "`";
      }
      meaning += list + ".";
    }
    out += "| `" + std::string(key.name) + "` | " + std::string(key.type) + " | " + def + " | " +
           (key.origin == KeyOrigin::Twemproxy ? "twemproxy" : "mcring") + " | " + cell(meaning) +
           " |\n";
  }
  return out;
}

}  // namespace mcring::config
