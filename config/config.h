// The configuration as a validated, immutable value: what a YAML file says, nothing more.
//
// Parsing and validation live in config_loader.*; this header is the schema. twemproxy's pool keys
// keep twemproxy's meaning and defaults; mcring's own keys sit beside them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::config {

// A position in the config file, for error messages (1-based; 0 when unknown).
struct Mark {
  int line = 0;
  int column = 0;
};

// A listen or server address: host:port, or a unix socket path (with an optional mode for
// listeners, as twemproxy's "/path/sock 0666").
struct Address {
  std::string host;  // empty for unix sockets
  uint16_t port = 0;
  std::string unix_path;
  uint32_t unix_mode = 0;  // 0: not given
  bool isUnix() const { return !unix_path.empty(); }
  std::string toString() const;  // "127.0.0.1:11211" or "/path/sock"
};

struct ServerConfig {
  Address address;
  routing::ServerSpec spec;  // what the router sees: host, port, weight, name
  Mark mark;
  // "tls=on" / "tls=off" after the entry: this server's TLS differs from the pool's server_tls.
  std::optional<bool> tls;
  // "host:port" or the unix path: the server's identity, stable across reloads.
  std::string identity() const { return address.toString(); }
  // The name when given, otherwise the identity (labels, logs).
  std::string displayName() const { return spec.name.empty() ? identity() : spec.name; }
};

// How /metrics shows a pool's hottest keys: not at all (keys can be sensitive), as a hash of
// the key, or as the key itself.
enum class HotKeyMetrics { Off, Hashed, Plain };
std::optional<HotKeyMetrics> parseHotKeyMetrics(std::string_view name);
std::string_view hotKeyMetricsName(HotKeyMetrics m);

// How keys appear in the watch stream, the slow-request log and hot-key log lines (log_keys).
enum class LogKeys { Plain, Hash, None };
std::optional<LogKeys> parseLogKeys(std::string_view name);
std::string_view logKeysName(LogKeys k);

// What a read (get/gets/gat/gats, mg) answers for a key whose server is unavailable (backing
// off, connect failed, closed with the request in flight, timed out, protocol error): a miss,
// the other keys served (mcring looks like one server to its clients, and many clients mark a
// whole server dead after one SERVER_ERROR), or the backend's SERVER_ERROR.
enum class UnavailableReads { Miss, Error };
std::optional<UnavailableReads> parseUnavailableReads(std::string_view name);
std::string_view unavailableReadsName(UnavailableReads m);

// What a write answers for a key whose server is unavailable: the backend's SERVER_ERROR (the
// default), or memcached's answer for a write it did not apply (NOT_STORED, NOT_FOUND...), which
// clients that mark a whole server dead after one SERVER_ERROR take as an ordinary outcome.
enum class UnavailableWrites { Error, NotStored };
std::optional<UnavailableWrites> parseUnavailableWrites(std::string_view name);
std::string_view unavailableWritesName(UnavailableWrites m);

// Routes (docs/configuration.md, "Routes"): a listener's keys go to several pools by prefix.
// A copy of a route's requests sent to another pool, whose replies are only compared.
struct ShadowConfig {
  std::string pool;
  uint32_t percent = 100;    // of keys, chosen by key hash: a key is always or never shadowed
  bool writes_only = false;  // mirror only writes (no agreement is measured then)
  Mark mark;                 // of shadow's `pool`
};

// A token bucket for the whole process: beyond it a request is refused at once.
struct RateLimitConfig {
  uint32_t requests_per_second = 0;
  uint32_t burst = 0;  // 0: requests_per_second (one second's worth)
};

struct RouteConfig {
  std::string prefix;  // the key prefix this route takes (longest match wins); "" for default
  bool is_default = false;
  std::string pool;  // the pool its keys go to (a pool with servers and no routes)
  std::optional<ShadowConfig> shadow;
  uint32_t max_ttl = 0;               // seconds; 0: no cap. exptime 0 or above becomes it
  std::vector<std::string> failover;  // pools tried in order on error, timeout, unavailable
  bool failover_on_miss = false;      // ...and on a miss
  std::optional<RateLimitConfig> rate_limit;
  Mark mark;
  Mark pool_mark;                    // of `pool` (or `default`), for errors about that pool
  std::vector<Mark> failover_marks;  // parallel to failover
  // How stats, metrics and logs name it: the prefix, or "default".
  std::string name() const { return is_default ? std::string("default") : prefix; }
};

