// Only a regular file up to kMaxConfigFileBytes is read as a config: anything else is refused at
// once, with a message naming the file, whatever path loads it (start, -t, reload, file watch:
// all go through loadConfigFile).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "config/config.h"
#include "config/config_file.h"

namespace mcring::config {
namespace {

std::string onlyError(const LoadResult& r) {
  REQUIRE(r.errors.size() == 1);
  CHECK_FALSE(r.config);
  return r.errors[0].toString();
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/mcring-config-file-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    for (const char* name : {"/fifo", "/big.yml", "/cap.yml"}) {
      ::unlink((path + name).c_str());
    }
    ::rmdir(path.c_str());
  }
};

constexpr std::string_view kPool = "p:\n  listen: 127.0.0.1:22121\n  servers:\n    - 127.0.0.1:11211:1\n";

}  // namespace

TEST_CASE("a character device is refused at once, not read until memory runs out") {
  const auto start = std::chrono::steady_clock::now();
  CHECK(onlyError(loadConfigFile("/dev/zero")) ==
        "/dev/zero: cannot read config file: it is a character device, not a regular file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("a directory and a FIFO are refused; the FIFO's open does not wait for a writer") {
  TempDir dir;
  CHECK(onlyError(loadConfigFile(dir.path)) ==
        dir.path + ": cannot read config file: it is a directory, not a regular file");
  const std::string fifo = dir.path + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK(onlyError(loadConfigFile(fifo)) ==
        fifo + ": cannot read config file: it is a FIFO, not a regular file");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("a regular file over the cap is refused; one at the cap is read") {
  TempDir dir;
  const std::string big = dir.path + "/big.yml";
  {
    std::ofstream out(big, std::ios::binary);
    out << kPool << std::string(kMaxConfigFileBytes - kPool.size() + 1, '#');
  }
  CHECK(onlyError(loadConfigFile(big)) ==
        big + ": cannot read config file: it has " + std::to_string(kMaxConfigFileBytes + 1) +
            " bytes, larger than the 4 MiB a config file may have");
  const std::string cap = dir.path + "/cap.yml";
  {
    // A comment fills it to exactly the cap: still a config.
    std::ofstream out(cap, std::ios::binary);
    out << kPool << "#" << std::string(kMaxConfigFileBytes - kPool.size() - 2, 'x') << "\n";
  }
  struct stat st {};
  REQUIRE(::stat(cap.c_str(), &st) == 0);
  REQUIRE(static_cast<uint64_t>(st.st_size) == kMaxConfigFileBytes);
  LoadResult r = loadConfigFile(cap);
  CHECK(r.ok());
}

TEST_CASE("a symlink to a regular file is followed (a Kubernetes ConfigMap is one)") {
  LoadResult r = loadConfigFile("/proc/self/cwd/config/examples/local.yml");
  CHECK(r.ok());
}

}  // namespace mcring::config
