// Merging the servers' stats answers into one memcached-format reply.
#include "proxy/protocol/stats_merge.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>

namespace mcring::protocol {
namespace {

// memcached 1.6.18's `stats` fields, in its order: the proxy's own counters with one of these
// names are prefixed `mcring_`, so a name always means what memcached means by it.
constexpr std::string_view kMemcachedGeneral[] = {
    "pid",
    "uptime",
    "time",
    "version",
    "libevent",
    "pointer_size",
    "rusage_user",
    "rusage_system",
    "max_connections",
    "curr_connections",
    "total_connections",
    "rejected_connections",
    "connection_structures",
    "response_obj_oom",
    "response_obj_count",
    "response_obj_bytes",
    "read_buf_count",
    "read_buf_bytes",
    "read_buf_bytes_free",
    "read_buf_oom",
    "reserved_fds",
    "cmd_get",
    "cmd_set",
    "cmd_flush",
    "cmd_touch",
    "cmd_meta",
    "get_hits",
    "get_misses",
    "get_expired",
    "get_flushed",
    "delete_misses",
    "delete_hits",
    "incr_misses",
    "incr_hits",
    "decr_misses",
    "decr_hits",
    "cas_misses",
    "cas_hits",
    "cas_badval",
    "touch_hits",
    "touch_misses",
    "store_too_large",
    "store_no_memory",
    "auth_cmds",
    "auth_errors",
    "bytes_read",
    "bytes_written",
    "limit_maxbytes",
    "accepting_conns",
    "listen_disabled_num",
    "time_in_listen_disabled_us",
    "threads",
    "conn_yields",
    "hash_power_level",
    "hash_bytes",
    "hash_is_expanding",
    "slab_reassign_rescues",
    "slab_reassign_chunk_rescues",
    "slab_reassign_evictions_nomem",
    "slab_reassign_inline_reclaim",
    "slab_reassign_busy_items",
    "slab_reassign_busy_deletes",
    "slab_reassign_running",
    "slabs_moved",
    "lru_crawler_running",
    "lru_crawler_starts",
    "lru_maintainer_juggles",
    "malloc_fails",
    "log_worker_dropped",
    "log_worker_written",
    "log_watcher_skipped",
    "log_watcher_sent",
    "log_watchers",
    "unexpected_napi_ids",
    "round_robin_fallback",
    "bytes",
    "curr_items",
    "total_items",
    "slab_global_page_pool",
    "expired_unfetched",
    "evicted_unfetched",
    "evicted_active",
    "evictions",
    "reclaimed",
    "crawler_reclaimed",
    "crawler_items_checked",
    "lrutail_reflocked",
    "moves_to_cold",
    "moves_to_warm",
    "moves_within_lru",
    "direct_reclaims",
    "lru_bumps_dropped",
};

// Fields about the process a client talks to and its client connections: the proxy's own.
constexpr std::string_view kProxyFields[] = {
    "pid",
    "uptime",
    "time",
    "pointer_size",
    "rusage_user",
    "rusage_system",
    "threads",
    "max_connections",
    "curr_connections",
    "total_connections",
    "rejected_connections",
    "bytes_read",
    "bytes_written",
};

// Flags and levels, not amounts: the pool's is the highest (or, accepting_conns, the lowest).
constexpr std::string_view kMaxFields[] = {"hash_power_level", "hash_is_expanding",
                                           "slab_reassign_running", "lru_crawler_running"};
constexpr std::string_view kMinFields[] = {"accepting_conns"};
// Per slab class in `stats items`: ages (the oldest), not amounts.
constexpr std::string_view kItemsMaxFields[] = {"age", "age_hot", "age_warm", "evicted_time"};
// Per slab class in `stats slabs`: the class's geometry, the same on servers of one config.
constexpr std::string_view kSlabsMaxFields[] = {"chunk_size", "chunks_per_page"};

template <size_t N>
bool among(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

struct Stat {
  std::string_view name;
  std::string_view value;
};

enum class AnswerCheck : uint8_t { Ok, Invalid, TooManyLines };

// Whether `reply` is a complete `STAT ... END` answer (not an error line, nothing after END) of
// at most max_lines STAT lines; *lines counts them.
AnswerCheck checkStatAnswer(std::string_view reply, uint32_t max_lines, uint32_t* lines) {
  *lines = 0;
  while (!reply.empty()) {
    const size_t eol = reply.find("\r\n");
    if (eol == std::string_view::npos) {
      return AnswerCheck::Invalid;
    }
    const std::string_view line = reply.substr(0, eol);
    reply.remove_prefix(eol + 2);
    if (line == "END") {
      return reply.empty() ? AnswerCheck::Ok : AnswerCheck::Invalid;
    }
    if (!line.starts_with("STAT ")) {
      return AnswerCheck::Invalid;
    }
    if (++*lines > max_lines) {
      return AnswerCheck::TooManyLines;
    }
  }
  return AnswerCheck::Invalid;
}

// Calls fn(Stat) for each STAT line of an answer checkStatAnswer accepted: the views point into
// the answer, nothing is kept per line.
template <typename Fn>
void forEachStat(std::string_view reply, Fn&& fn) {
  for (;;) {
    const size_t eol = reply.find("\r\n");
    std::string_view line = reply.substr(0, eol);
    if (line == "END" || eol == std::string_view::npos) {
      return;
    }
    reply.remove_prefix(eol + 2);
    line.remove_prefix(5);
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) {
      fn(Stat{line, {}});
    } else {
      fn(Stat{line.substr(0, sp), line.substr(sp + 1)});
    }
  }
}

std::optional<uint64_t> unsignedOf(std::string_view v) {
  if (v.empty() || v.size() > 20) {
    return std::nullopt;
  }
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) {
      return std::nullopt;
    }
    n = n * 10 + d;
  }
  return n;
}

