// BlockingClient and the stampede experiment's control commands (warm, metadump, flush, reloads).
#include "bench/mcring_bench/stampede_memcache.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "bench/mcring_bench/clock.h"
#include "bench/mcring_bench/stampede_processes.h"
#include "proxy/protocol/reply_parser.h"

namespace mcring::bench {
namespace {

constexpr int kReplyTimeoutMs = 5000;
// Sets in flight per window while warming: deep enough to hide the round trip, small enough
// that neither side's socket buffer fills while the other waits.
constexpr uint64_t kWarmWindow = 256;

int urlHexDigit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;
}

// metadump URL-encodes keys ("key%3A00000042").
std::string urlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = urlHexDigit(text[i + 1]);
      const int lo = urlHexDigit(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// "<key>=<value>" field of a space-separated line, or empty.
std::string_view field(std::string_view line, std::string_view name) {
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) {
      end = line.size();
    }
    const std::string_view token = line.substr(at, end - at);
    if (token.size() > name.size() && token.substr(0, name.size()) == name &&
        token[name.size()] == '=') {
      return token.substr(name.size() + 1);
    }
    at = end + 1;
  }
  return {};
}

}  // namespace

bool BlockingClient::connect(uint16_t port, std::string* error) {
  close();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    *error = "connect 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
    close();
    return false;
  }
  const int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

void BlockingClient::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  buffer_.clear();
  begin_ = 0;
}

