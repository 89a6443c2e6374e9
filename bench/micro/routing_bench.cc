// bench_routing: ns per lookup (key hash included), build time and memory of every distribution.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {
namespace {

// 8192 keys of 10-40 printable bytes, fixed seed: the same keys in every run.
const std::vector<std::string>& benchKeys() {
  static const std::vector<std::string> keys = [] {
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int> len(10, 40);
    std::uniform_int_distribution<int> ch('!', '~');
    std::vector<std::string> out(8192);
    for (auto& k : out) {
      k.resize(static_cast<size_t>(len(rng)));
      for (auto& c : k) {
        c = static_cast<char>(ch(rng));
      }
    }
    return out;
  }();
  return keys;
}

std::vector<ServerSpec> servers(int64_t n) {
  std::vector<ServerSpec> out;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back({"10." + std::to_string(i / 65536) + "." + std::to_string((i / 256) % 256) + "." +
                       std::to_string(i % 256),
                   11211, 1, ""});
  }
  return out;
}

RouterOptions optionsFor(Distribution d, KetamaCompat compat = KetamaCompat::Twemproxy) {
  RouterOptions o;  // twemproxy's default key hash, fnv1a_64
  o.distribution = d;
  o.ketama_compat = compat;
  return o;
}

void routeBench(benchmark::State& state, Distribution d, KetamaCompat compat) {
  const auto s = servers(state.range(0));
  std::string error;
  const auto router = Router::build(s, optionsFor(d, compat), &error);
  if (!router) {
    state.SkipWithError(error.c_str());
    return;
  }
  const auto& keys = benchKeys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(router->route(keys[i++ & (keys.size() - 1)]));
  }
  state.counters["bytes"] = static_cast<double>(router->memoryBytes());
}

void buildBench(benchmark::State& state, Distribution d, KetamaCompat compat) {
  const auto s = servers(state.range(0));
  size_t bytes = 0;
  for (auto _ : state) {
    const auto router = Router::build(s, optionsFor(d, compat), nullptr);
    bytes = router->memoryBytes();
    benchmark::DoNotOptimize(router.get());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void hashBench(benchmark::State& state, HashFunction h) {
  const auto& keys = benchKeys();
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(hashKey(h, keys[i++ & (keys.size() - 1)]));
  }
}

#define MCRING_DIST_BENCH(label, dist, compat)                                   \
  BENCHMARK_CAPTURE(routeBench, label, Distribution::dist, KetamaCompat::compat) \
      ->Arg(5)                                                                   \
      ->Arg(100)                                                                 \
      ->Arg(1000);                                                               \
  BENCHMARK_CAPTURE(buildBench, label, Distribution::dist, KetamaCompat::compat) \
      ->Arg(5)                                                                   \
      ->Arg(100)                                                                 \
      ->Arg(1000)                                                                \
      ->Unit(benchmark::kMicrosecond);

MCRING_DIST_BENCH(ketama, Ketama, Twemproxy)
MCRING_DIST_BENCH(ketama_libmemcached, Ketama, Libmemcached)
MCRING_DIST_BENCH(modula, Modula, Twemproxy)
MCRING_DIST_BENCH(random, Random, Twemproxy)
MCRING_DIST_BENCH(jump, Jump, Twemproxy)
MCRING_DIST_BENCH(rendezvous, Rendezvous, Twemproxy)
MCRING_DIST_BENCH(maglev, Maglev, Twemproxy)

BENCHMARK_CAPTURE(hashBench, one_at_a_time, HashFunction::OneAtATime);
BENCHMARK_CAPTURE(hashBench, md5, HashFunction::Md5);
BENCHMARK_CAPTURE(hashBench, crc32, HashFunction::Crc32);
BENCHMARK_CAPTURE(hashBench, fnv1a_64, HashFunction::Fnv1a_64);
BENCHMARK_CAPTURE(hashBench, hsieh, HashFunction::Hsieh);
BENCHMARK_CAPTURE(hashBench, murmur, HashFunction::Murmur);
BENCHMARK_CAPTURE(hashBench, jenkins, HashFunction::Jenkins);
BENCHMARK_CAPTURE(hashBench, xxh3, HashFunction::Xxh3);

}  // namespace
}  // namespace mcring::routing

BENCHMARK_MAIN();
