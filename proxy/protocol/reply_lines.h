// The reply lines mcring writes itself rather than forwards from a backend, in memcached's exact
// bytes: one place, so a line the proxy composes cannot drift from memcached's.
#pragma once

#include <string_view>

namespace mcring::protocol {

inline constexpr std::string_view kEndLine = "END\r\n";
inline constexpr std::string_view kOkLine = "OK\r\n";
inline constexpr std::string_view kDeletedLine = "DELETED\r\n";
inline constexpr std::string_view kNotFoundLine = "NOT_FOUND\r\n";
inline constexpr std::string_view kNotStoredLine = "NOT_STORED\r\n";
inline constexpr std::string_view kMetaNoopLine = "MN\r\n";
// memcached's reply when it cannot allocate the response to a get (mcring: the memory budget).
inline constexpr std::string_view kOutOfMemoryLine =
    "SERVER_ERROR out of memory writing get response\r\n";
inline constexpr std::string_view kTooLargeLine = "SERVER_ERROR object too large for cache\r\n";
inline constexpr std::string_view kFlushAllRefusedLine = "CLIENT_ERROR flush_all not allowed\r\n";
// memcached started with -X (dumping disabled); mcring: the pool's allow_dump is false.
inline constexpr std::string_view kCacheDumpRefusedLine =
    "CLIENT_ERROR stats cachedump not allowed\r\n";
// memcached -X's answer to `lru_crawler metadump`.
inline constexpr std::string_view kMetadumpRefusedLine = "ERROR metadump not allowed\r\n";
// mcring: `watch` on a pool without allow_watch (refused like flush_all under -F).
inline constexpr std::string_view kWatchRefusedLine = "CLIENT_ERROR watch not allowed\r\n";
// memcached's answer to a `watch` past its 20 watchers.
inline constexpr std::string_view kWatchTooManyLine =
    "WATCHER_TOO_MANY log watcher limit reached\r\n";

}  // namespace mcring::protocol
