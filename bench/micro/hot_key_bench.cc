// hot_key_bench: what hot-key detection costs a request, in process: HotKeySketch::record of
// pre-generated keys (the hash included, as Dispatcher::countForBackend computes it), for a
// uniform stream over 100,000 keys (every record misses the sketch and evicts), the same with 30%
// of it on one key, and a scan of distinct keys.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "proxy/stats/hot_key_sketch.h"
#include "proxy/stats/hyperloglog.h"

namespace {

std::vector<std::string> keys(size_t n, size_t distinct, double hot_share, bool scan) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<size_t> pick(0, distinct - 1);
  std::bernoulli_distribution hot(hot_share);
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (hot_share > 0 && hot(rng)) {
      out.emplace_back("key:celebrity");
    } else {
      out.push_back("key:" + std::to_string(scan ? i : pick(rng)));
    }
  }
  return out;
}

void record(benchmark::State& state, const std::vector<std::string>& stream) {
  mcring::stats::HotKeySketch sketch(static_cast<size_t>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const std::string& k = stream[i];
    sketch.record(k, mcring::stats::HyperLogLog::hashKey(k));
    i = i + 1 == stream.size() ? 0 : i + 1;
  }
  benchmark::DoNotOptimize(sketch.total());
}

void BM_RecordUniform(benchmark::State& state) {
  static const auto stream = keys(1 << 20, 100000, 0, false);
  record(state, stream);
}
void BM_RecordHot30(benchmark::State& state) {
  static const auto stream = keys(1 << 20, 100000, 0.3, false);
  record(state, stream);
}
void BM_RecordScan(benchmark::State& state) {
  static const auto stream = keys(1 << 20, 0, 0, true);
  record(state, stream);
}
// The hash alone, which the per-backend distinct-key sketch already paid for before.
void BM_HashOnly(benchmark::State& state) {
  static const auto stream = keys(1 << 20, 100000, 0, false);
  size_t i = 0;
  uint64_t x = 0;
  for (auto _ : state) {
    x ^= mcring::stats::HyperLogLog::hashKey(stream[i]);
    i = i + 1 == stream.size() ? 0 : i + 1;
  }
  benchmark::DoNotOptimize(x);
}

}  // namespace

BENCHMARK(BM_RecordUniform)->Arg(128)->Arg(1024);
BENCHMARK(BM_RecordHot30)->Arg(128);
BENCHMARK(BM_RecordScan)->Arg(128);
BENCHMARK(BM_HashOnly);
BENCHMARK_MAIN();
