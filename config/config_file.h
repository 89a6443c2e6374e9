// Reading a config file's bytes: only a regular file, and only up to a size no real config comes
// near, so a mistaken path (/dev/zero, a FIFO, a directory, a log file) is refused at once with
// a clear message instead of blocking or filling memory.
#pragma once

#include <cstdint>
#include <string>

namespace mcring::config {

// The largest config file accepted. A pool with 10,000 servers is well under 1 MiB.
inline constexpr uint64_t kMaxConfigFileBytes = 4 * 1024 * 1024;

// Reads the file at `path` (symlinks followed: a Kubernetes ConfigMap is one) into *bytes.
// False, with *error saying why (not naming the file), if it cannot be opened, is not a regular
// file, or is larger than kMaxConfigFileBytes.
bool readConfigFile(const std::string& path, std::string* bytes, std::string* error);

}  // namespace mcring::config