bool BlockingClient::sendAll(std::string_view data, std::string* error) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      *error = std::string("send: ") + std::strerror(errno);
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool BlockingClient::fill(int timeout_ms, std::string* error) {
  if (begin_ > 0 && begin_ == buffer_.size()) {
    buffer_.clear();
    begin_ = 0;
  } else if (begin_ > (1u << 20)) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  pollfd p{fd_, POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    *error = "no reply within " + std::to_string(timeout_ms) + " ms";
    return false;
  }
  char chunk[64 * 1024];
  const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
  if (n <= 0) {
    *error = n == 0 ? "connection closed" : std::string("recv: ") + std::strerror(errno);
    return false;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

bool BlockingClient::readLine(std::string* line, int timeout_ms, std::string* error) {
  for (;;) {
    // memcached ends lines in "\r\n", except metadump's key lines ("\n" alone).
    const size_t eol = buffer_.find('\n', begin_);
    if (eol != std::string::npos) {
      const size_t end = eol > begin_ && buffer_[eol - 1] == '\r' ? eol - 1 : eol;
      line->assign(buffer_, begin_, end - begin_);
      begin_ = eol + 1;
      return true;
    }
    if (!fill(timeout_ms, error)) {
      return false;
    }
  }
}

bool BlockingClient::skipBytes(uint64_t n, int timeout_ms, std::string* error) {
  while (buffer_.size() - begin_ < n) {
    if (!fill(timeout_ms, error)) {
      return false;
    }
  }
  begin_ += n;
  return true;
}

bool waitUntilServing(uint16_t port, pid_t pid, int timeout_ms, bool connect_only) {
  const uint64_t deadline = monotonicNs() + static_cast<uint64_t>(timeout_ms) * 1'000'000ULL;
  while (monotonicNs() < deadline) {
    if (g_stampede_interrupted.load()) {
      return false;
    }
    if (pid > 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        return false;  // exited (the caller's registry notices too)
      }
    }
    BlockingClient client;
    std::string error;
    if (client.connect(port, &error)) {
      if (connect_only) {
        return true;
      }
      std::string line;
      int64_t served_by = -1;
      bool complete = client.sendAll("stats\r\n", &error);
      while (complete && client.readLine(&line, 1000, &error) && line != "END") {
        if (line.rfind("STAT pid ", 0) == 0) {
          served_by = std::strtoll(line.c_str() + 9, nullptr, 10);
        }
      }
      complete = complete && line == "END";
      if (complete && served_by >= 0) {
        return pid <= 0 || served_by == pid;
      }
    }
    sleepInterruptible(2);
  }
  return false;
}

bool setAllKeys(uint16_t port, const KeySpace& keys, uint64_t count, uint32_t value_size,
                SetResult* result, std::string* error) {
  *result = {};
  const uint64_t started = monotonicNs();
  BlockingClient client;
  if (!client.connect(port, error)) {
    return false;
  }
  const std::string value(value_size, 'v');
  std::string batch;
  std::vector<char> key(keys.keyLength());
  std::string line;
  for (uint64_t first = 0; first < count; first += kWarmWindow) {
    if (g_stampede_interrupted.load()) {
      *error = "interrupted";
      return false;
    }
    const uint64_t last = std::min(count, first + kWarmWindow);
    batch.clear();
    for (uint64_t i = first; i < last; ++i) {
      keys.format(i, key.data());
      batch.append("set ").append(key.data(), key.size());
      batch.append(" 0 0 ").append(std::to_string(value_size)).append("\r\n");
      batch.append(value).append("\r\n");
    }
    if (!client.sendAll(batch, error)) {
      return false;
    }
    for (uint64_t i = first; i < last; ++i) {
      if (!client.readLine(&line, kReplyTimeoutMs, error)) {
        return false;
      }
      if (line == "STORED") {
        ++result->stored;
      } else {
        ++result->failed;
      }
    }
  }
  result->seconds = static_cast<double>(monotonicNs() - started) / 1e9;
  return true;
}

bool dumpKeys(uint16_t port, const KeySpace& keys, std::vector<uint64_t>* indices,
              uint64_t* foreign, std::string* error) {
  indices->clear();
  *foreign = 0;
  BlockingClient client;
  if (!client.connect(port, error)) {
    return false;
  }
  std::string line;
  // The crawler runs one job at a time; a BUSY answer means try again shortly.
  for (int attempt = 0;; ++attempt) {
    if (!client.sendAll("lru_crawler metadump all\r\n", error) ||
        !client.readLine(&line, kReplyTimeoutMs, error)) {
      return false;
    }
    if (line.rfind("BUSY", 0) != 0) {
      break;
    }
    if (attempt == 100 || !sleepInterruptible(20)) {
      *error = "lru_crawler stayed busy";
      return false;
    }
  }
  for (;;) {
    if (line == "END") {
      return true;
    }
    if (line.rfind("key=", 0) != 0) {
      *error = "unexpected metadump line: " + line;
      return false;
    }
    const std::string name = urlDecode(field(line, "key"));
    if (const auto index = keys.parse(name)) {
      indices->push_back(*index);
    } else {
      ++*foreign;
    }
    if (!client.readLine(&line, kReplyTimeoutMs, error)) {
      return false;
    }
  }
}

bool heldKeys(uint16_t port, const KeySpace& keys, const std::vector<uint64_t>& candidates,
              std::vector<uint64_t>* held, std::string* error) {
  if (candidates.empty()) {
    return true;
  }
  BlockingClient client;
  if (!client.connect(port, error)) {
    return false;
  }
  constexpr size_t kKeysPerGet = 100;
  std::vector<char> key(keys.keyLength());
  std::string request;
  std::string line;
  const protocol::ReplyParser parser;
  for (size_t first = 0; first < candidates.size(); first += kKeysPerGet) {
    request.assign("get");
    for (size_t i = first; i < std::min(candidates.size(), first + kKeysPerGet); ++i) {
      keys.format(candidates[i], key.data());
      request.append(" ").append(key.data(), key.size());
    }
    request.append("\r\n");
    if (!client.sendAll(request, error)) {
      return false;
    }
    for (;;) {
      if (!client.readLine(&line, kReplyTimeoutMs, error)) {
        return false;
      }
      // The proxy's own reply parser reads the line (readLine took its "\r\n" off).
      line.append("\r\n");
      protocol::Reply reply;
      const bool parsed = parser.parse(line, reply) == protocol::ParseStatus::Ok;
      if (parsed && reply.kind == protocol::ReplyKind::End) {
        break;
      }
      const auto index = parsed && reply.kind == protocol::ReplyKind::Value
                             ? keys.parse(reply.key.in(line))
                             : std::nullopt;
      if (!index) {
        *error = "unexpected reply to get: " + line;
        return false;
      }
      if (!client.skipBytes(reply.data_length, kReplyTimeoutMs, error)) {
        return false;
      }
      held->push_back(*index);
    }
  }
  return true;
}

bool flushAll(uint16_t port, std::string* error) {
  BlockingClient client;
  std::string line;
  if (!client.connect(port, error) || !client.sendAll("flush_all\r\n", error) ||
      !client.readLine(&line, kReplyTimeoutMs, error)) {
    return false;
  }
  if (line != "OK") {
    *error = "flush_all: " + line;
    return false;
  }
  return true;
}

bool readStats(uint16_t port, std::map<std::string, uint64_t>* stats, std::string* error) {
  stats->clear();
  BlockingClient client;
  if (!client.connect(port, error) || !client.sendAll("stats\r\n", error)) {
    return false;
  }
  std::string line;
  while (client.readLine(&line, kReplyTimeoutMs, error)) {
    if (line == "END") {
      return true;
    }
    if (line.rfind("STAT ", 0) != 0) {
      *error = "stats: " + line;
      return false;
    }
    const size_t space = line.find(' ', 5);
    if (space == std::string::npos) {
      continue;
    }
    uint64_t value = 0;
    const char* begin = line.data() + space + 1;
    const char* end = line.data() + line.size();
    const auto [at, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc() && at == end) {
      (*stats)[line.substr(5, space - 5)] = value;
    }
  }
  return false;
}

uint64_t backendWrites(const std::map<std::string, uint64_t>& stats) {
  uint64_t sum = 0;
  for (const char* field : {"cmd_set", "delete_hits", "delete_misses", "incr_hits", "incr_misses",
                            "decr_hits", "decr_misses", "cmd_touch"}) {
    const auto it = stats.find(field);
    sum += it == stats.end() ? 0 : it->second;
  }
  return sum;
}

bool latestReload(BlockingClient& client, ReloadRecordView* latest, std::string* error) {
  *latest = {};
  if (!client.sendAll("stats reloads\r\n", error)) {
    return false;
  }
  std::string line;
  for (;;) {
    if (!client.readLine(&line, kReplyTimeoutMs, error)) {
      return false;
    }
    if (line == "END") {
      return true;
    }
    // STAT reload:<id> time=<unix> source=<s> result=<r> generation=<g> [diff="..."]
    constexpr std::string_view kPrefix = "STAT reload:";
    if (line.rfind(kPrefix, 0) != 0) {
      *error = "unexpected `stats reloads` line: " + line;
      return false;
    }
    uint64_t id = 0;
    const char* digits = line.data() + kPrefix.size();
    std::from_chars(digits, line.data() + line.size(), id);
    if (id >= latest->id) {
      latest->id = id;
      latest->source = std::string(field(line, "source"));
      latest->result = std::string(field(line, "result"));
      const std::string_view g = field(line, "generation");
      latest->generation = 0;
      std::from_chars(g.data(), g.data() + g.size(), latest->generation);
      latest->line = line;
    }
  }
}

}  // namespace mcring::bench