enum class Combine : uint8_t { Sum, Max, Min, First };

// One field over the servers that have it: amounts add up (saturating), flags and ages take the
// max or min; a value that is not a number (a string, a float) is the first server's. The first
// value is a view into that server's answer, which outlives the merge.
class Field {
 public:
  explicit Field(Combine how) : how_(how) {}
  void add(std::string_view value) {
    if (!seen_) {
      first_ = value;
      seen_ = true;
    }
    const auto n = unsignedOf(value);
    if (!n) {
      numeric_ = false;
      return;
    }
    if (!have_) {
      acc_ = *n;
      have_ = true;
      return;
    }
    switch (how_) {
      case Combine::Sum:
        acc_ = acc_ > UINT64_MAX - *n ? UINT64_MAX : acc_ + *n;
        break;
      case Combine::Max:
        acc_ = std::max(acc_, *n);
        break;
      case Combine::Min:
        acc_ = std::min(acc_, *n);
        break;
      case Combine::First:
        break;
    }
  }
  std::string value() const {
    return numeric_ && have_ && how_ != Combine::First ? std::to_string(acc_) : std::string(first_);
  }

 private:
  Combine how_;
  bool seen_ = false;
  bool numeric_ = true;
  bool have_ = false;
  uint64_t acc_ = 0;
  std::string_view first_;
};

// The distinct names one merge may still take, over all its FieldSets (kMaxStatsNames).
struct NameBudget {
  uint32_t left = kMaxStatsNames;
  bool exhausted = false;
};

// Fields in first-seen order, merged over the servers; names are views into the answers.
class FieldSet {
 public:
  explicit FieldSet(NameBudget* budget) : budget_(budget) {}
  // The field called `name`, created if new; nullptr once the merge holds kMaxStatsNames names.
  Field* at(std::string_view name, Combine how) {
    auto it = index_.find(name);
    if (it != index_.end()) {
      return &fields_[it->second].second;
    }
    if (budget_->left == 0) {
      budget_->exhausted = true;
      return nullptr;
    }
    --budget_->left;
    index_.emplace(name, static_cast<uint32_t>(fields_.size()));
    fields_.emplace_back(name, Field(how));
    return &fields_.back().second;
  }
  bool has(std::string_view name) const { return index_.count(name) > 0; }
  const Field* find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &fields_[it->second].second;
  }
  const std::vector<std::pair<std::string_view, Field>>& fields() const { return fields_; }

 private:
  NameBudget* budget_;
  std::unordered_map<std::string_view, uint32_t> index_;
  std::vector<std::pair<std::string_view, Field>> fields_;
};

void statLine(std::string* out, std::string_view name, std::string_view value) {
  out->append("STAT ").append(name).append(" ").append(value).append("\r\n");
}

