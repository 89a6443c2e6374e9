// YAML -> validated Config: walks the document, hands each pool key to its row in the key table,
// then checks what spans keys and pools. The only file that sees yaml-cpp.
//
// Every problem is collected, none stops the walk (except a YAML syntax error, after which there
// is no document to walk), so one run shows a user all that is wrong with a file.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "config/config.h"
#include "config/config_file.h"
#include "config/pool_keys.h"

#define XXH_INLINE_ALL  // header-only: config needs one hash, not a library dependency
#include <xxhash.h>

namespace mcring::config {
namespace {

// yaml-cpp marks are 0-based with -1 for "none"; ours are 1-based with 0 for "none".
Mark toMark(const YAML::Mark& m) {
  if (m.is_null() || m.line < 0 || m.column < 0) {
    return {};
  }
  return {m.line + 1, m.column + 1};
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "an empty value";
    case YAML::NodeType::Scalar: {
      // Enough to recognise the value; a long block scalar would drown the message.
      std::string text = node.Scalar().substr(0, node.Scalar().find('\n'));
      return text.size() > 60 || text.size() < node.Scalar().size()
                 ? "'" + text.substr(0, 60) + "...'"
                 : "'" + text + "'";
    }
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
  }
  return "something else";
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void add(Mark mark, std::string context, std::string message) {
    errors_.push_back({file_, mark, std::move(context), std::move(message)});
  }

  size_t count() const { return errors_.size(); }

  // In file order, so the list reads top to bottom; problems found by cross-checks (duplicate
  // listen addresses) slot in where they are.
  std::vector<ConfigError> take() {
    std::stable_sort(errors_.begin(), errors_.end(), [](const auto& a, const auto& b) {
      return std::pair(a.mark.line, a.mark.column) < std::pair(b.mark.line, b.mark.column);
    });
    return std::move(errors_);
  }

 private:
  std::string file_;
  std::vector<ConfigError> errors_;
};

// ValueReader over a YAML node. A null node's own mark points at whatever token follows it, so
// an empty value reports at its key instead.
class YamlValue : public ValueReader {
 public:
  YamlValue(YAML::Node node, Mark key_mark, std::string context, Diagnostics& diagnostics)
      : node_(std::move(node)),
        key_mark_(key_mark),
        context_(std::move(context)),
        diagnostics_(diagnostics) {}

  std::optional<std::string> scalar(std::string_view what) override {
    if (!node_.IsScalar()) {
      mismatch(what);
      return std::nullopt;
    }
    return node_.Scalar();
  }

  std::optional<std::vector<std::unique_ptr<ValueReader>>> sequence(
      std::string_view what) override {
    if (!node_.IsSequence()) {
      mismatch(what);
      return std::nullopt;
    }
    std::vector<std::unique_ptr<ValueReader>> elements;
    size_t i = 0;
    for (const YAML::Node& element : node_) {
      std::string context = context_ + "[" + std::to_string(i++) + "]";
      elements.push_back(std::make_unique<YamlValue>(element, mark(), context, diagnostics_));
    }
    return elements;
  }

  std::optional<std::vector<Entry>> mapping(std::string_view what) override {
    if (!node_.IsMap()) {
      mismatch(what);
      return std::nullopt;
    }
    std::vector<Entry> entries;
    for (const auto& entry : node_) {
      Mark key_mark = toMark(entry.first.Mark());
      if (!entry.first.IsScalar()) {
        diagnostics_.add(key_mark.line == 0 ? mark() : key_mark, context_,
                         "expected a key name, got " + describe(entry.first));
        continue;
      }
      const std::string& key = entry.first.Scalar();
      entries.push_back({key, key_mark,
                         std::make_unique<YamlValue>(entry.second, key_mark, context_ + ": " + key,
                                                     diagnostics_)});
    }
    return entries;
  }

  Mark mark() const override {
    Mark own = toMark(node_.Mark());
    return node_.IsNull() || own.line == 0 ? key_mark_ : own;
  }

  std::string context() const override { return context_; }

  void error(std::string message) override {
    diagnostics_.add(mark(), context_, std::move(message));
  }

 private:
  void mismatch(std::string_view what) {
    error("expected " + std::string(what) + ", got " + describe(node_));
  }