struct PoolConfig {
  std::string name;
  Mark mark;

  // --- twemproxy keys (same meaning and defaults) ---
  Address listen;
  routing::RouterOptions routing;  // hash, hash_tag, distribution (+ mcring's ketama_compat, ...)
  // twemproxy waits forever (0); a hung server would then hold its clients' requests forever.
  uint32_t timeout_ms = 1000;
  int backlog = 512;
  bool preconnect = false;
  uint32_t client_connections = 1024;  // memcached's -c; 0: unlimited
  uint32_t server_connections = 1;     // per worker thread, per server
  bool auto_eject_hosts = false;
  uint32_t server_retry_timeout_ms = 30000;
  uint32_t server_failure_limit = 2;
  bool tcpkeepalive = true;  // memcached's sockets have it: a vanished client frees its slot
  bool reuseport = false;
  std::vector<ServerConfig> servers;

  // --- mcring's own keys ---
  uint64_t item_size_max = 1024 * 1024;  // largest value accepted from clients
  // Memory budget (docs/design.md): reply and request bytes one client may have buffered in
  // mcring, and all clients of the pool together (split evenly between worker threads).
  uint64_t client_buffer_limit = 16 * 1024 * 1024;
  uint64_t buffer_limit = 64 * 1024 * 1024;
  bool allow_flush_all = false;      // false: flush_all answers an error (memcached -F)
  bool allow_dump = false;           // true: `stats cachedump` lists the servers' keys
  bool allow_watch = false;          // true: `watch` streams the pool's requests (keys) to a client
  uint32_t slow_request_ms = 0;      // a request slower than this is logged and counted; 0: off
  LogKeys log_keys = LogKeys::Hash;  // keys in the watch stream, slow log, hot-key log lines
  bool coalesce_gets = true;         // one get line per server per loop pass
  // A read of a key whose server is unavailable: a miss (default) or SERVER_ERROR.
  UnavailableReads unavailable_reads = UnavailableReads::Miss;
  // A write of a key whose server is unavailable: SERVER_ERROR (default) or not stored/found.
  UnavailableWrites unavailable_writes = UnavailableWrites::Error;
  uint32_t max_multiget_keys = 100000;  // keys in one get/gets/gat/gats
  // A client with nothing outstanding that sends no request for this long is closed. 0: never.
  uint32_t client_idle_timeout_ms = 0;
  // A client that sent part of a request is closed if the rest has not arrived this long after
  // the part was first seen. 0: never.
  uint32_t client_request_timeout_ms = 30000;
  // A client of a TLS listener that has not finished its handshake this long after it connected
  // is closed. 0: never.
  uint32_t tls_handshake_timeout_ms = 5000;
  // Warm migration: for this long after a membership change, a miss on a key whose server
  // changed is answered from its previous server and copied to the new one. 0: off.
  uint32_t warmup_window_ms = 0;
  uint32_t warmup_max_inflight = 1000;  // per worker thread; beyond it a miss is a miss
  // `stats detail` (stats/prefix_stats.h): a key's prefix ends at this byte (memcached's -D);
  // prefixes per table, the rest counting on one overflow line.
  char prefix_delimiter = ':';
  uint32_t detail_max_prefixes = 1000;
  // Hot keys (stats/hot_key_sketch.h): each worker counts the pool's most requested keys.
  bool hot_keys = true;
  uint32_t hot_key_capacity = 128;      // keys each worker's sketch monitors
  uint32_t hot_key_event_percent = 10;  // a key above this share of requests is an event; 0: none
  // ...and at this many requests per second at least (a few requests a second on an idle pool
  // are a large share of nothing).
  uint32_t hot_key_min_rate = 100;
  // Hot-key spread (docs/design.md): a hot key's copies, 0 = off, else 2..16.
  uint32_t hot_key_spread = 0;
  // A copy is read for at most this long after its fill (bounds staleness across proxies).
  uint32_t hot_key_copy_ttl_ms = 10000;
  HotKeyMetrics hot_key_metrics = HotKeyMetrics::Off;  // top keys as /metrics series
  // Replication (routing.replicas > 1; docs/design.md, "Replication"). The client's reply to a
  // write sent to every replica: the first replica's, in preference order, that answered
  // (false), or the worst of all of them once all answered (true: `replica_write_reply: all`).
  bool replica_write_all = false;
  // A read that misses at a replica also asks the next one (MissFailoverRoute).
  bool read_failover_on_miss = false;
  // A server that missed writes (a replica write failed, or its keys were rerouted while it was
  // ejected) is flushed (flush_all) when a connection to it is next established, before it
  // serves a read; for return_window_ms after that a miss there asks the next replica.
  bool return_flush = true;
  uint32_t return_window_ms = 30000;

