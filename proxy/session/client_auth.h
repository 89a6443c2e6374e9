// memcached's ASCII authentication (-Y), as a client of mcring sees it (client_auth_file).
//
// Until a connection has authenticated, its first command must be a `set` (any key, flags and
// exptime, noreply or not) whose data is "user password"; memcached 1.6.18 answers, and so does
// mcring:
//   accepted                                   STORED (even with noreply)
//   known format, wrong user or password       CLIENT_ERROR authentication failure
//   fewer than two space-separated tokens      CLIENT_ERROR bad authentication token format
//   data not ended by \r\n                     CLIENT_ERROR bad command line termination
//   any other command, or a malformed set line CLIENT_ERROR unauthenticated, and whatever else
//                                              the client had sent so far is discarded
// The connection stays open and may try again. Tokens are split on spaces (runs of them count
// as one, leading ones are skipped, a third token and beyond are ignored); a tab is not a
// separator.
#pragma once

#include <string_view>

#include "config/credentials.h"

namespace mcring::core {

enum class AuthResult : uint8_t { Accepted, Failed, BadFormat };

// `data`: the set's data block without its \r\n.
AuthResult checkAuthToken(std::string_view data, const config::Credentials& credentials);

inline constexpr std::string_view kAuthStored = "STORED\r\n";
inline constexpr std::string_view kAuthFailure = "CLIENT_ERROR authentication failure\r\n";
inline constexpr std::string_view kAuthBadFormat =
    "CLIENT_ERROR bad authentication token format\r\n";
inline constexpr std::string_view kAuthBadTermination =
    "CLIENT_ERROR bad command line termination\r\n";
inline constexpr std::string_view kUnauthenticated = "CLIENT_ERROR unauthenticated\r\n";

}  // namespace mcring::core
