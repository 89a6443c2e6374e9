// common's log rate limit: a flood of one class writes kLogLinesPerSecond lines, then one line
// with the count of those it suppressed; other classes are not affected.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "proxy/common/log.h"

namespace {

std::vector<std::string> readLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

size_t countContaining(const std::vector<std::string>& lines, const std::string& needle) {
  size_t n = 0;
  for (const auto& l : lines) {
    n += l.find(needle) != std::string::npos ? 1 : 0;
  }
  return n;
}

}  // namespace

TEST_CASE("a flood of one class is cut to a few lines a second and the rest counted") {
  char dir[] = "/tmp/mcring-unit-log.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/log";
  mcring::common::logInit(3, path);
  // Start at the beginning of a second so the whole flood falls in one.
  const auto start = std::chrono::system_clock::now();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const time_t first = ts.tv_sec;
  for (int i = 0; i < 1000; ++i) {
    MCRING_LOG_LIMITED(Warn, "flood", "flood line %d", i);
  }
  MCRING_LOG_LIMITED(Warn, "other", "another class");
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const bool one_second = ts.tv_sec == first;
  // Wait (at most 1.2 s) for the next second, then report.
  for (int i = 0; i < 120; ++i) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ts.tv_sec > first + (one_second ? 0 : 1)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  mcring::common::logFlushSuppressed();
  (void)start;
  auto lines = readLines(path);
  const size_t written = countContaining(lines, "flood line");
  CHECK(written >= static_cast<size_t>(mcring::common::kLogLinesPerSecond));
  CHECK(written <= static_cast<size_t>(2 * mcring::common::kLogLinesPerSecond));
  CHECK(countContaining(lines, "another class") == 1);
  REQUIRE(countContaining(lines, "similar lines suppressed") >= 1);
  if (one_second) {
    CHECK(countContaining(lines, "flood: 995 similar lines suppressed") == 1);
  }
  mcring::common::logInit(0, "");
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("a log line is printable ASCII: control bytes and bytes of 0x80 and above are escaped") {
  char dir[] = "/tmp/mcring-unit-log.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/log";
  mcring::common::logInit(3, path);
  const std::string peer =
      "ok\n[forged] line\r\x9b"
      "2J\xff\x80 end";
  MCRING_LOG(Warn, "peer said %s", peer.c_str());
  auto lines = readLines(path);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("peer said ok\\x0a[forged] line\\x0d\\x9b2J\\xff\\x80 end") !=
        std::string::npos);
  for (const char ch : lines[0]) {
    const auto c = static_cast<unsigned char>(ch);
    CHECK((c == '\t' || (c >= 0x20 && c < 0x7f)));
  }
  mcring::common::logInit(0, "");
  unlink(path.c_str());
  rmdir(dir);
}
