// AdminAccess: Host and Origin checks, the bearer token (constant-time comparison of SHA-256
// digests, so neither the bytes nor the length of the token show in the timing).
#include "proxy/admin/admin_access.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "proxy/common/log.h"

namespace mcring::core {
namespace {

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string unbracket(const std::string& a) {
  if (a.size() >= 2 && a.front() == '[' && a.back() == ']') {
    return a.substr(1, a.size() - 2);
  }
  return a;
}

std::string bracket(const std::string& a) {
  return a.find(':') != std::string::npos && a.front() != '[' ? "[" + a + "]" : a;
}

bool hasPort(const std::string& hostport) {
  size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon + 1 == hostport.size()) {
    return false;
  }
  if (hostport.front() == '[' && hostport.rfind(']') > colon) {
    return false;  // "[::1]": the colons are the address's
  }
  if (hostport.front() != '[' && hostport.find(':') != colon) {
    return false;  // a bare IPv6 address
  }
  for (size_t i = colon + 1; i < hostport.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(hostport[i]))) {
      return false;
    }
  }
  return true;
}

bool isWildcard(const std::string& address) {
  std::string a = unbracket(address);
  return a.empty() || a == "0.0.0.0" || a == "::";
}

void sha256(const std::string& s, unsigned char out[EVP_MAX_MD_SIZE]) {
  unsigned int len = 0;
  EVP_Digest(s.data(), s.size(), out, &len, EVP_sha256(), nullptr);
}

}  // namespace

bool AdminAccess::isLoopbackAddress(const std::string& address) {
  std::string a = lower(unbracket(address));
  if (a == "localhost") {
    return true;
  }
  in_addr v4{};
  if (inet_pton(AF_INET, a.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, a.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) {
      return true;
    }
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;  // a name other than localhost: it may resolve to anything
}

bool AdminAccess::readToken(const std::string& path, std::string* token, std::string* error) {
  // Not O_NOFOLLOW: a Kubernetes Secret's file is a symlink into its ..data directory.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *error = "admin token file " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *error = "admin token file " + path + ": not a regular file";
    return false;
  }
  std::string data(kMaxTokenFileBytes + 1, '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got > kMaxTokenFileBytes) {
    *error = "admin token file " + path + ": larger than " + std::to_string(kMaxTokenFileBytes) +
             " bytes";
    return false;
  }
  data.resize(got);
  size_t b = 0;
  size_t e = data.size();
  while (b < e && std::isspace(static_cast<unsigned char>(data[b]))) {
    ++b;
  }
  while (e > b && std::isspace(static_cast<unsigned char>(data[e - 1]))) {
    --e;
  }
  std::string t = data.substr(b, e - b);
  for (char c : t) {
    if (!std::isgraph(static_cast<unsigned char>(c))) {
      *error = "admin token file " + path +
               ": the token must be one word of printable characters (no spaces)";
      return false;
    }
  }
  if (t.size() < kMinTokenBytes) {
    *error = "admin token file " + path + ": the token is shorter than " +
             std::to_string(kMinTokenBytes) + " characters (e.g. openssl rand -hex 32)";
    return false;
  }
  *token = std::move(t);
  return true;
}