  YAML::Node node_;
  Mark key_mark_;
  std::string context_;
  Diagnostics& diagnostics_;
};

// A pool as loaded, with where its keys were, for checks that span keys or pools.
struct LoadedPool {
  PoolConfig config;
  std::map<std::string, Mark, std::less<>> key_marks;
  size_t errors_before = 0;  // diagnostics count when the pool started
  bool clean = false;        // no error in the pool itself (its routes can be cross-checked)
};

std::string digestOf(std::string_view bytes);

// A file's content digest, or a marker that it could not be read (that is reported, with the
// file's name, by whoever uses the file).
std::string fileDigest(const std::string& path) {
  std::string bytes;
  std::string error;
  if (!readConfigFile(path, &bytes, &error)) {
    return "unreadable";
  }
  return digestOf(bytes);
}

std::string digestOf(std::string_view bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char hex[33];
  snprintf(hex, sizeof(hex), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
           static_cast<unsigned long long>(h.low64));
  return hex;
}

// yaml-cpp's message for a tab in indentation ("illegal map value", ...) does not say "tab".
std::string syntaxMessage(const YAML::ParserException& e, std::string_view text) {
  std::string message = "YAML syntax error: " + e.msg;
  if (e.mark.line >= 0 && e.msg.find("tab") == std::string::npos) {
    std::string_view rest = text;
    for (int line = 0; line < e.mark.line && !rest.empty(); ++line) {
      size_t nl = rest.find('\n');
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    }
    std::string_view line = rest.substr(0, rest.find('\n'));
    size_t indent_end = line.find_first_not_of(" \t");
    if (line.substr(0, indent_end).find('\t') != std::string_view::npos) {
      message += " (this line is indented with a tab; YAML allows spaces only)";
    }
  }
  return message;
}

// Where each document of a stream starts and whether its root is empty, from parser events.
// The loader counts documents with this instead of YAML::LoadAll, which in yaml-cpp 0.7 loops
// forever, allocating, on a stray ',' (jbeder/yaml-cpp#1040, fixed upstream by #1319).
class DocumentWatcher : public YAML::EventHandler {
 public:
  bool rootIsEmpty() const { return !seen_root_ || root_null_; }
  YAML::Mark rootMark() const { return root_mark_; }

  void OnDocumentStart(const YAML::Mark&) override {
    depth_ = 0;
    seen_root_ = false;
    root_null_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m, true); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m, false); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m, false);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m, false);
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m, false);
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

 private:
  void node(const YAML::Mark& m, bool null) {
    if (depth_ == 0 && !seen_root_) {
      seen_root_ = true;
      root_null_ = null;
      root_mark_ = m;
    }
  }

  int depth_ = 0;
  bool seen_root_ = false;
  bool root_null_ = false;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
};

// The start of the second non-empty document, if any (twemproxy counts documents alike). Stops
// at the first empty one, which is also where yaml-cpp's loop would begin. Throws as
// YAML::Load does on a syntax error.
std::optional<YAML::Mark> secondDocument(std::string_view text) {
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  DocumentWatcher watcher;
  for (int docs = 0; parser.HandleNextDocument(watcher) && !watcher.rootIsEmpty();) {
    if (++docs == 2) {
      return watcher.rootMark();
    }
  }
  return std::nullopt;
}

// yaml-cpp 0.7 reads a stray ',' before the first node as an empty document instead of an
// error; find it, so the user is not told the file has no pools.
std::optional<Mark> strayComma(std::string_view text) {
  int line = 1;
  int column = 1;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      column = 1;
      comment = false;
      continue;
    }
    if (!comment && c == '#') {
      comment = true;
    } else if (!comment && c != ' ' && c != '\t' && c != '\r') {
      return c == ',' ? std::optional<Mark>(Mark{line, column}) : std::nullopt;
    }
    ++column;
  }
  return std::nullopt;
}

class Loader {
 public:
  Loader(std::string name, std::string_view text)
      : name_(std::move(name)), text_(text), diagnostics_(name_) {}

