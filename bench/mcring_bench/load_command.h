// `mcring-bench load`: the command-line front of LoadGenerator.
#pragma once

namespace mcring::bench {

// argv[0] is "load". Returns the exit status: 0 on a run with replies, 1 when nothing was
// replied to or the request accounting did not balance, 2 on bad flags.
int runLoad(int argc, char** argv);

}  // namespace mcring::bench
