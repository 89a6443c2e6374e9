// checkAuthToken: memcached's tokenizing of the authentication data.
#include "proxy/session/client_auth.h"

namespace mcring::core {

AuthResult checkAuthToken(std::string_view data, const config::Credentials& credentials) {
  std::string_view tokens[2];
  size_t found = 0;
  size_t pos = 0;
  while (found < 2 && pos < data.size()) {
    while (pos < data.size() && data[pos] == ' ') {
      ++pos;
    }
    if (pos == data.size()) {
      break;
    }
    size_t end = data.find(' ', pos);
    if (end == std::string_view::npos) {
      end = data.size();
    }
    tokens[found++] = data.substr(pos, end - pos);
    pos = end;
  }
  if (found < 2) {
    return AuthResult::BadFormat;
  }
  return credentials.check(tokens[0], tokens[1]) ? AuthResult::Accepted : AuthResult::Failed;
}

}  // namespace mcring::core
