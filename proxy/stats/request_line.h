// One finished request as the watch stream and the slow-request log write it: memcached's
// `watch proxyreqs` line, the key as `log_keys` shows it, and the line that tells a watcher
// how many lines it lost. Pure code over strings, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mcring::stats {

// How keys appear in logs and the watch stream (the pool's `log_keys`).
enum class KeyShown : uint8_t {
  Plain,  // the key, bytes outside printable ASCII (and space, backslash) as \xNN
  Hash,   // "xxh3:" and the key's 64-bit XXH3 in hex (the hot-key logs' form)
  None,   // "-"
};

// Appends `key` as `mode` shows it; never a raw byte outside 0x21..0x7e.
void appendShownKey(std::string& out, std::string_view key, KeyShown mode);
std::string shownKey(std::string_view key, KeyShown mode);

// What one request was, once its reply was written.
struct RequestRecord {
  std::string_view verb;     // the command's wire name
  std::string_view key;      // its first key (raw bytes; shown per KeyShown)
  uint32_t keys = 0;         // keys in the request (a multi-get: more than one)
  std::string_view status;   // the first token of its reply ("-": none, e.g. noreply)
  std::string_view backend;  // host:port of the server it went to ("-": none)
  std::string_view client;   // the client's address
  std::string_view route;    // a routed listener's route ("": not routed)
  uint64_t elapsed_us = 0;   // from dispatch to its reply being written
};

// memcached's `ts=<sec>.<usec> gid=<n> type=proxy_req ...` line with mcring's fields:
// `elapsed=<µs> cmd=<verb> key=<key> [keys=<n>] status=<s> be=<host:port> client=<addr>
// [route=<name>]`, ending in "\r\n" like every line memcached writes to a watcher.
void appendProxyReqLine(std::string& out, int64_t unix_us, uint64_t gid, const RequestRecord& r,
                        KeyShown mode);
// memcached's `ts=... gid=... type=eventsskipped skipped=<n>`: lines a watcher lost.
void appendEventsSkippedLine(std::string& out, int64_t unix_us, uint64_t gid, uint64_t skipped);

// The first token of a reply's first line (at most kStatusMax bytes, printable ASCII only;
// "" if `reply_start` holds none), e.g. "STORED", "VALUE", "END", "HD", "SERVER_ERROR".
inline constexpr size_t kStatusMax = 15;
std::string_view replyStatus(std::string_view reply_start);

}  // namespace mcring::stats