// "<digits><rest>": the class id and what follows the digits, or nullopt.
std::optional<std::pair<uint32_t, std::string_view>> classPrefix(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && i < 10 && s[i] >= '0' && s[i] <= '9') {
    ++i;
  }
  if (i == 0 || i >= s.size() || s[i] != ':') {
    return std::nullopt;
  }
  return std::make_pair(static_cast<uint32_t>(*unsignedOf(s.substr(0, i))), s.substr(i + 1));
}

// The answers that are complete STAT ... END answers, counting the rest as failed.
struct Parsed {
  std::vector<std::string_view> servers;  // one per answering server, in pool order
  std::vector<size_t> positions;          // their positions in the pool
  uint64_t lines = 0;                     // STAT lines in all
  bool too_many_lines = false;            // some server's answer passed the view's bound
};

Parsed parseAll(const std::vector<ServerAnswer>& answers, uint32_t max_lines, MergedStats* m) {
  Parsed p;
  for (size_t i = 0; i < answers.size(); ++i) {
    uint32_t lines = 0;
    const AnswerCheck check =
        answers[i] ? checkStatAnswer(*answers[i], max_lines, &lines) : AnswerCheck::Invalid;
    if (check == AnswerCheck::Ok) {
      p.servers.push_back(*answers[i]);
      p.positions.push_back(i);
      p.lines += lines;
      ++m->answered;
    } else {
      p.too_many_lines = p.too_many_lines || check == AnswerCheck::TooManyLines;
      ++m->failed;
    }
  }
  return p;
}

void mergeGeneral(const Parsed& p, const StatList& own, std::string_view fallback_version,
                  NameBudget* budget, MergedStats* m) {
  FieldSet pool(budget);
  std::string_view version;
  for (std::string_view server : p.servers) {
    forEachStat(server, [&](const Stat& s) {
      if (s.name == "version") {
        if (version.empty() || compareVersions(s.value, version) < 0) {
          version = s.value;
        }
        return;
      }
      Combine how = among(kMaxFields, s.name)   ? Combine::Max
                    : among(kMinFields, s.name) ? Combine::Min
                                                : Combine::Sum;
      if (Field* f = pool.at(s.name, how)) {
        f->add(s.value);
      }
    });
  }
  if (budget->exhausted) {
    return;
  }
  m->version = std::string(version);
  std::map<std::string_view, std::string_view> mine;
  for (const auto& [name, value] : own) {
    mine.emplace(name, value);
  }
  std::set<std::string_view> done;
  std::set<std::string_view> own_used;  // the proxy's values given under memcached's names
  auto emit = [&](std::string_view name) {
    if (!done.insert(name).second) {
      return;
    }
    if (name == "version") {
      statLine(&m->reply, name, version.empty() ? fallback_version : version);
      return;
    }
    if (among(kProxyFields, name)) {
      if (auto it = mine.find(name); it != mine.end()) {
        statLine(&m->reply, name, it->second);
        own_used.insert(name);
        return;
      }
    }
    if (const Field* f = pool.find(name)) {
      statLine(&m->reply, name, f->value());
    }
  };
  for (std::string_view name : kMemcachedGeneral) {
    if (name == "version" || pool.has(name) || (among(kProxyFields, name) && mine.count(name))) {
      emit(name);
    }
  }
  for (const auto& [name, field] : pool.fields()) {
    emit(name);  // fields of a newer memcached, after the ones 1.6.18 has
  }
  for (const auto& [name, value] : own) {
    if (own_used.count(name) > 0) {
      continue;
    }
    if (among(kMemcachedGeneral, name) || pool.has(name)) {
      statLine(&m->reply, "mcring_" + name, value);
    } else {
      statLine(&m->reply, name, value);
    }
  }
  statLine(&m->reply, "mcring_stats_servers", std::to_string(m->answered));
  statLine(&m->reply, "mcring_stats_servers_failed", std::to_string(m->failed));
}