  LoadResult run() {
    YAML::Node root;
    std::optional<YAML::Mark> second;
    try {
      root = YAML::Load(std::string(text_));
      second = secondDocument(text_);
    } catch (const YAML::ParserException& e) {
      diagnostics_.add(toMark(e.mark), "", syntaxMessage(e, text_));
      return finish();
    } catch (const YAML::Exception& e) {
      diagnostics_.add(toMark(e.mark), "", std::string("YAML error: ") + e.msg);
      return finish();
    }
    if (second) {
      // twemproxy refuses these too; silently using the first would hide the rest.
      diagnostics_.add(toMark(*second), "", "only one YAML document is allowed per file");
    }
    if (root.IsNull()) {
      if (auto comma = strayComma(text_)) {
        diagnostics_.add(*comma, "", "YAML syntax error: unexpected ','");
      } else {
        diagnostics_.add({}, "", "no pools defined");
      }
      return finish();
    }
    if (!root.IsMap()) {
      diagnostics_.add(toMark(root.Mark()), "",
                       "expected a mapping of pool names to pools, got " + describe(root));
      return finish();
    }
    std::map<std::string, Mark, std::less<>> pool_marks;
    for (const auto& entry : root) {
      loadPool(entry.first, entry.second, pool_marks);
    }
    if (pools_.empty() && diagnostics_.count() == 0) {
      diagnostics_.add(toMark(root.Mark()), "", "no pools defined");
    }
    checkListenAddresses();
    checkRoutes();
    return finish();
  }

 private:
  void loadPool(const YAML::Node& key, const YAML::Node& value,
                std::map<std::string, Mark, std::less<>>& pool_marks) {
    Mark mark = toMark(key.Mark());
    if (!key.IsScalar() || key.Scalar().empty()) {
      diagnostics_.add(mark, "", "expected a pool name, got " + describe(key));
      return;
    }
    const std::string& name = key.Scalar();
    const std::string context = "pool " + quoted(name);
    if (auto [it, inserted] = pool_marks.emplace(name, mark); !inserted) {
      diagnostics_.add(
          mark, context,
          "duplicate pool name (first at line " + std::to_string(it->second.line) + ")");
      return;
    }
    if (!value.IsMap()) {
      Mark at = value.IsNull() ? mark : toMark(value.Mark());
      diagnostics_.add(
          at, context,
          "expected a mapping of pool keys (listen, servers, ...), got " + describe(value));
      return;
    }

    LoadedPool pool;
    pool.config.name = name;
    pool.config.mark = mark;
    pool.errors_before = diagnostics_.count();
    for (const auto& entry : value) {
      loadKey(pool, context, entry.first, entry.second);
    }
    const bool has_routes = pool.key_marks.contains("routes");
    pool.config.listens = pool.key_marks.contains("listen");
    for (const PoolKey& k : poolKeys()) {
      // A pool with routes has no servers of its own: its routes' pools have them.
      bool exempt = (has_routes || pool.key_marks.contains("servers_dns") ||
                     pool.key_marks.contains("servers_srv")) &&
                    k.name == "servers";
      if (k.required && !exempt && !pool.key_marks.contains(k.name)) {
        diagnostics_.add(mark, context, "missing required key " + quoted(k.name));
      }
    }
    if (has_routes) {
      checkRoutedPool(pool, context);
    }
    checkDiscovery(pool, context);
    if (diagnostics_.count() == pool.errors_before) {
      // A discovered pool's servers come with its first answer, which is built then.
      if (!has_routes && !pool.config.discovered()) {
        checkRouting(pool, context);
      }
      checkReplication(pool, context);
      checkTls(pool, context);
    }
    pool.clean = diagnostics_.count() == pool.errors_before;
    pools_.push_back(std::move(pool));
  }

  void loadKey(LoadedPool& pool, const std::string& context, const YAML::Node& key,
               const YAML::Node& value) {
    Mark mark = toMark(key.Mark());
    if (!key.IsScalar()) {
      diagnostics_.add(mark, context, "expected a key name, got " + describe(key));
      return;
    }
    const std::string& name = key.Scalar();
    const PoolKey* row = findPoolKey(name);
    if (row == nullptr) {
      diagnostics_.add(mark, context, unknownKeyMessage(name));
      return;
    }
    if (auto [it, inserted] = pool.key_marks.emplace(name, mark); !inserted) {
      // twemproxy: "is a duplicate". Which of the two was meant is anyone's guess.
      diagnostics_.add(mark, context,
                       "duplicate key " + quoted(name) + " (first at line " +
                           std::to_string(it->second.line) + ")");
      return;
    }
    YamlValue reader(value, mark, context + ": " + name, diagnostics_);
    row->apply(reader, pool.config);
  }

  static std::string unknownKeyMessage(const std::string& name) {
    std::vector<std::string_view> names;
    for (const PoolKey& k : poolKeys()) {
      names.push_back(k.name);
    }
    std::string message = "unknown key " + quoted(name);
    std::string_view near = closestName(name, names);
    if (!near.empty()) {
      return message + "; did you mean " + quoted(near) + "?";
    }
    message += " (known keys: ";
    for (size_t i = 0; i < names.size(); ++i) {
      message += (i == 0 ? "" : ", ") + std::string(names[i]);
    }
    return message + ")";
  }