  // Discovery (docs/configuration.md, "Discovery"): the servers are the addresses a DNS name
  // resolves to (A and AAAA), each `address:port` with weight 1, re-resolved every
  // dns_interval_ms on the main thread. `servers` is then empty as loaded; control fills it
  // from the last good answer before the config is built into a snapshot.
  std::optional<Address> servers_dns;  // host: the name; port: the servers' port
  // ...or an SRV name ("_memcache._tcp.example.com"): each record's target's addresses, with the
  // record's port and weight. "" = none.
  std::string servers_srv;
  std::optional<Address> dns_resolver;  // an IP address and port; unset: the system's resolv.conf
  uint32_t dns_interval_ms = 5000;
  // A server missing from this many consecutive answers leaves the pool.
  uint32_t dns_remove_after = 3;
  bool discovered() const { return servers_dns.has_value() || !servers_srv.empty(); }

  // Routes: this pool is a front listener whose keys go to other pools (then it has no
  // servers of its own). Empty: the pool serves its own servers, as in twemproxy.
  std::vector<RouteConfig> routes;
  bool routed() const { return !routes.empty(); }
  // `listen` was given: a pool only routed to may have none.
  bool listens = true;
  // --- TLS and authentication (docs/tls.md). Paths are as written, or made absolute against
  // the config file's directory. Files are read when the config is loaded or reloaded. ---
  bool listen_tls = false;            // `listen` speaks TLS (only TLS)
  std::optional<Address> tls_listen;  // a TLS listener beside the plaintext `listen`
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;              // CAs client certificates must chain to
  bool tls_verify_client = false;  // mutual TLS: a client without a valid certificate is refused
  std::string tls_min_version = "1.2";  // "1.2" or "1.3"
  // OpenSSL cipher list for TLS 1.2 (TLS 1.3's suites are OpenSSL's defaults): forward secrecy
  // and AEAD only.
  std::string tls_ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM";
  bool server_tls = false;      // connect to the servers with TLS (a server's tls= differs)
  std::string server_tls_ca;    // "" = the system's trusted CAs
  std::string server_tls_cert;  // client certificate for servers that require one
  std::string server_tls_key;
  std::string server_tls_name;  // name verified and sent as SNI ("" = each server's host)
  bool server_tls_verify = true;
  std::string client_auth_file;  // clients must authenticate (memcached's -Y file format)
  std::string server_auth_file;  // mcring authenticates to the servers (its first line)

  bool tlsListening() const { return listen_tls || tls_listen.has_value(); }
  bool serverUsesTls(const ServerConfig& s) const { return s.tls.value_or(server_tls); }
  bool anyServerTls() const {
    for (const auto& s : servers) {
      if (serverUsesTls(s)) {
        return true;
      }
    }
    return false;
  }
};

struct Config {
  std::string path;    // the file it came from ("<string>" in tests)
  std::string digest;  // of the file's bytes: an unchanged file reloads as a no-op
  std::vector<PoolConfig> pools;
};

// One validation error: "FILE:LINE:COL: pool 'alpha': servers[2]: message".
struct ConfigError {
  std::string file;
  Mark mark;
  std::string context;  // "pool 'alpha': servers[2]" (may be empty)
  std::string message;
  std::string toString() const;
};

struct LoadResult {
  std::optional<Config> config;     // set only when errors is empty
  std::vector<ConfigError> errors;  // all of them, not only the first
  bool ok() const { return errors.empty(); }
};

LoadResult loadConfigFile(const std::string& path);
LoadResult loadConfigString(const std::string& yaml, const std::string& name = "<string>");

}  // namespace mcring::config
