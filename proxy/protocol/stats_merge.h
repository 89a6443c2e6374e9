// memcached's stats views for a pool: which `stats <args>` ask the servers, and how the servers'
// answers become one reply in memcached's format (STAT lines, then END), as clients, memcstat and
// exporters parse it. Pure code over bytes; the proxy fetches the answers (dispatch/stats_views.h).
//
// How each view is combined (README, "Stats"):
//  - `stats`: memcached's fields summed over the servers (curr_items, bytes, limit_maxbytes,
//    evictions, get_hits, cmd_get, ...), except the fields of the process and its client
//    connections, which are the proxy's own (kProxyFields), and `version`, the pool's memcached
//    version; then the proxy's own counters, prefixed `mcring_` where memcached has a field of
//    that name; then how many servers answered.
//  - `stats items` / `stats slabs`: summed per slab class (ages: the oldest); `active_slabs` is
//    the number of classes in the merged view.
//  - `stats settings`: the first server that answered, as it printed it.
//  - `stats sizes`: summed per size.
//  - `stats conns`: every server's lines, each name prefixed by the server's position in the
//    pool (`STAT 1.24:addr ...`), since connection ids repeat across servers.
//  - `stats cachedump <class> <limit>`: every server's ITEM lines, in pool order.
//  - `version`: the lowest version among the servers, as memcached prints it.
//
// Bounds: a merge holds the servers' answers (as views into them) and, for the views it sums, one
// entry per distinct name, nothing per line. A server's answer of more lines than the view's
// bound (maxAnswerLines), or a merge of more than kMaxStatsNames distinct names, makes the reply
// one error line (statsTooLargeLine) instead: memcached's own views have a few hundred lines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcring::protocol {

enum class StatsView : uint8_t {
  General,
  Settings,
  Items,
  Slabs,
  Sizes,
  Conns,
  CacheDump,
  Version
};

// The server view `stats <args>` asks for (args without surrounding spaces), or nullopt for
// anything else (the proxy's own views, or arguments memcached does not know).
std::optional<StatsView> statsViewOf(std::string_view args);

// The proxy's own stats, in order, named as the proxy names them.
using StatList = std::vector<std::pair<std::string, std::string>>;

// One server's answer: its whole reply (lines ending in "\r\n", up to and including END, the
// VERSION line or an error line), or nullopt if it did not answer (down, failed, too slow).
using ServerAnswer = std::optional<std::string_view>;

// Lines of one server's answer a merge takes: `stats`, `stats settings`, `items`, `slabs` and
// `sizes` (memcached 1.6 prints about 90, 80, 21 per slab class of 63, 16 per class, and one per
// 32-byte size bucket that holds items: at most 32,769 with -I 1m), and views it only passes on,
// `stats conns` (4 or 5 lines per connection: 100,000 connections) and `stats cachedump`
// (memcached stops at 2 MB, some 50,000 lines).
inline constexpr uint32_t kMaxStatsLines = 100000;
inline constexpr uint32_t kMaxListedLines = 500000;
// Distinct names in one merged view (its working memory: about 100 bytes a name).
inline constexpr uint32_t kMaxStatsNames = 100000;
uint32_t maxAnswerLines(StatsView view);
// The one-line reply for answers out of bounds: "SERVER_ERROR stats answer too large: <what>".
std::string statsTooLargeLine(std::string_view what);

struct MergedStats {
  std::string reply;       // the client's reply, END included
  uint32_t answered = 0;   // servers whose answer went into it
  uint32_t failed = 0;     // servers skipped: no answer, or an error line
  std::string version;     // the lowest memcached version among the answers; empty if none
  bool too_large = false;  // an answer or the merge passed a bound: reply is statsTooLargeLine
};

// Combines the servers' answers (one per server, in pool order) to `view`. `own` is used by
// General only; `fallback_version` is reported when no server told its version.
MergedStats mergeStats(StatsView view, const std::vector<ServerAnswer>& answers,
                       const StatList& own, std::string_view fallback_version);

// -1, 0, 1 as version a is lower than, equal to or higher than b, comparing the dotted numbers
// at their front ("1.6.9" < "1.6.18"); what follows them is ignored.
int compareVersions(std::string_view a, std::string_view b);

}  // namespace mcring::protocol
