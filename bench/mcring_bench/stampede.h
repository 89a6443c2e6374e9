// `mcring-bench stampede`: the cache stampede experiment, end to end.
#pragma once

namespace mcring::bench {

// argv[0] is "stampede". Returns 0 when every run completed, 1 when one failed, 2 on bad flags,
// 130 when interrupted (children are stopped in every case).
int runStampede(int argc, char** argv);

}  // namespace mcring::bench
