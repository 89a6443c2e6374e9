// mcring-bench: dispatches to the load generator, the ring lab and the stampede experiment.
#include <cstdio>
#include <cstring>

#include "bench/mcring_bench/load_command.h"
#include "bench/mcring_bench/hot_keys_live.h"
#include "bench/mcring_bench/stampede.h"

// The lab is another engineer's; CMake defines this once both of its files exist.
#if defined(MCRING_BENCH_HAVE_LAB) && __has_include("bench/mcring_bench/lab.h")
#include "bench/mcring_bench/lab.h"
#define MCRING_BENCH_LAB 1
#endif

namespace {

constexpr char kUsage[] = R"(usage: mcring-bench <command> [options]

commands
  load       drive a memcached-text endpoint with gets/sets; throughput, hit ratio, latency
  lab        ring lab: how keys spread over servers and move when servers change
  stampede   cache stampede experiment: hit ratio around a pool change, per distribution
  hotkeys    a hot key's load on real servers, with mcring's hot-key spread off and on

mcring-bench <command> --help for its options.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char* command = argv[1];
  if (std::strcmp(command, "load") == 0) {
    return mcring::bench::runLoad(argc - 1, argv + 1);
  }
  if (std::strcmp(command, "lab") == 0) {
#ifdef MCRING_BENCH_LAB
    return runLab(argc - 1, argv + 1);
#else
    std::fprintf(stderr, "mcring-bench lab: not built (lab.h/lab.cc are not in this tree yet)\n");
    return 2;
#endif
  }
  if (std::strcmp(command, "stampede") == 0) {
    return mcring::bench::runStampede(argc - 1, argv + 1);
  }
  if (std::strcmp(command, "hotkeys") == 0) {
    return mcring::bench::runHotKeys(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "mcring-bench: unknown command '%s'\n\n%s", command, kUsage);
  return 2;
}
