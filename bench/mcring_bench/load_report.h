// How a load run is shown: the progress line, the summary (text or JSON), the timeline CSV.
#pragma once

#include <cstdio>
#include <string>

#include "bench/mcring_bench/load_generator.h"
#include "bench/mcring_bench/load_options.h"
#include "bench/mcring_bench/load_stats.h"

namespace mcring::bench {

// One line per second for stderr: elapsed, ops/s, hit ratio, p50/p99, errors.
std::string progressLine(const IntervalStats& second);

void printSummaryText(std::FILE* out, const LoadOptions& options, const LoadResult& result);
// One JSON object on one line (field names in bench/README.md).
void printSummaryJson(std::FILE* out, const LoadOptions& options, const LoadResult& result);

// --timeline: one CSV row per second, written as the run goes so a long run can be watched.
class TimelineWriter {
 public:
  ~TimelineWriter();
  // False with *error set if the file cannot be created.
  bool open(const std::string& path, std::string* error);
  void write(const IntervalStats& second);

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace mcring::bench
