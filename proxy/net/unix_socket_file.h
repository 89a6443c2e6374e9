// The file a unix-socket listener binds: a socket left by an earlier run is removed first, since
// bind() fails on any existing name; anything else at the path (a regular file, a directory, a
// symlink) is somebody's data and is never removed.
#pragma once

#include <string>

namespace mcring::net {

// Removes `path` if it is a socket (lstat: a symlink is not followed). True if nothing is
// there now; false, with *error, if something other than a socket is there or it cannot go.
bool removeStaleSocket(const std::string& path, std::string* error);

// On close: removes `path` only if it is still a socket (another program may have put its own
// file there since).
void removeOwnSocket(const std::string& path);

}  // namespace mcring::net
