// readConfigFile: open without blocking, check the kind and size of what was opened (fstat, so
// the file checked is the file read), then read at most one byte past the cap.
#include "config/config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcring::config {
namespace {

const char* kindOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    default:
      return "not a regular file";
  }
}

std::string tooLarge() {
  return "larger than the " + std::to_string(kMaxConfigFileBytes >> 20) +
         " MiB a config file may have";
}

}  // namespace

bool readConfigFile(const std::string& path, std::string* bytes, std::string* error) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = std::string("cannot read config file: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = std::string("cannot read config file: ") + std::strerror(errno);
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = std::string("cannot read config file: it is ") + kindOf(st.st_mode) +
             ", not a regular file";
    ::close(fd);
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    *error =
        "cannot read config file: it has " + std::to_string(st.st_size) + " bytes, " + tooLarge();
    ::close(fd);
    return false;
  }
  // The file may grow while it is read: read no more than one byte past the cap.
  bytes->clear();
  bytes->reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 14];
  while (bytes->size() <= kMaxConfigFileBytes) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      *error = std::string("cannot read config file: ") + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) {
      break;
    }
    bytes->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (bytes->size() > kMaxConfigFileBytes) {
    *error = "cannot read config file: it grew while being read, " + tooLarge();
    return false;
  }
  return true;
}

}  // namespace mcring::config