  // A pool with routes is a front listener: it has a listen address and no servers.
  void checkRoutedPool(const LoadedPool& pool, const std::string& context) {
    const auto& marks = pool.key_marks;
    if (!marks.contains("listen")) {
      diagnostics_.add(marks.at("routes"), context,
                       "a pool with routes needs 'listen' (it is the listener its routes serve)");
    }
    if (auto servers = marks.find("servers"); servers != marks.end()) {
      diagnostics_.add(servers->second, context,
                       "a pool with routes has no servers of its own (its routes' pools have "
                       "them): remove 'servers' or 'routes'");
    }
  }

  // servers_dns replaces servers (an answer is the whole list; a static list beside it would
  // make "missing from the answer" ambiguous), and the dns_ keys only tune it.
  void checkDiscovery(const LoadedPool& pool, const std::string& context) {
    const auto& marks = pool.key_marks;
    auto dns = marks.find("servers_dns");
    if (dns == marks.end()) {
      dns = marks.find("servers_srv");
    }
    if (dns == marks.end()) {
      for (std::string_view key : {"dns_resolver", "dns_interval", "dns_remove_after"}) {
        if (auto it = marks.find(key); it != marks.end()) {
          diagnostics_.add(
              it->second, context,
              quoted(key) + " tunes discovery and needs 'servers_dns' or 'servers_srv'");
        }
      }
      return;
    }
    const std::string& which = dns->first;
    if (auto srv = marks.find("servers_srv"); which == "servers_dns" && srv != marks.end()) {
      diagnostics_.add(srv->second, context,
                       "'servers_srv' and 'servers_dns' (line " + std::to_string(dns->second.line) +
                           ") are exclusive: choose one");
    }
    if (auto servers = marks.find("servers"); servers != marks.end()) {
      diagnostics_.add(servers->second, context,
                       "'servers' and " + quoted(which) + " (line " +
                           std::to_string(dns->second.line) +
                           ") are exclusive: a discovered pool's servers are its DNS answer");
    }
    if (marks.contains("routes")) {
      diagnostics_.add(
          dns->second, context,
          "a pool with routes has no servers of its own: remove " + quoted(which) + " or 'routes'");
    }
  }

  const LoadedPool* findLoaded(std::string_view name) const {
    for (const LoadedPool& p : pools_) {
      if (p.config.name == name) {
        return &p;
      }
    }
    return nullptr;
  }

  // A pool a route sends to: one that exists, with servers and no routes (routes do not nest).
  void checkTarget(std::string_view name, Mark at, const std::string& context) {
    const LoadedPool* target = findLoaded(name);
    if (target == nullptr) {
      std::vector<std::string_view> names;
      for (const LoadedPool& p : pools_) {
        if (!p.key_marks.contains("routes")) {
          names.push_back(p.config.name);
        }
      }
      std::string message = "no pool named " + quoted(name);
      std::string_view near = closestName(name, names);
      if (!near.empty()) {
        message += "; did you mean " + quoted(near) + "?";
      }
      diagnostics_.add(at, context, message);
      return;
    }
    if (target->key_marks.contains("routes")) {
      diagnostics_.add(at, context,
                       "pool " + quoted(name) +
                           " has routes of its own; a route sends to a pool with servers "
                           "(routes do not nest)");
    }
    // A target without servers already has its own error ("missing required key").
  }

