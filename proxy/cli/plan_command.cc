// `mcring plan OLD.yml NEW.yml [--pool NAME] [--json]`: the keys a config change would move.
//
// Builds the routers the proxy would build from each file (no address resolution, so it runs
// anywhere), predicts the migration per pool (config/change_plan.h, which the admin endpoint's
// what-if shares), and sets beside it what modula would have moved for the same server change.
// Human output is meant to be pasted into a change ticket; --json is for machines.
#include "proxy/cli/plan_command.h"

#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "config/change_plan.h"
#include "config/config.h"
#include "proxy/cli/route_plan.h"
#include "proxy/common/json.h"
#include "proxy/routing/migration.h"
#include "proxy/routing/router.h"

namespace mcring::cli {
namespace {

// Moves listed in the human table; --json lists all of them.
constexpr size_t kMaxMoveRows = 25;

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: mcring plan OLD.yml NEW.yml [--pool NAME] [--json]\n"
               "Predicts which share of keys changes server when OLD is replaced by NEW: the\n"
               "moved fraction, where the moving keys go, and each server's share before and\n"
               "after, beside what modula would move for the same change. When a side has\n"
               "replicas > 1, also the share of keys whose replica set changes and each\n"
               "server's replica-set membership gained and lost. For a pool with routes, each\n"
               "key family (the keys under a prefix, and the keys no prefix matches) whose\n"
               "route sends it to another pool. A pool with servers_dns or servers_srv has\n"
               "the servers its name resolves to now (once, through its dns_resolver).\n"
               "  --pool NAME  only this pool (default: every pool present in both files)\n"
               "  --json       machine-readable output\n"
               "  -h, --help   this help\n");
}

// "ketama (twemproxy), hash fnv1a_64, hash_tag {}"
std::string describe(const routing::RouterOptions& o) {
  std::string s(routing::distributionName(o.distribution));
  if (o.distribution == routing::Distribution::Ketama) {
    s += " (" + std::string(routing::ketamaCompatName(o.ketama_compat)) + ")";
  }
  if (o.distribution == routing::Distribution::Maglev) {
    s += " (table " + std::to_string(o.maglev_table_size) + ")";
  }
  s += ", hash " + std::string(routing::hashFunctionName(o.hash));
  if (!o.hash_tag.empty()) {
    s += ", hash_tag " + o.hash_tag;
  }
  return s;
}

std::string methodNote(const routing::MigrationPlan& p) {
  switch (p.method) {
    case routing::MigrationMethod::Exact:
      return "exact";
    case routing::MigrationMethod::Sampled:
      return "sampled at " + std::to_string(p.samples) + " hash values";
    case routing::MigrationMethod::Independent:
      return "estimate: old and new placement unrelated (random, or the hash changed)";
  }
  return "";
}

std::string replicaMethodNote(const routing::ReplicaPlan& r) {
  switch (r.method) {
    case routing::MigrationMethod::Exact:
      return "exact";
    case routing::MigrationMethod::Sampled:
      return "estimate, sampled at " + std::to_string(r.samples) + " hash values";
    case routing::MigrationMethod::Independent:
      return "estimate: old and new sets unrelated (random, or the hash changed), sampled at " +
             std::to_string(r.samples) + " hash values";
  }
  return "";
}

std::string replicasLabel(const routing::ReplicaPlan& r) {
  return r.replicas_before == r.replicas_after ? "replicas " + std::to_string(r.replicas_after)
                                               : "replicas " + std::to_string(r.replicas_before) +
                                                     " -> " + std::to_string(r.replicas_after);
}