// `stats items` (prefix "items:") and `stats slabs` (no prefix): per-class fields merged per
// class id, classes in ascending order; other lines merged by name after them.
void mergeClasses(const Parsed& p, std::string_view prefix, const std::string_view* max_fields,
                  size_t max_count, NameBudget* budget, MergedStats* m) {
  std::map<uint32_t, FieldSet> classes;
  FieldSet rest(budget);
  for (std::string_view server : p.servers) {
    forEachStat(server, [&](const Stat& s) {
      std::string_view name = s.name;
      std::optional<std::pair<uint32_t, std::string_view>> cls;
      if (name.starts_with(prefix)) {
        cls = classPrefix(name.substr(prefix.size()));
      }
      Field* f = nullptr;
      if (!cls) {
        f = rest.at(name, Combine::Sum);
      } else {
        const bool is_max =
            std::find(max_fields, max_fields + max_count, cls->second) != max_fields + max_count;
        f = classes.try_emplace(cls->first, budget)
                .first->second.at(cls->second, is_max ? Combine::Max : Combine::Sum);
      }
      if (f != nullptr) {
        f->add(s.value);
      }
    });
  }
  if (budget->exhausted) {
    return;
  }
  for (const auto& [id, fields] : classes) {
    const std::string head = std::string(prefix) + std::to_string(id) + ":";
    for (const auto& [field, value] : fields.fields()) {
      m->reply.append("STAT ").append(head);
      m->reply.append(field).append(" ").append(value.value()).append("\r\n");
    }
  }
  for (const auto& [name, value] : rest.fields()) {
    statLine(&m->reply, name,
             name == "active_slabs" ? std::to_string(classes.size()) : value.value());
  }
}

void mergeByName(const Parsed& p, NameBudget* budget, MergedStats* m) {
  FieldSet all(budget);
  bool numeric_names = true;
  for (std::string_view server : p.servers) {
    forEachStat(server, [&](const Stat& s) {
      if (Field* f = all.at(s.name, Combine::Sum)) {
        f->add(s.value);
        numeric_names = numeric_names && unsignedOf(s.name).has_value();
      }
    });
  }
  if (budget->exhausted) {
    return;
  }
  const auto& fields = all.fields();
  std::vector<uint32_t> order(fields.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  if (numeric_names) {  // `stats sizes` lists sizes in ascending order (names are distinct)
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return *unsignedOf(fields[a].first) < *unsignedOf(fields[b].first);
    });
  }
  for (uint32_t i : order) {
    statLine(&m->reply, fields[i].first, fields[i].second.value());
  }
}

// Every server's lines, each name prefixed with the server's position in the pool.
void passConns(const Parsed& p, MergedStats* m) {
  size_t size = p.lines * 8;  // the prefixes, "<position>." (then END)
  for (std::string_view server : p.servers) {
    size += server.size();
  }
  m->reply.reserve(size);
  for (size_t i = 0; i < p.servers.size(); ++i) {
    const std::string head = std::to_string(p.positions[i]) + ".";
    forEachStat(p.servers[i], [&](const Stat& s) {
      m->reply.append("STAT ").append(head);
      m->reply.append(s.name).append(" ").append(s.value).append("\r\n");
    });
  }
}

// The ITEM lines of a cachedump answer (and false if it does not end in END, or if it has more
// than max_lines lines: *too_many then).
bool appendItemLines(std::string_view reply, uint32_t max_lines, std::string* out, bool* too_many) {
  std::string_view body = reply;
  if (!body.ends_with("END\r\n")) {
    return false;
  }
  body.remove_suffix(5);
  size_t pos = 0;
  uint32_t lines = 0;
  while (pos < body.size()) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string_view::npos || !body.substr(pos).starts_with("ITEM ")) {
      return false;
    }
    if (++lines > max_lines) {
      *too_many = true;
      return false;
    }
    pos = eol + 2;
  }
  out->append(body);
  return true;
}

// "1.6.18\r\n" from "VERSION 1.6.18\r\n".
std::optional<std::string_view> versionOf(std::string_view reply) {
  if (!reply.starts_with("VERSION ") || !reply.ends_with("\r\n")) {
    return std::nullopt;
  }
  reply.remove_prefix(8);
  reply.remove_suffix(2);
  if (reply.empty() || reply.find_first_of("\r\n") != std::string_view::npos) {
    return std::nullopt;
  }
  return reply;
}

std::string tooManyLines(StatsView view) {
  return statsTooLargeLine("a server sent more than " + std::to_string(maxAnswerLines(view)) +
                           " lines");
}

}  // namespace

std::optional<StatsView> statsViewOf(std::string_view args) {
  if (args.empty()) {
    return StatsView::General;
  }
  if (args == "settings") {
    return StatsView::Settings;
  }
  if (args == "items") {
    return StatsView::Items;
  }
  if (args == "slabs") {
    return StatsView::Slabs;
  }
  if (args == "sizes") {
    return StatsView::Sizes;
  }
  if (args == "conns") {
    return StatsView::Conns;
  }
  if (args.starts_with("cachedump ")) {
    return StatsView::CacheDump;
  }
  return std::nullopt;
}