  // Across pools: every route names pools that can take its keys, and every pool is reachable
  // (it listens, or some route sends to it).
  void checkRoutes() {
    std::set<std::string, std::less<>> sent_to;
    for (const LoadedPool& pool : pools_) {
      const std::string context = "pool " + quoted(pool.config.name);
      const auto& routes = pool.config.routes;
      for (size_t i = 0; i < routes.size(); ++i) {
        const RouteConfig& r = routes[i];
        const std::string where = context + ": routes[" + std::to_string(i) + "]";
        sent_to.insert(r.pool);
        if (r.shadow) {
          sent_to.insert(r.shadow->pool);
        }
        sent_to.insert(r.failover.begin(), r.failover.end());
        // Every name that parsed is checked, whatever else is wrong in the pool: all the
        // problems of a file are reported at once.
        if (!r.pool.empty()) {
          checkTarget(r.pool, r.pool_mark, where + (r.is_default ? ": default" : ": pool"));
        }
        if (r.shadow && !r.shadow->pool.empty()) {
          checkTarget(r.shadow->pool, r.shadow->mark, where + ": shadow: pool");
        }
        for (size_t f = 0; f < r.failover.size() && f < r.failover_marks.size(); ++f) {
          if (!r.failover[f].empty()) {
            checkTarget(r.failover[f], r.failover_marks[f],
                        where + ": failover[" + std::to_string(f) + "]");
          }
        }
      }
    }
    for (const LoadedPool& pool : pools_) {
      if (pool.key_marks.contains("routes") && !pool.clean) {
        return;  // its routes are not known: which pools it sends to is anyone's guess
      }
    }
    for (const LoadedPool& pool : pools_) {
      if (!pool.key_marks.contains("listen") && !pool.key_marks.contains("routes") &&
          !sent_to.contains(pool.config.name)) {
        diagnostics_.add(
            pool.config.mark, "pool " + quoted(pool.config.name),
            "pool " + quoted(pool.config.name) + " has no listen and no route sends to it");
      }
    }
  }

  // Whether the pool's routing options fit its servers (weights with a distribution that has
  // none, a maglev table size that is not a prime above the server count, ...) is the router's
  // to say: build it once here, so a config that loads also routes. The error points at the
  // key it names, else at `distribution`, else at the pool.
  void checkRouting(const LoadedPool& pool, const std::string& context) {
    std::vector<routing::ServerSpec> specs;
    for (const ServerConfig& s : pool.config.servers) {
      specs.push_back(s.spec);
    }
    std::string error;
    if (routing::Router::build(specs, pool.config.routing, &error) != nullptr) {
      return;
    }
    Mark at = pool.config.mark;
    if (auto d = pool.key_marks.find("distribution"); d != pool.key_marks.end()) {
      at = d->second;
    }
    for (const auto& [key, mark] : pool.key_marks) {
      if (key != "distribution" && error.find(key) != std::string::npos) {
        at = mark;
        break;
      }
    }
    diagnostics_.add(at, context, error.empty() ? "the router refuses these options" : error);
  }

  // Replication keys that contradict each other: the replica policies need replicas > 1, and
  // hot-key spread (its own copies of a key, written alike) cannot share a pool with replicas.
  void checkReplication(const LoadedPool& pool, const std::string& context) {
    const PoolConfig& c = pool.config;
    auto at = [&](std::string_view key) {
      auto it = pool.key_marks.find(key);
      return it != pool.key_marks.end() ? it->second : c.mark;
    };
    if (c.routing.replicas > 1 && c.hot_key_spread > 0) {
      diagnostics_.add(at("hot_key_spread"), context,
                       "hot_key_spread cannot be used with replicas > 1 (every key already has "
                       "replicas: set hot_key_spread: 0 or replicas: 1)");
    }
    if (c.routing.replicas < 2) {
      if (c.replica_write_all) {
        diagnostics_.add(at("replica_write_reply"), context,
                         "replica_write_reply: all needs replicas > 1");
      }
      if (c.read_failover_on_miss) {
        diagnostics_.add(at("read_failover_on_miss"), context,
                         "read_failover_on_miss: true needs replicas > 1");
      }
    }
  }

  // The TLS and authentication keys that only make sense together; relative paths made
  // absolute against the config file's directory (the process may run from anywhere).
  void checkTls(LoadedPool& pool, const std::string& context) {
    PoolConfig& c = pool.config;
    auto at = [&](std::string_view key) {
      auto it = pool.key_marks.find(key);
      return it != pool.key_marks.end() ? it->second : c.mark;
    };
    for (std::string* path :
         {&c.tls_cert, &c.tls_key, &c.tls_ca, &c.server_tls_ca, &c.server_tls_cert,
          &c.server_tls_key, &c.client_auth_file, &c.server_auth_file}) {
      *path = relativeToConfig(*path);
    }
    if (c.tlsListening() && !c.listens) {
      diagnostics_.add(at(c.listen_tls ? "listen_tls" : "tls_listen"), context,
                       "a TLS listener needs 'listen' (this pool has no listener)");
    }
    if (c.tlsListening() && (c.tls_cert.empty() || c.tls_key.empty())) {
      diagnostics_.add(at(c.listen_tls ? "listen_tls" : "tls_listen"), context,
                       "a TLS listener needs tls_cert and tls_key");
    }
    if (!c.tlsListening() && (!c.tls_cert.empty() || !c.tls_key.empty())) {
      diagnostics_.add(at(!c.tls_cert.empty() ? "tls_cert" : "tls_key"), context,
                       "tls_cert and tls_key are for a TLS listener: set listen_tls: true or "
                       "tls_listen");
    }
    if (c.tls_verify_client && c.tls_ca.empty()) {
      diagnostics_.add(at("tls_verify_client"), context,
                       "tls_verify_client needs tls_ca (the CAs client certificates must "
                       "chain to)");
    }
    if (c.server_tls_cert.empty() != c.server_tls_key.empty()) {
      diagnostics_.add(at(c.server_tls_cert.empty() ? "server_tls_key" : "server_tls_cert"),
                       context, "server_tls_cert and server_tls_key go together");
    }
    if (c.tls_listen && c.tls_listen->toString() == c.listen.toString()) {
      diagnostics_.add(at("tls_listen"), context,
                       "tls_listen is the listen address; for TLS only there, set "
                       "listen_tls: true");
    }
  }

