// `mcring-bench load`: flags in, progress and timeline each second, summary at the end.
#include "bench/mcring_bench/load_command.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/mcring_bench/client_socket.h"
#include "bench/mcring_bench/load_generator.h"
#include "bench/mcring_bench/load_options.h"
#include "bench/mcring_bench/load_report.h"

namespace mcring::bench {
namespace {

// The run a Ctrl-C stops; the handler only stores to atomics.
std::atomic<LoadGenerator*> g_running{nullptr};

void onInterrupt(int) {
  if (LoadGenerator* generator = g_running.load()) {
    generator->requestStop();
  }
}

}  // namespace

int runLoad(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  LoadOutput output;
  bool help = false;
  std::string error;
  const auto options = parseLoadFlags(args, &output, &help, &error);
  if (help) {
    std::fputs(kLoadUsage, stdout);
    return 0;
  }
  if (!options) {
    std::fprintf(stderr, "mcring-bench load: %s\n", error.c_str());
    return 2;
  }

  TimelineWriter timeline;
  if (output.tls && !ClientSocket::useTls(&error)) {
    std::fprintf(stderr, "mcring-bench load: %s\n", error.c_str());
    return 2;
  }
  if (!output.timeline_path.empty() && !timeline.open(output.timeline_path, &error)) {
    std::fprintf(stderr, "mcring-bench load: %s\n", error.c_str());
    return 2;
  }

  LoadGenerator generator(*options);
  generator.onSecond([&](const IntervalStats& second) {
    timeline.write(second);
    // A sliver of a second at the very end would show a meaningless rate.
    if (!output.quiet && second.length_s >= 0.1) {
      std::fprintf(stderr, "%s\n", progressLine(second).c_str());
    }
  });

  // First Ctrl-C: stop, drain and print the summary; a second one kills (SA_RESETHAND).
  g_running.store(&generator);
  struct sigaction action {};
  action.sa_handler = onInterrupt;
  action.sa_flags = SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  const LoadResult result = generator.run();
  g_running.store(nullptr);

  if (output.json) {
    printSummaryJson(stdout, *options, result);
  } else {
    printSummaryText(stdout, *options, result);
  }
  const LoadCounters& c = result.total.counters;
  if (c.requests != c.replies + c.errorTotal() || c.replies == 0) {
    return 1;
  }
  return 0;
}

}  // namespace mcring::bench
