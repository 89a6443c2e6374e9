// SCM_RIGHTS messages and the bound address of an inherited listening socket.
#include "proxy/net/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace mcring::net {

bool sendWithFds(int sock, const std::string& tag, const std::vector<int>& fds,
                 std::string* error) {
  if (fds.size() > kMaxFdsPerMessage) {
    *error = "too many descriptors for one message";
    return false;
  }
  iovec iov{const_cast<char*>(tag.data()), tag.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(tag.size())) {
    *error = std::string("sendmsg: ") + (n < 0 ? std::strerror(errno) : "short write");
    return false;
  }
  return true;
}

bool receiveWithFds(int sock, uint32_t timeout_ms, std::string* tag, std::vector<int>* fds,
                    std::string* error) {
  tag->clear();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      *error = "no message within " + std::to_string(timeout_ms) + " ms";
      return false;
    }
    pollfd p{sock, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready < 0) {
      *error = std::string("poll: ") + std::strerror(errno);
      return false;
    }
    if (ready > 0) {
      break;
    }
  }
  char buf[256];
  iovec iov{buf, sizeof(buf)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->push_back(fd);
      }
    }
  }
  if (n < 0) {
    *error = std::string("recvmsg: ") + std::strerror(errno);
    return false;
  }
  if (n == 0) {
    *error = "the other process closed the socket";
    return false;
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    *error = "descriptors were truncated";
    return false;
  }
  tag->assign(buf, static_cast<size_t>(n));
  return true;
}

std::optional<common::SocketAddress> listeningAddress(int fd) {
  int type = 0;
  int accepting = 0;
  socklen_t len = sizeof(int);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    return std::nullopt;
  }
  len = sizeof(int);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || accepting == 0) {
    return std::nullopt;
  }
  common::SocketAddress address;
  address.length = sizeof(address.storage);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address.storage), &address.length) != 0) {
    return std::nullopt;
  }
  return address;
}

}  // namespace mcring::net