bool AdminAccess::init(AdminAccessOptions options, std::string* error) {
  options_ = std::move(options);
  if (!options_.token_file.empty()) {
    if (!readToken(options_.token_file, &token_, error)) {
      return false;
    }
    struct stat st {};
    if (::stat(options_.token_file.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0) {
      MCRING_LOG(Warn, "admin token file %s is readable by every user: chmod o-r it",
                 options_.token_file.c_str());
    }
    return true;
  }
  if (!isLoopbackAddress(options_.address)) {
    *error = "the admin endpoint on " + bracket(unbracket(options_.address)) + ":" +
             std::to_string(options_.port) +
             " is not loopback, so POST /reload there needs a token: give "
             "--admin-token-file FILE (a file holding one token; clients send "
             "'Authorization: Bearer <token>'), or bind it to loopback (-a 127.0.0.1)";
    return false;
  }
  return true;
}

bool AdminAccess::hostAllowed(const std::string& host_in, const net::HttpRequest& request) const {
  const std::string host = lower(host_in);
  const std::string port = std::to_string(options_.port);
  auto matches = [&](const std::string& candidate_in) {
    const std::string candidate = lower(candidate_in);
    if (hasPort(candidate)) {
      return host == candidate;
    }
    const std::string named = bracket(candidate);
    return host == named + ":" + port || (options_.port == 80 && host == named);
  };
  if (!request.local_address.empty()) {
    if (matches(request.local_address)) {
      return true;
    }
    if (isLoopbackAddress(request.local_address) &&
        (matches("localhost") || matches("127.0.0.1") || matches("::1"))) {
      return true;
    }
  }
  if (!isWildcard(options_.address) && matches(unbracket(options_.address))) {
    return true;
  }
  for (const std::string& name : options_.allowed_hosts) {
    if (matches(name)) {
      return true;
    }
  }
  return false;
}

bool AdminAccess::tokenMatches(const char* authorization) {
  if (authorization == nullptr) {
    return false;
  }
  std::string value = authorization;
  size_t b = value.find_first_not_of(" \t");
  if (b == std::string::npos || lower(value.substr(b, 7)) != "bearer ") {
    return false;
  }
  std::string presented = value.substr(b + 7);
  presented.erase(0, presented.find_first_not_of(" \t"));
  presented.erase(presented.find_last_not_of(" \t") + 1);
  std::string current;
  std::string error;
  if (readToken(options_.token_file, &current, &error)) {
    token_ = std::move(current);  // rotated in place (a Secret update) applies at once
  } else {
    MCRING_LOG_LIMITED(Warn, "admin token reread", "%s; keeping the token read before",
                       error.c_str());
  }
  unsigned char want[EVP_MAX_MD_SIZE];
  unsigned char got[EVP_MAX_MD_SIZE];
  sha256(token_, want);
  sha256(presented, got);
  return CRYPTO_memcmp(want, got, 32) == 0;
}

namespace {
constexpr std::string_view kForeignHost =
    "the Host header does not name this admin endpoint (its address and port, localhost on "
    "loopback, or a name given with --admin-allowed-hosts)\n";
}  // namespace

AdminAccess::Verdict AdminAccess::checkView(const net::HttpRequest& request) const {
  const char* host = request.header("Host");
  if (host != nullptr && !hostAllowed(host, request)) {
    return {421, std::string(kForeignHost)};
  }
  return {};
}

AdminAccess::Verdict AdminAccess::checkComputation(const net::HttpRequest& request) const {
  const char* host = request.header("Host");
  if (host == nullptr || !hostAllowed(host, request)) {
    return {421, std::string(kForeignHost)};
  }
  if (const char* origin = request.header("Origin"); origin != nullptr) {
    std::string o = lower(origin);
    std::string default_port;
    if (o.rfind("http://", 0) == 0) {
      o.erase(0, 7);
      default_port = "80";
    } else if (o.rfind("https://", 0) == 0) {
      o.erase(0, 8);
      default_port = "443";
    } else {
      o.clear();
    }
    o = o.substr(0, o.find('/'));
    if (!o.empty() && !hasPort(o)) {
      o += ":" + default_port;
    }
    if (o.empty() || !hostAllowed(o, request)) {
      return {403, "cross-origin requests are refused here\n"};
    }
  }
  return {};
}

AdminAccess::Verdict AdminAccess::checkMutation(const net::HttpRequest& request) {
  if (Verdict verdict = checkComputation(request); verdict.status != 0) {
    return verdict;
  }
  if (tokenRequired() && !tokenMatches(request.header("Authorization"))) {
    return {401,
            "this endpoint needs 'Authorization: Bearer <token>' (the token of "
            "--admin-token-file)\n"};
  }
  return {};
}

}  // namespace mcring::core