  std::string relativeToConfig(const std::string& path) const {
    if (path.empty() || path.front() == '/') {
      return path;
    }
    size_t slash = name_.rfind('/');
    return slash == std::string::npos ? path : name_.substr(0, slash + 1) + path;
  }

  // twemproxy refuses two pools with the same listen string. A wildcard address also overlaps
  // every address on its port, which bind() would refuse later with a vaguer message.
  void checkListenAddresses() {
    auto wildcard = [](const Address& a) { return a.host == "0.0.0.0" || a.host == "::"; };
    for (size_t i = 0; i < pools_.size(); ++i) {
      const PoolConfig& later = pools_[i].config;
      auto listen_mark = pools_[i].key_marks.find("listen");
      bool listen_valid = later.listen.isUnix() || later.listen.port != 0;
      if (listen_mark == pools_[i].key_marks.end() || !listen_valid) {
        continue;  // missing or invalid: already reported
      }
      for (size_t j = 0; j < i; ++j) {
        const PoolConfig& earlier = pools_[j].config;
        const Address& a = earlier.listen;
        const Address& b = later.listen;
        bool same = a.toString() == b.toString() && (a.isUnix() || a.port != 0);
        bool overlap = !a.isUnix() && !b.isUnix() && a.port == b.port && a.port != 0 &&
                       (wildcard(a) || wildcard(b));
        if (same || overlap) {
          std::string where = " (line " + std::to_string(pools_[j].config.mark.line) + ")";
          diagnostics_.add(listen_mark->second, "pool " + quoted(later.name),
                           same ? "listen address " + b.toString() + " is already used by pool " +
                                      quoted(earlier.name) + where
                                : "listen address " + b.toString() + " overlaps " + a.toString() +
                                      " of pool " + quoted(earlier.name) + where);
          break;
        }
      }
    }
  }

  LoadResult finish() {
    LoadResult result;
    result.errors = diagnostics_.take();
    if (result.errors.empty()) {
      Config config;
      config.path = name_;
      config.digest = digestOf(text_);
      // The files the config names are part of it: a new certificate or credentials file with
      // an unchanged config is a change to reload.
      std::string files;
      for (const LoadedPool& pool : pools_) {
        const PoolConfig& c = pool.config;
        for (const std::string* path :
             {&c.tls_cert, &c.tls_key, &c.tls_ca, &c.server_tls_ca, &c.server_tls_cert,
              &c.server_tls_key, &c.client_auth_file, &c.server_auth_file}) {
          if (!path->empty()) {
            files += *path + '\0' + fileDigest(*path) + '\0';
          }
        }
      }
      if (!files.empty()) {
        config.digest = digestOf(config.digest + files);
      }
      for (LoadedPool& pool : pools_) {
        config.pools.push_back(std::move(pool.config));
      }
      result.config = std::move(config);
    }
    return result;
  }

  std::string name_;
  std::string_view text_;
  Diagnostics diagnostics_;
  std::vector<LoadedPool> pools_;
};

}  // namespace

LoadResult loadConfigString(const std::string& yaml, const std::string& name) {
  return Loader(name, yaml).run();
}

LoadResult loadConfigFile(const std::string& path) {
  std::string bytes;
  std::string error;
  if (!readConfigFile(path, &bytes, &error)) {
    LoadResult result;
    result.errors.push_back({path, {}, "", error});
    return result;
  }
  return loadConfigString(bytes, path);
}

}  // namespace mcring::config
