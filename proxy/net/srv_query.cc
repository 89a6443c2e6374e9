// SrvQuery: build the query, send it on a connected UDP socket, parse the answer section.
#include "proxy/net/srv_query.h"

#include <event2/event.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "proxy/net/event_loop.h"

namespace mcring::net {
namespace {

constexpr uint16_t kTypeSrv = 33;

uint16_t be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

// Reads a (possibly compressed) name at *pos; advances *pos past it in the message. False if
// it runs off the end or loops.
bool readName(const uint8_t* data, size_t size, size_t* pos, std::string* out) {
  size_t p = *pos;
  bool jumped = false;
  int hops = 0;
  out->clear();
  while (true) {
    if (p >= size) {
      return false;
    }
    uint8_t len = data[p];
    if ((len & 0xC0) == 0xC0) {
      if (p + 1 >= size || ++hops > 32) {
        return false;
      }
      if (!jumped) {
        *pos = p + 2;
      }
      jumped = true;
      p = ((len & 0x3F) << 8) | data[p + 1];
      continue;
    }
    if (len == 0) {
      if (!jumped) {
        *pos = p + 1;
      }
      return true;
    }
    if (p + 1 + len > size || out->size() > 255) {
      return false;
    }
    if (!out->empty()) {
      *out += '.';
    }
    out->append(reinterpret_cast<const char*>(data + p + 1), len);
    p += 1 + len;
  }
}

}  // namespace

SrvQuery::SrvQuery(EventLoop& loop, const void* nameserver, int length, uint32_t timeout_ms)
    : loop_(loop),
      nameserver_(static_cast<const uint8_t*>(nameserver),
                  static_cast<const uint8_t*>(nameserver) + length),
      timeout_ms_(timeout_ms) {}

SrvQuery::~SrvQuery() {
  if (ev_ != nullptr) {
    event_free(ev_);
  }
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void SrvQuery::start(const std::string& name, Callback done) {
  done_ = std::move(done);
  std::random_device random;
  id_ = static_cast<uint16_t>(random());
  packet_ = {static_cast<uint8_t>(id_ >> 8),
             static_cast<uint8_t>(id_),
             0x01,
             0x00,
             0,
             1,
             0,
             0,
             0,
             0,
             0,
             0};
  size_t begin = 0;
  while (begin <= name.size()) {
    size_t dot = name.find('.', begin);
    size_t end = dot == std::string::npos ? name.size() : dot;
    if (end > begin) {
      size_t len = std::min<size_t>(end - begin, 63);
      packet_.push_back(static_cast<uint8_t>(len));
      packet_.insert(packet_.end(), name.begin() + begin, name.begin() + begin + len);
    }
    if (dot == std::string::npos) {
      break;
    }
    begin = dot + 1;
  }
  packet_.insert(packet_.end(), {0, 0, kTypeSrv, 0, 1});
  const auto* sa = reinterpret_cast<const sockaddr*>(nameserver_.data());
  fd_ = ::socket(sa->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, sa, static_cast<socklen_t>(nameserver_.size())) != 0) {
    // Reported on the loop's next turn, as every answer is (a timer of zero, freed with this).
    start_error_ = "cannot reach the nameserver";
    tries_ = 2;
    ev_ = event_new(loop_.raw(), -1, 0, &SrvQuery::onEvent, this);
    timeval now{0, 0};
    event_add(ev_, &now);
    return;
  }
  ev_ = event_new(loop_.raw(), fd_, EV_READ | EV_PERSIST, &SrvQuery::onEvent, this);
  send();
}

void SrvQuery::send() {
  ++tries_;
  // A refused send (ICMP port unreachable from an earlier try) shows as a timeout: one retry.
  ssize_t ignored = ::send(fd_, packet_.data(), packet_.size(), MSG_NOSIGNAL);
  (void)ignored;
  timeval tv{static_cast<time_t>(timeout_ms_ / 1000),
             static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000)};
  event_add(ev_, &tv);
}

void SrvQuery::onEvent(int fd, short what, void* arg) {
  auto* self = static_cast<SrvQuery*>(arg);
  if ((what & EV_TIMEOUT) != 0) {
    if (self->tries_ < 2) {
      self->send();
      return;
    }
    self->finish(false, {}, self->start_error_.empty() ? "request timed out" : self->start_error_);
    return;
  }
  uint8_t buf[4096];
  ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
  if (n < 0) {
    return;  // ECONNREFUSED and the like: wait for the timeout (and its retry)
  }
  std::vector<SrvRecord> records;
  std::string error;
  if (!parseReply(buf, static_cast<size_t>(n), self->id_, &records, &error)) {
    if (error.empty()) {
      return;  // not the reply to this query: keep waiting
    }
    self->finish(false, {}, error);
    return;
  }
  self->finish(true, std::move(records), "");
}

void SrvQuery::finish(bool ok, std::vector<SrvRecord> records, std::string error) {
  if (ev_ != nullptr) {
    event_del(ev_);
  }
  Callback done = std::move(done_);
  done_ = nullptr;
  if (done) {
    done(ok, std::move(records), std::move(error));  // last: it may destroy this query
  }
}

bool SrvQuery::parseReply(const uint8_t* data, size_t size, uint16_t id,
                          std::vector<SrvRecord>* records, std::string* error) {
  error->clear();
  if (size < 12 || be16(data) != id || (data[2] & 0x80) == 0) {
    return false;  // not our reply (error left empty)
  }
  if ((data[2] & 0x02) != 0) {
    *error = "reply truncated (too many SRV records for UDP)";
    return false;
  }
  const int rcode = data[3] & 0x0F;
  if (rcode == 3) {
    *error = "no such name (NXDOMAIN)";
    return false;
  }
  if (rcode != 0) {
    *error = rcode == 2   ? "server failed"
             : rcode == 5 ? "query refused"
                          : "DNS error " + std::to_string(rcode);
    return false;
  }
  const uint16_t questions = be16(data + 4);
  const uint16_t answers = be16(data + 6);
  size_t pos = 12;
  std::string name;
  for (uint16_t i = 0; i < questions; ++i) {
    if (!readName(data, size, &pos, &name) || pos + 4 > size) {
      *error = "malformed reply";
      return false;
    }
    pos += 4;
  }
  for (uint16_t i = 0; i < answers; ++i) {
    if (!readName(data, size, &pos, &name) || pos + 10 > size) {
      *error = "malformed reply";
      return false;
    }
    const uint16_t type = be16(data + pos);
    const uint16_t length = be16(data + pos + 8);
    pos += 10;
    if (pos + length > size) {
      *error = "malformed reply";
      return false;
    }
    if (type == kTypeSrv && length >= 7) {
      SrvRecord r;
      r.priority = be16(data + pos);
      r.weight = be16(data + pos + 2);
      r.port = be16(data + pos + 4);
      size_t target = pos + 6;
      if (!readName(data, size, &target, &r.target)) {
        *error = "malformed reply";
        return false;
      }
      if (!r.target.empty() && r.port != 0) {  // "." is "no service here" (RFC 2782)
        records->push_back(std::move(r));
      }
    }
    pos += length;
  }
  if (records->empty()) {
    *error = "no SRV records";
    return false;
  }
  return true;
}

}  // namespace mcring::net