int compareVersions(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& s, uint64_t* n) {
    size_t i = 0;
    uint64_t v = 0;
    while (i < s.size() && i < 18 && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      ++i;
    }
    if (i == 0) {
      return false;
    }
    *n = v;
    s.remove_prefix(i);
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
    } else {
      s = {};
    }
    return true;
  };
  for (;;) {
    uint64_t x = 0;
    uint64_t y = 0;
    const bool hx = next(a, &x);
    const bool hy = next(b, &y);
    if (!hx && !hy) {
      return 0;
    }
    if (!hx || (hy && x < y)) {
      return -1;
    }
    if (!hy || x > y) {
      return 1;
    }
  }
}

uint32_t maxAnswerLines(StatsView view) {
  switch (view) {
    case StatsView::Conns:
    case StatsView::CacheDump:
      return kMaxListedLines;
    case StatsView::Version:
      return 1;
    case StatsView::General:
    case StatsView::Settings:
    case StatsView::Items:
    case StatsView::Slabs:
    case StatsView::Sizes:
      break;
  }
  return kMaxStatsLines;
}

std::string statsTooLargeLine(std::string_view what) {
  std::string line = "SERVER_ERROR stats answer too large: ";
  line.append(what).append("\r\n");
  return line;
}

MergedStats mergeStats(StatsView view, const std::vector<ServerAnswer>& answers,
                       const StatList& own, std::string_view fallback_version) {
  MergedStats m;
  if (view == StatsView::Version) {
    for (const ServerAnswer& a : answers) {
      std::optional<std::string_view> v = a ? versionOf(*a) : std::nullopt;
      if (!v) {
        ++m.failed;
        continue;
      }
      ++m.answered;
      if (m.version.empty() || compareVersions(*v, m.version) < 0) {
        m.version = std::string(*v);
      }
    }
    m.reply = "VERSION " + (m.version.empty() ? std::string(fallback_version) : m.version) + "\r\n";
    return m;
  }
  if (view == StatsView::CacheDump) {
    std::string_view first_error;
    bool too_many = false;
    for (const ServerAnswer& a : answers) {
      if (a && appendItemLines(*a, kMaxListedLines, &m.reply, &too_many)) {
        ++m.answered;
      } else {
        ++m.failed;
        if (a && first_error.empty() && !a->empty() && a->ends_with("\r\n") &&
            a->find("\r\n") == a->size() - 2) {
          first_error = *a;  // memcached's one-line refusal (an illegal class id)
        }
      }
    }
    if (too_many) {
      m.reply = tooManyLines(view);
      m.too_large = true;
      return m;
    }
    if (m.answered == 0 && !first_error.empty()) {
      m.reply = std::string(first_error);
      return m;
    }
    m.reply.append("END\r\n");
    return m;
  }
  const Parsed p = parseAll(answers, maxAnswerLines(view), &m);
  if (p.too_many_lines) {
    m.reply = tooManyLines(view);
    m.too_large = true;
    return m;
  }
  NameBudget names;
  switch (view) {
    case StatsView::General:
      mergeGeneral(p, own, fallback_version, &names, &m);
      break;
    case StatsView::Settings:
      if (!p.servers.empty()) {
        forEachStat(p.servers.front(), [&](const Stat& s) { statLine(&m.reply, s.name, s.value); });
      }
      break;
    case StatsView::Items:
      mergeClasses(p, "items:", kItemsMaxFields, std::size(kItemsMaxFields), &names, &m);
      break;
    case StatsView::Slabs:
      mergeClasses(p, "", kSlabsMaxFields, std::size(kSlabsMaxFields), &names, &m);
      break;
    case StatsView::Sizes:
      mergeByName(p, &names, &m);
      break;
    case StatsView::Conns:
      passConns(p, &m);
      break;
    case StatsView::CacheDump:
    case StatsView::Version:
      break;
  }
  if (names.exhausted) {
    m.reply = statsTooLargeLine("more than " + std::to_string(kMaxStatsNames) + " distinct names");
    m.too_large = true;
    m.version.clear();
    return m;
  }
  m.reply.append("END\r\n");
  return m;
}

}  // namespace mcring::protocol
