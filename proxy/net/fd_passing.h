// Descriptors passed between processes over a Unix socket (SCM_RIGHTS), and what a passed
// listening socket is bound to. The upgrade hand-over (control/upgrade.h) and systemd's socket
// activation (control/inherited_listeners.h) use them; plain POSIX, no libevent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proxy/common/socket_address.h"

namespace mcring::net {

// One message on a SOCK_SEQPACKET socket: `tag` (a short text) with `fds` attached (at most
// kMaxFdsPerMessage). False and *error on failure.
inline constexpr size_t kMaxFdsPerMessage = 64;
bool sendWithFds(int sock, const std::string& tag, const std::vector<int>& fds, std::string* error);

// Waits up to timeout_ms for one message; *tag gets its text and *fds the descriptors it carried
// (close-on-exec). False and *error on timeout, end of file (the peer closed: *tag is "") or
// failure.
bool receiveWithFds(int sock, uint32_t timeout_ms, std::string* tag, std::vector<int>* fds,
                    std::string* error);

// The address a listening stream socket is bound to; nullopt if `fd` is not one.
std::optional<common::SocketAddress> listeningAddress(int fd);

}  // namespace mcring::net
