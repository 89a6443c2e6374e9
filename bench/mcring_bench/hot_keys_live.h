// `mcring-bench hotkeys`: the ring lab's hot-key scenario (section 5 of `mcring-bench lab`) live:
// real memcached servers behind mcring, a cache-aside load with a share of its gets on one key,
// and each server's share of the gets as the servers themselves count them (`cmd_get`), with
// mcring's hot-key spread off and on.
#pragma once

namespace mcring::bench {

int runHotKeys(int argc, char** argv);

}  // namespace mcring::bench
