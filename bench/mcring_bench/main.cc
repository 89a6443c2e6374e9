// mcring-bench: the project's experiment tool (not installed): dispatches to the stampede
// experiment, the ring lab, the live hot-key run and the internal load driver.
#include <cstdio>
#include <cstring>

#include "bench/mcring_bench/hot_keys_live.h"
#include "bench/mcring_bench/lab.h"
#include "bench/mcring_bench/load_command.h"
#include "bench/mcring_bench/stampede.h"

namespace {

constexpr char kUsage[] = R"(usage: mcring-bench <command> [options]

commands
  stampede   cache stampede experiment: hit ratio around a pool change, per distribution
  lab        ring lab: how keys spread over servers and move when servers change
  hotkeys    a hot key's load on real servers, with mcring's hot-key spread off and on
  load       the load driver of bench/compare.py and bench/tls_compare.py (internal)

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
    return runLab(argc - 1, argv + 1);
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
