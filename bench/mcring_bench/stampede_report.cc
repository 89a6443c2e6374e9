// Stampede results: seconds aligned to the change, summary metrics, CSV, markdown, JSON, gnuplot.
#include "bench/mcring_bench/stampede_report.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "proxy/common/json.h"

namespace mcring::bench {
namespace {

constexpr uint64_t kSecondNs = 1'000'000'000ULL;
constexpr uint64_t kSlotsPerSecond = kSecondNs / CacheAsideClient::kSlotNs;
constexpr double kRecoveryShare = 0.95;

std::string fixed(double v, int digits) {
  if (v < 0) {
    return "n/a";
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

std::string jsonNumber(double v, int digits = 6) {
  if (v < 0 || !std::isfinite(v)) {
    return "null";
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

std::string jsonString(std::string_view s) {
  std::string out;
  common::appendJsonString(&out, s);
  return out;
}

std::string findGnuplot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::istringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

// What the first second would show if no key were refilled: gets of keys that stayed still hit,
// so the baseline times the request-weighted share of keys that did not move.
// With replicas > 1 a key "moves" when its set changes, which need not make its read miss (the
// new primary may have held a copy), so there is no such estimate, but for a crash, where a
// moved key is one with no live copy left.
double expectedFirstSecond(const StampedeRun& r) {
  if (r.hit_ratio_before < 0 || r.moved_weighted < 0 ||
      (r.replicas > 1 && r.scenario != Scenario::Crash)) {
    return -1;
  }
  return r.hit_ratio_before * (1 - r.moved_weighted);
}

}  // namespace

std::vector<StampedeSecond> secondsAround(const std::vector<StampedeSlot>& slots, uint64_t start_ns,
                                          uint64_t t0_ns, int after_seconds) {
  std::vector<StampedeSecond> out;
  if (t0_ns < start_ns || slots.empty()) {
    return out;
  }
  // t0 to the millisecond slot that contains it: seconds are cut at slot boundaries, at most
  // 1 ms from the exact instant.
  const uint64_t t0_slot = (t0_ns - start_ns) / CacheAsideClient::kSlotNs;
  const int before = static_cast<int>(t0_slot / kSlotsPerSecond);
  for (int t = 1 - before; t <= after_seconds; ++t) {
    StampedeSecond second;
    second.t = t;
    const int64_t first = static_cast<int64_t>(t0_slot) + (t - 1) * int64_t{kSlotsPerSecond};
    for (int64_t i = first; i < first + static_cast<int64_t>(kSlotsPerSecond); ++i) {
      // The last slot collects whatever came later than the client kept: not a real second.
      if (i >= 0 && i + 1 < static_cast<int64_t>(slots.size())) {
        second.counts.add(slots[static_cast<size_t>(i)]);
      }
    }
    out.push_back(second);
  }
  return out;
}

void summarize(StampedeRun* run) {
  StampedeSlot before;
  std::vector<const StampedeSecond*> before_rows;
  for (const auto& s : run->seconds) {
    if (s.t <= 0) {
      before_rows.push_back(&s);
    }
  }
  // The first second carries the connections' start: skip it when there are others. The last
  // one (t = 0) may hold the switch itself: t0 is when the reload record was seen, a fraction of
  // a millisecond to a few ms (on a busy machine) after the workers switched; skip it too when
  // at least one other remains.
  size_t first = before_rows.size() > 1 ? 1 : 0;
  size_t end = before_rows.size();
  if (end - first >= 2) {
    --end;
  }
  for (size_t i = first; i < end; ++i) {
    before.add(before_rows[i]->counts);
  }
  run->hit_ratio_before = before.gets == 0 ? -1 : static_cast<double>(before.hits) / before.gets;
  run->hit_ratio_after = -1;
  run->hit_ratio_min = -1;
  run->recovery_seconds.reset();
  run->errors_after = 0;
  for (const auto& s : run->seconds) {
    if (s.t < 1) {
      continue;
    }
    run->errors_after += s.counts.errors;
    const double r = s.hitRatio();
    if (s.t == 1) {
      run->hit_ratio_after = r;
    }
    if (r >= 0 && (run->hit_ratio_min < 0 || r < run->hit_ratio_min)) {
      run->hit_ratio_min = r;
    }
    if (!run->recovery_seconds && run->hit_ratio_before > 0 &&
        r >= kRecoveryShare * run->hit_ratio_before) {
      run->recovery_seconds = s.t;
    }
  }
}

bool writeRunCsv(const StampedeRun& run, const std::string& path, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    *error = "cannot write " + path;
    return false;
  }
  std::fprintf(f, "t,gets,hits,hit_ratio,ops,errors,refills\n");
  for (const auto& s : run.seconds) {
    const double r = s.hitRatio();
    std::fprintf(f, "%d,%u,%u,%s,%u,%u,%u\n", s.t, s.counts.gets, s.counts.hits,
                 r < 0 ? "" : fixed(r, 6).c_str(), s.counts.ops, s.counts.errors, s.counts.refills);
  }
  const bool ok = std::fclose(f) == 0;
  if (!ok) {
    *error = "cannot write " + path;
  }
  return ok;
}

std::string markdownTable(const StampedeOptions& options, Scenario scenario,
                          const std::vector<StampedeRun>& runs) {
  std::ostringstream md;
  md << "### " << scenarioName(scenario) << ": " << scenarioText(scenario) << "\n\n";
  md << "Theory: " << theoryText(scenario, options.backends) << ".";
  for (uint32_t replicas : options.replicas) {
    if (replicas > 1) {
      md << " With replicas " << replicas << " (`DIST+r" << replicas
         << "`): " << theoryText(scenario, options.backends, replicas) << ".";
    }
  }
  md << "\n\n";
  md << "| proxy | distribution | hit ratio before | first second after | without refill "
        "(expected) | minimum | recovery to 95% (s) | moved, backends | moved, `mcring route` | "
        "theory | errors after | change took (ms) |\n";
  md << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const StampedeRun& r : runs) {
    if (r.scenario != scenario) {
      continue;
    }
    if (!r.error.empty()) {
      md << "| " << r.proxy << " | " << r.shownDistribution() << " | failed: " << r.error
         << " | | | | | | | | | |\n";
      continue;
    }
    const double expected = expectedFirstSecond(r);
    md << "| " << r.proxy << " | " << r.shownDistribution() << " | " << fixed(r.hit_ratio_before, 3)
       << " | " << fixed(r.hit_ratio_after, 3) << " | " << fixed(expected, 3) << " | "
       << fixed(r.hit_ratio_min, 3) << " | "
       << (r.recovery_seconds ? std::to_string(*r.recovery_seconds)
                              : "> " + std::to_string(static_cast<int>(options.after_s)))
       << " | " << fixed(r.moved_fraction, 4) << " | "
       << (r.moved_fraction_route ? fixed(*r.moved_fraction_route, 4) : std::string("n/a")) << " | "
       << fixed(r.theory_moved_fraction, 4) << " | " << r.errors_after << " | "
       << fixed(r.change_ms, 1) << " |\n";
  }
  // Which errors, where there were any (whole run; they all come after the change).
  std::string notes;
  for (const StampedeRun& r : runs) {
    if (r.scenario != scenario || !r.error.empty()) {
      continue;
    }
    std::string kinds;
    for (size_t i = 0; i < kLoadErrorCount; ++i) {
      if (r.error_kinds[i] > 0) {
        kinds += (kinds.empty() ? "" : ", ") + std::to_string(r.error_kinds[i]) + " " +
                 std::string(loadErrorName(static_cast<LoadError>(i)));
      }
    }
    if (r.unsent > 0) {
      kinds += (kinds.empty() ? "" : ", ") + std::to_string(r.unsent) + " unsent (rate not met)";
    }
    if (!kinds.empty()) {
      notes += "- " + r.proxy + " " + r.shownDistribution() + ": " + kinds + "\n";
    }
  }
  if (!notes.empty()) {
    md << "\nErrors:\n" << notes;
  }
  // The figure the experiment is about, one line per run: the first second against the baseline.
  std::string firsts;
  for (const StampedeRun& r : runs) {
    if (r.scenario != scenario || !r.error.empty()) {
      continue;
    }
    firsts += "- " + r.proxy + " " + r.shownDistribution() + ": " + fixed(r.hit_ratio_after, 3) +
              " in the first second after, against " + fixed(r.hit_ratio_before, 3) + " before";
    if (r.hit_ratio_before > 0 && r.hit_ratio_after >= 0) {
      char text[96];
      std::snprintf(text, sizeof(text), ": %.1f%% of the baseline (%+.1f points)",
                    100 * r.hit_ratio_after / r.hit_ratio_before,
                    100 * (r.hit_ratio_after - r.hit_ratio_before));
      firsts += text;
    }
    firsts += "\n";
  }
  if (!firsts.empty()) {
    md << "\nFirst second after the change against the baseline:\n" << firsts;
  }
  // What the runs cost: writes the backends saw per client write, and the proxy's CPU.
  std::ostringstream cost;
  for (const StampedeRun& r : runs) {
    if (r.scenario != scenario || !r.error.empty()) {
      continue;
    }
    cost << "| " << r.proxy << " | " << r.shownDistribution() << " | " << r.replicas << " | "
         << r.warm_client_sets << " | " << r.warm_backend_writes << " | "
         << fixed(r.warmWriteAmplification(), 3) << " | " << r.load_client_writes << " | "
         << r.load_backend_writes << " | " << fixed(r.loadWriteAmplification(), 3) << " | "
         << fixed(r.proxyUsPerWarmSet(), 2) << " | " << r.load_requests << " | "
         << fixed(r.proxyUsPerLoadRequest(), 2) << " | " << fixed(r.proxyUsPerRequestBefore(), 2)
         << " | " << fixed(r.proxyUsPerRequestAfter(), 2) << " |\n";
  }
  if (!cost.str().empty()) {
    md << "\nCost (backend writes from the backends' own `stats`: cmd_set, deletes, incr/decr, "
          "touches; the crashed backend's read just before the kill. Proxy CPU: utime + stime "
          "from /proc over the warm-up and over the load, per client request):\n\n";
    md << "| proxy | distribution | replicas | warm-up sets | backend writes | write "
          "amplification | load: client writes | backend writes | write amplification | proxy "
          "CPU us / warm-up set | load requests | proxy CPU us / request | before the change | "
          "after |\n";
    md << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" << cost.str();
  }
  return md.str();
}

std::string markdownReport(const StampedeOptions& options, const std::vector<StampedeRun>& runs,
                           const std::string& command) {
  std::ostringstream md;
  md << "`" << command << "`\n\n";
  char params[400];
  std::snprintf(
      params, sizeof(params),
      "N = %u backends, %llu keys warmed, gets Zipf(%.2f) at %.0f/s open loop over %u "
      "connections, %s, %.0f s before and %.0f s after the change, seed %llu.",
      options.backends, static_cast<unsigned long long>(options.keys), options.zipf, options.rate,
      options.connections,
      options.refill ? "cache-aside (a miss is followed by a set of the key)" : "no refill",
      options.before_s, options.after_s, static_cast<unsigned long long>(options.seed));
  md << params;
  if (options.warmup) {
    md << " Each distribution also ran with warm migration (`DIST+warmup`: `warmup_window: "
       << options.warmup_window_ms
       << "` in the pool config before and after the change; a miss on a moved key is answered "
          "from its previous server and copied to the new one).";
  }
  md << "\n\n";
  for (Scenario s : options.scenarios) {
    md << markdownTable(options, s, runs) << "\n";
  }
  return md.str();
}

std::string jsonReport(const StampedeOptions& options, const std::vector<StampedeRun>& runs,
                       const std::vector<std::string>& plots) {
  std::ostringstream js;
  js << "{\"params\":{\"backends\":" << options.backends << ",\"keys\":" << options.keys
     << ",\"zipf\":" << options.zipf << ",\"rate\":" << options.rate
     << ",\"before_s\":" << options.before_s << ",\"after_s\":" << options.after_s
     << ",\"connections\":" << options.connections << ",\"pipeline\":" << options.pipeline
     << ",\"value_size\":" << options.value_size
     << ",\"refill\":" << (options.refill ? "true" : "false") << ",\"seed\":" << options.seed
     << ",\"quick\":" << (options.quick ? "true" : "false")
     << ",\"proxy_threads\":" << options.proxy_threads << ",\"hash\":" << jsonString(options.hash)
     << ",\"warmup\":" << (options.warmup ? "true" : "false")
     << ",\"warmup_window_ms\":" << (options.warmup ? options.warmup_window_ms : 0)
     << ",\"replicas\":[";
  for (size_t i = 0; i < options.replicas.size(); ++i) {
    js << (i ? "," : "") << options.replicas[i];
  }
  js << "]"
     << ",\"out\":" << jsonString(options.out_dir) << "},\"runs\":[";
  bool first = true;
  for (const StampedeRun& r : runs) {
    js << (first ? "" : ",") << "{\"distribution\":" << jsonString(r.distribution)
       << ",\"warmup\":" << (r.warmup ? "true" : "false") << ",\"label\":" << jsonString(r.label())
       << ",\"scenario\":" << jsonString(scenarioName(r.scenario))
       << ",\"proxy\":" << jsonString(r.proxy) << ",\"servers_before\":" << r.servers_before
       << ",\"servers_after\":" << r.servers_after
       << ",\"hit_ratio_before\":" << jsonNumber(r.hit_ratio_before)
       << ",\"hit_ratio_after\":" << jsonNumber(r.hit_ratio_after)
       << ",\"hit_ratio_min\":" << jsonNumber(r.hit_ratio_min) << ",\"recovery_seconds\":"
       << (r.recovery_seconds ? std::to_string(*r.recovery_seconds) : "null")
       << ",\"moved_fraction\":" << jsonNumber(r.moved_fraction) << ",\"moved_fraction_route\":"
       << (r.moved_fraction_route ? jsonNumber(*r.moved_fraction_route) : "null")
       << ",\"moved_fraction_weighted\":" << jsonNumber(r.moved_weighted)
       << ",\"theory_moved_fraction\":" << jsonNumber(r.theory_moved_fraction)
       << ",\"expected_hit_ratio_after_without_refill\":" << jsonNumber(expectedFirstSecond(r))
       << ",\"keys_checked\":" << r.keys_checked << ",\"warm_anomalies\":" << r.warm_anomalies
       << ",\"change_ms\":" << jsonNumber(r.change_ms, 3)
       << ",\"change_source\":" << jsonString(r.change_source)
       << ",\"errors_after\":" << r.errors_after << ",\"errors\":{";
    for (size_t i = 0; i < kLoadErrorCount; ++i) {
      js << (i ? "," : "") << jsonString(loadErrorName(static_cast<LoadError>(i))) << ":"
         << r.error_kinds[i];
    }
    js << "},\"unsent\":" << r.unsent << ",\"refills_dropped\":" << r.refills_dropped
       << ",\"csv\":" << jsonString(r.csv_path) << ",\"replicas\":" << r.replicas
       << ",\"hit_ratio_after_share_of_before\":"
       << jsonNumber(r.hit_ratio_before > 0 && r.hit_ratio_after >= 0
                         ? r.hit_ratio_after / r.hit_ratio_before
                         : -1)
       << ",\"warm_client_sets\":" << r.warm_client_sets
       << ",\"warm_backend_writes\":" << r.warm_backend_writes
       << ",\"write_amplification_warm\":" << jsonNumber(r.warmWriteAmplification())
       << ",\"load_client_writes\":" << r.load_client_writes
       << ",\"load_backend_writes\":" << r.load_backend_writes
       << ",\"write_amplification_load\":" << jsonNumber(r.loadWriteAmplification())
       << ",\"load_requests\":" << r.load_requests
       << ",\"proxy_cpu_warm_s\":" << jsonNumber(r.proxy_cpu_warm_s, 3)
       << ",\"proxy_cpu_load_s\":" << jsonNumber(r.proxy_cpu_load_s, 3)
       << ",\"proxy_cpu_us_per_warm_set\":" << jsonNumber(r.proxyUsPerWarmSet(), 3)
       << ",\"proxy_cpu_us_per_request\":" << jsonNumber(r.proxyUsPerLoadRequest(), 3)
       << ",\"load_requests_before\":" << r.load_requests_before
       << ",\"proxy_cpu_before_s\":" << jsonNumber(r.proxy_cpu_before_s, 3)
       << ",\"proxy_cpu_us_per_request_before\":" << jsonNumber(r.proxyUsPerRequestBefore(), 3)
       << ",\"proxy_cpu_us_per_request_after\":" << jsonNumber(r.proxyUsPerRequestAfter(), 3);
    if (!r.error.empty()) {
      js << ",\"error\":" << jsonString(r.error);
    }
    js << "}";
    first = false;
  }
  js << "],\"plots\":[";
  for (size_t i = 0; i < plots.size(); ++i) {
    js << (i ? "," : "") << jsonString(plots[i]);
  }
  js << "]}";
  return js.str();
}

std::vector<std::string> plotScenario(const StampedeOptions& options, Scenario scenario,
                                      const std::vector<StampedeRun>& runs,
                                      ChildProcesses& processes) {
  const std::string gnuplot = findGnuplot();
  if (gnuplot.empty()) {
    std::fprintf(stderr,
                 "stampede: warning: gnuplot not found, no plot (Debian: apt-get install "
                 "gnuplot-nox, or packaging/deps.sh bench)\n");
    return {};
  }
  const std::string base = options.out_dir + "/stampede_" + std::string(scenarioName(scenario));
  std::ostringstream gp;
  gp << "# Generated by mcring-bench stampede; rerun with: gnuplot " << base << ".gp\n";
  gp << "set datafile separator ','\n";
  gp << "set title \"mcring-bench stampede: " << scenarioText(scenario) << "\\n"
     << "N=" << options.backends << ", " << options.keys << " keys, Zipf " << options.zipf << ", "
     << options.rate << " gets/s, " << (options.refill ? "cache-aside refill" : "no refill");
  if (options.warmup) {
    gp << "; dashed: +warmup, warmup_window " << options.warmup_window_ms << " ms";
  }
  gp << "\" noenhanced\n";
  gp << "set xlabel 'seconds from the change (0 = reload applied / backend killed / nutcracker "
        "stopped)'\n";
  gp << "set ylabel 'hit ratio (per second)'\n";
  gp << "set yrange [0:1.05]\nset grid\nset key below horizontal noenhanced\n";
  gp << "set xrange [" << -static_cast<int>(std::ceil(options.before_s)) << ":"
     << static_cast<int>(std::ceil(options.after_s)) << "]\n";
  gp << "set arrow from 0, graph 0 to 0, graph 1 nohead dashtype 2 linecolor rgb 'gray40'\n";
  // Errors per second on the right axis, scaled so that the impulses stay in the lower third
  // and do not hide the hit ratio.
  uint32_t most_errors = 0;
  for (const StampedeRun& r : runs) {
    if (r.scenario == scenario && r.error.empty()) {
      for (const auto& second : r.seconds) {
        most_errors = std::max(most_errors, second.counts.errors);
      }
    }
  }
  if (most_errors > 0) {
    gp << "set y2label 'errors per second (impulses)'\nset y2tics\nset ytics nomirror\n"
          "set y2range [0:"
       << 3 * most_errors << "]\n";
  }
  std::ostringstream plot;
  bool any = false;
  // One color per proxy and distribution: a warm-up run (--warmup) is drawn dashed in the color
  // of its cold twin.
  std::vector<std::string> colors;
  for (const StampedeRun& r : runs) {
    if (r.scenario != scenario || !r.error.empty() || r.csv_path.empty()) {
      continue;
    }
    const std::string twin =
        r.proxy + "-" + r.distribution + "-r" + std::to_string(r.replicas);
    auto it = std::find(colors.begin(), colors.end(), twin);
    if (it == colors.end()) {
      it = colors.insert(colors.end(), twin);
    }
    const int color = static_cast<int>(it - colors.begin());
    // Row t covers [t-1, t): a step centred on t-0.5, so the change shows where it happened.
    plot << (any ? ", \\\n     " : "plot ") << "'" << r.csv_path
         << "' skip 1 using ($1-0.5):4 with histeps linewidth " << (r.warmup ? 3 : 2)
         << " linecolor " << (color + 1) << (r.warmup ? " dashtype 2" : "") << " title '"
         << r.label() << "'";
    if (r.errors_after > 0) {
      // Errors (connection refused or reset, SERVER_ERROR): the gap a restart or crash leaves.
      plot << ", \\\n     '" << r.csv_path << "' skip 1 using ($1-0.5):6 axes x1y2 with "
           << "impulses linewidth 4 linecolor " << (color + 1) << " title '" << r.label()
           << " errors'";
    }
    any = true;
  }
  if (!any) {
    return {};
  }
  const std::string plot_line = plot.str() + "\n";
  gp << "set terminal svg size 960,600 dynamic background rgb 'white'\n";
  gp << "set output '" << base << ".svg'\n" << plot_line;
  gp << "set terminal pngcairo size 960,600\n";
  gp << "set output '" << base << ".png'\n" << plot_line;
  gp << "unset output\n";
  {
    std::ofstream f(base + ".gp");
    f << gp.str();
    if (!f) {
      std::fprintf(stderr, "stampede: warning: cannot write %s.gp, no plot\n", base.c_str());
      return {};
    }
  }
  std::string error;
  const int status =
      processes.runToCompletion("gnuplot", {gnuplot, base + ".gp"}, "/dev/null",
                                base + ".gnuplot.log", base + ".gnuplot.log", 30000, &error);
  if (status != 0) {
    std::fprintf(stderr, "stampede: warning: gnuplot failed (%s), see %s.gnuplot.log\n",
                 status < 0 ? error.c_str() : ("status " + std::to_string(status)).c_str(),
                 base.c_str());
    return {};
  }
  ::unlink((base + ".gnuplot.log").c_str());
  return {base + ".svg", base + ".png"};
}

}  // namespace mcring::bench