std::string percent(double f) {
  if (f > 0 && f < 0.00005) {
    return "<0.01%";
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%%", 100.0 * f);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Human output

class Table {
 public:
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  // align[c] is 'l' or 'r' for column c; columns past its end are right-aligned. Two spaces
  // between columns.
  std::string render(const std::string& indent, std::string_view align) const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      width.resize(std::max(width.size(), r.size()), 0);
      for (size_t c = 0; c < r.size(); ++c) {
        width[c] = std::max(width[c], r[c].size());
      }
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line = indent;
      for (size_t c = 0; c < r.size(); ++c) {
        const std::string pad(width[c] - r[c].size(), ' ');
        line += c < align.size() && align[c] == 'l' ? r[c] + pad : pad + r[c];
        line += c + 1 < r.size() ? "  " : "";
      }
      while (!line.empty() && line.back() == ' ') {
        line.pop_back();
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string joinOrNone(const std::vector<std::string>& v) {
  if (v.empty()) {
    return "(none)";
  }
  std::string s;
  for (const auto& x : v) {
    s += (s.empty() ? "" : ", ") + x;
  }
  return s;
}

void renderPoolHuman(const config::PoolChangePlan& pp, std::string* out) {
  const routing::MigrationPlan& p = pp.plan;
  const bool compare = !pp.already_modula;
  const bool have_modula = compare && pp.modula.has_value();
  // The column label: "ketama", or "ketama->jump" when the change switches distributions.
  std::string dist(routing::distributionName(pp.before->routing.distribution));
  if (pp.after->routing.distribution != pp.before->routing.distribution) {
    dist += "->" + std::string(routing::distributionName(pp.after->routing.distribution));
  }
  const std::vector<config::PlanServerRow> servers = config::planServerRows(p);
  std::vector<std::string> added;
  std::vector<std::string> removed;
  for (const auto& s : servers) {
    if (!s.before) {
      added.push_back(s.id);
    }
    if (!s.after) {
      removed.push_back(s.id);
    }
  }

  *out += "Pool '" + pp.after->name + "'\n";
  Table head;
  head.row(
      {"before:", std::to_string(p.before.size()) + " servers, " + describe(pp.before->routing)});
  head.row({"after:", std::to_string(p.after.size()) + " servers, " + describe(pp.after->routing)});
  head.row({"added:", joinOrNone(added)});
  head.row({"removed:", joinOrNone(removed)});
  *out += head.render("  ", "ll") + "\n";

  Table moved;
  moved.row({"Keys moved:", percent(p.moved), dist + ", " + methodNote(p)});
  if (have_modula) {
    moved.row({"", percent(pp.modula->moved),
               "if the pool used modula (for comparison), " + methodNote(*pp.modula)});
  } else if (compare) {
    moved.row({"", "n/a", "if the pool used modula: " + pp.modula_error});
  }
  moved.row({"Ideal:", percent(pp.ideal_moved), "the least any ring must move for this change"});
  *out += moved.render("  ", "lrl") + "\n";
  if (!pp.warning.empty()) {
    *out += "  Warning: " + pp.warning + "\n\n";
  }

  // Replica sets: only when a side keeps more than one copy (otherwise a set is its primary).
  const routing::ReplicaPlan* rp = pp.replicas ? &*pp.replicas : nullptr;
  const routing::ReplicaPlan* rm =
      rp != nullptr && compare && pp.modula_replicas ? &*pp.modula_replicas : nullptr;
  if (rp != nullptr) {
    *out += "  Replica sets (" + replicasLabel(*rp) +
            "): a key's servers, primary first, as `mcring route` prints them;\n"
            "  a set changed when a server left or joined it:\n";
    Table r;
    r.row({"Sets changed:", percent(rp->changed), dist + ", " + replicaMethodNote(*rp)});
    if (rm != nullptr) {
      r.row({"", percent(rm->changed),
             "if the pool used modula (for comparison), " + replicaMethodNote(*rm)});
    }
    r.row({"Order only:", percent(rp->order_only),
           "same servers, another primary or failover order"});
    r.row({"No copy kept:", percent(rp->none_kept),
           "no server of the old set is in the new one (every copy cold)"});
    if (rm != nullptr) {
      r.row({"", percent(rm->none_kept), "if the pool used modula"});
    }
    *out += r.render("    ", "lrl") + "\n";
  }

  // Moves: the union of both plans' moved cells, by server pair.
  std::map<std::pair<uint32_t, uint32_t>, std::pair<double, double>> moves;
  for (const auto& c : p.cells()) {
    if (c.moved) {
      moves[{c.from, c.to}].first = c.fraction;
    }
  }
  if (have_modula) {
    for (const auto& c : pp.modula->cells()) {
      if (c.moved) {
        moves[{c.from, c.to}].second = c.fraction;
      }
    }
  }
  std::vector<std::pair<std::pair<uint32_t, uint32_t>, std::pair<double, double>>> sorted(
      moves.begin(), moves.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    return std::tie(y.second.first, y.second.second) < std::tie(x.second.first, x.second.second);
  });
  *out += "  Moves, largest first (share of all keys):\n";
  if (sorted.empty()) {
    *out += "    (no key changes server)\n\n";
  } else {
    Table t;
    std::vector<std::string> header = {"FROM", "TO", dist};
    if (have_modula) {
      header.push_back("modula");
    }
    t.row(header);
    const size_t shown = std::min(sorted.size(), kMaxMoveRows);
    for (size_t k = 0; k < shown; ++k) {
      const auto& [cell, f] = sorted[k];
      std::vector<std::string> r = {p.before[cell.first], p.after[cell.second],
                                    f.first > 0 ? percent(f.first) : "-"};
      if (have_modula) {
        r.push_back(f.second > 0 ? percent(f.second) : "-");
      }
      t.row(r);
    }
    if (sorted.size() > shown) {
      // The rest summed in one row, so the shown rows still add up to the total.
      double rest = 0;
      double rest_modula = 0;
      for (size_t k = shown; k < sorted.size(); ++k) {
        rest += sorted[k].second.first;
        rest_modula += sorted[k].second.second;
      }
      std::vector<std::string> r = {"... " + std::to_string(sorted.size() - shown) + " more", "",
                                    rest > 0 ? percent(rest) : "-"};
      if (have_modula) {
        r.push_back(rest_modula > 0 ? percent(rest_modula) : "-");
      }
      t.row(r);
    }
    std::vector<std::string> total = {"total", "", percent(p.moved)};
    if (have_modula) {
      total.push_back(percent(pp.modula->moved));
    }
    t.row(total);
    *out += t.render("    ", "ll");
    if (sorted.size() > shown) {
      *out += "    (--json lists every move)\n";
    }
    *out += "\n";
  }

  *out += "  Ownership per server (share of all keys; out/in: keys leaving/arriving):\n";
  Table t;
  std::vector<std::string> group = {"", dist, "", "", ""};
  std::vector<std::string> header = {"SERVER", "before", "after", "out", "in"};
  if (have_modula) {
    group.insert(group.end(), {"modula", "", "", ""});
    header.insert(header.end(), {"before", "after", "out", "in"});
  }
  t.row(group);
  t.row(header);
  auto cellsFor = [](const routing::MigrationPlan& m, const config::PlanServerRow& s,
                     std::vector<std::string>* r) {
    r->push_back(s.before ? percent(m.ownership_before[*s.before]) : "-");
    r->push_back(s.after ? percent(m.ownership_after[*s.after]) : "-");
    r->push_back(s.before ? percent(m.movedOut(*s.before)) : "-");
    r->push_back(s.after ? percent(m.movedIn(*s.after)) : "-");
  };
  for (const auto& s : servers) {
    std::vector<std::string> r = {s.id + (!s.before ? " (new)" : !s.after ? " (gone)" : "")};
    cellsFor(p, s, &r);
    if (have_modula) {
      cellsFor(*pp.modula, s, &r);
    }
    t.row(r);
  }
  *out += t.render("    ", "l") + "\n";

  if (rp != nullptr) {
    *out +=
        "  Replica-set membership per server (share of all keys whose set holds it, summing to\n"
        "  the replica count; lost/gained: keys whose set it leaves/joins, copies to fill):\n";
    Table m;
    std::vector<std::string> mgroup = {"", dist, "", "", ""};
    std::vector<std::string> mheader = {"SERVER", "before", "after", "lost", "gained"};
    if (rm != nullptr) {
      mgroup.insert(mgroup.end(), {"modula", "", "", ""});
      mheader.insert(mheader.end(), {"before", "after", "lost", "gained"});
    }
    m.row(mgroup);
    m.row(mheader);
    // ReplicaPlan::servers follows planServerRows' order (old side, then the new side's added).
    auto shareOf = [](const routing::ReplicaPlan& plan,
                      const std::string& id) -> const routing::ReplicaServerShare* {
      for (const auto& s : plan.servers) {
        if (s.id == id) {
          return &s;
        }
      }
      return nullptr;
    };
    auto cells = [&](const routing::ReplicaPlan& plan, const config::PlanServerRow& s,
                     std::vector<std::string>* row) {
      const routing::ReplicaServerShare* x = shareOf(plan, s.id);
      row->push_back(s.before && x ? percent(x->before) : "-");
      row->push_back(s.after && x ? percent(x->after) : "-");
      row->push_back(s.before && x ? percent(x->lost) : "-");
      row->push_back(s.after && x ? percent(x->gained) : "-");
    };
    for (const auto& s : servers) {
      std::vector<std::string> row = {s.id + (!s.before ? " (new)" : !s.after ? " (gone)" : "")};
      cells(*rp, s, &row);
      if (rm != nullptr) {
        cells(*rm, s, &row);
      }
      m.row(row);
    }
    *out += m.render("    ", "l") + "\n";
  }
}

// ---------------------------------------------------------------------------------------------
// JSON output

void appendStringArray(std::string* out, const std::vector<std::string>& v) {
  *out += "[";
  for (size_t i = 0; i < v.size(); ++i) {
    *out += i ? "," : "";
    common::appendJsonString(out, v[i]);
  }
  *out += "]";
}

const config::PoolConfig* findPool(const config::Config& c, const std::string& name) {
  for (const auto& p : c.pools) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

std::optional<config::Config> load(const std::string& path) {
  config::LoadResult loaded = config::loadConfigFile(path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) {
      std::fprintf(stderr, "%s\n", e.toString().c_str());
    }
    return std::nullopt;
  }
  return std::move(loaded.config);
}

}  // namespace

int runPlanCommand(int argc, char** argv, const ResolveDiscovered& resolve) {
  std::string pool_name;
  bool json = false;
  static const option kOptions[] = {{"pool", required_argument, nullptr, 'P'},
                                    {"json", no_argument, nullptr, 'j'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", kOptions, nullptr)) != -1) {
    switch (c) {
      case 'P':
        pool_name = optarg;
        break;
      case 'j':
        json = true;
        break;
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  if (argc - optind != 2) {
    std::fprintf(stderr, "mcring plan: expected two configuration files, OLD and NEW\n");
    usage(stderr);
    return 2;
  }
  const std::string old_path = argv[optind];
  const std::string new_path = argv[optind + 1];
  std::optional<config::Config> old_conf = load(old_path);
  std::optional<config::Config> new_conf = load(new_path);
  if (!old_conf || !new_conf) {
    return 1;
  }

  // Pools are matched by name; a pool in only one file has no migration to predict.
  std::vector<std::pair<const config::PoolConfig*, const config::PoolConfig*>> pairs;
  std::vector<std::string> only_old;
  std::vector<std::string> only_new;
  if (!pool_name.empty()) {
    const config::PoolConfig* a = findPool(*old_conf, pool_name);
    const config::PoolConfig* b = findPool(*new_conf, pool_name);
    if (a == nullptr || b == nullptr) {
      std::fprintf(stderr, "mcring plan: no pool '%s' in %s\n", pool_name.c_str(),
                   (a == nullptr ? old_path : new_path).c_str());
      return 1;
    }
    pairs.emplace_back(a, b);
  } else {
    for (const auto& a : old_conf->pools) {
      if (const config::PoolConfig* b = findPool(*new_conf, a.name)) {
        pairs.emplace_back(&a, b);
      } else {
        only_old.push_back(a.name);
      }
    }
    for (const auto& b : new_conf->pools) {
      if (findPool(*old_conf, b.name) == nullptr) {
        only_new.push_back(b.name);
      }
    }
    if (pairs.empty()) {
      std::fprintf(stderr, "mcring plan: %s and %s have no pool name in common\n", old_path.c_str(),
                   new_path.c_str());
      return 1;
    }
  }

  // A discovered pool's servers are its name's answer now, on each side (discovered_pools.h).
  std::vector<std::string> placed;
  for (const auto& [a, b] : pairs) {
    if (!a->routed() && !b->routed()) {
      placed.push_back(a->name);
    }
  }
  if (!resolveDiscoveredPools("plan", old_path, *old_conf, placed, resolve) ||
      !resolveDiscoveredPools("plan", new_path, *new_conf, placed, resolve)) {
    return 1;
  }

  std::vector<config::PoolChangePlan> plans;
  std::vector<RoutePlan> route_plans;  // pools with routes on a side: no servers of their own
  for (const auto& [a, b] : pairs) {
    if (a->routed() || b->routed()) {
      route_plans.push_back(planRouteChange(*a, *b));
      continue;
    }
    std::string error;
    std::optional<config::PoolChangePlan> p = config::planPoolChange(*a, *b, &error);
    if (!p) {
      std::fprintf(stderr, "mcring plan: %s\n", error.c_str());
      return 1;
    }
    plans.push_back(std::move(*p));
  }

  std::string out;
  if (json) {
    out += "{\"old\":";
    common::appendJsonString(&out, old_path);
    out += ",\"new\":";
    common::appendJsonString(&out, new_path);
    out += ",\"pools\":[";
    for (size_t i = 0; i < plans.size(); ++i) {
      out += i ? "," : "";
      config::appendPoolChangeJson(&out, plans[i]);
    }
    out += "],\"pools_only_in_old\":";
    appendStringArray(&out, only_old);
    out += ",\"pools_only_in_new\":";
    appendStringArray(&out, only_new);
    if (!route_plans.empty()) {
      out += ",\"routed_pools\":[";
      for (size_t i = 0; i < route_plans.size(); ++i) {
        out += i ? "," : "";
        appendRoutePlanJson(&out, route_plans[i]);
      }
      out += "]";
    }
    out += "}\n";
  } else {
    out += "mcring plan: " + old_path + " -> " + new_path + "\n";
    out +=
        "A key moves when the server (host:port) owning its hash changes; a moved key is a\n"
        "cache miss on its new server until it is set again.\n\n";
    for (const auto& p : plans) {
      renderPoolHuman(p, &out);
    }
    for (const auto& p : route_plans) {
      renderRoutePlanHuman(p, &out);
    }
    if (!only_old.empty()) {
      out += "Pools only in OLD (removed): " + joinOrNone(only_old) + "\n";
    }
    if (!only_new.empty()) {
      out += "Pools only in NEW (added): " + joinOrNone(only_new) + "\n";
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace mcring::cli
