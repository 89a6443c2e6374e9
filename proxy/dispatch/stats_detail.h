// memcached's `stats detail on|off|dump` for a pool (its prefix stats: stats/prefix_stats.h):
// which requests count, and the command's answers.
#pragma once

#include <string>
#include <string_view>

#include "proxy/backend/pool_runtime.h"
#include "proxy/protocol/command.h"

namespace mcring::core {

// A keyed request's count, as memcached counts it: get/gets/gat/gats keys as gets, the classic
// storage commands as sets, delete as a delete; nothing else (meta commands, incr/decr, touch).
// Hits are counted where a VALUE arrives (backend_connection.cc, warmup.cc).
void countDetail(PoolRuntime& pool, protocol::Command command, std::string_view key);

// args: what follows "stats " ("detail", "detail on", ...). true if it is a detail command, with
// the answer in *out: OK to on|off (words after it ignored, as memcached does), the dump, or
// memcached's usage error.
bool answerStatsDetail(PoolRuntime& pool, std::string_view args, std::string* out);

}  // namespace mcring::core
