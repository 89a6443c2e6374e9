// hot_path_bench: the proxy's per-request CPU work, in process, without sockets or libevent.
//
// Each iteration walks one fixed client pipeline and the backend replies it would get:
//   1. parse every request with protocol::RequestParser (frameRequest: line + data block),
//   2. route every key with a routing::Router (ketama, 3 servers, fnv1a_64: twemproxy's default),
//   3. frame every reply unit with protocol::ReplyParser (frameReply: line + data block).
// The pipeline is 16 requests: 12 `get <key>`, 2 `set <key> 0 0 <32..100>` with their values,
// 2 `get <10 keys>`; every get hits, so replies are VALUE units + END, and STORED for sets.
//
// Plain C++ (no Google Benchmark, no timers, no threads) so that `valgrind --tool=callgrind`
// counts are exact and repeatable: `make bench-instructions` runs it at two iteration counts and
// divides the difference in instructions by the difference in requests, which removes startup
// (ring build, input generation) and the first iteration's vector growth.
//
// Usage: hot_path_bench [ITERATIONS]   (default 100000; 0 = startup only)
// Prints the request, key and reply-unit counts and a checksum of the routes (so that nothing
// is optimised away, and so that a change in routing shows up).
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/reply_parser.h"
#include "proxy/protocol/request_parser.h"
#include "proxy/routing/router.h"

namespace {

using mcring::protocol::ParseStatus;

constexpr int kSingleGets = 12;
constexpr int kSets = 2;
constexpr int kMultiGets = 2;
constexpr int kMultiGetKeys = 10;
constexpr int kRequestsPerIteration = kSingleGets + kSets + kMultiGets;

// Deterministic keys like the load generator's ("key:" + index padded to 8 digits).
std::string keyOf(uint32_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "key:%08u", index);
  return buf;
}

struct Workload {
  std::string requests;  // the client's pipeline, back to back
  std::string replies;   // the backends' replies to it, in the same order
};

Workload makeWorkload() {
  Workload w;
  uint32_t lcg = 12345;
  auto nextKey = [&] {  // 34 pseudo-random keys out of 100000
    lcg = lcg * 1103515245u + 12345u;
    return keyOf((lcg >> 8) % 100000);
  };
  auto valueOf = [&](size_t length) {
    std::string v(length, 'v');
    for (size_t i = 0; i < length; ++i) {
      v[i] = static_cast<char>('a' + (i * 7 + length) % 26);
    }
    return v;
  };
  auto addValueReply = [&](const std::string& key, size_t length) {
    w.replies += "VALUE " + key + " 0 " + std::to_string(length) + "\r\n" + valueOf(length) + "\r\n";
  };
  // Interleave: 6 gets, set, multi-get, 6 gets, set, multi-get.
  for (int half = 0; half < 2; ++half) {
    for (int i = 0; i < kSingleGets / 2; ++i) {
      std::string key = nextKey();
      size_t length = 32 + (key.back() - '0') * 7;  // 32..95 bytes
      w.requests += "get " + key + "\r\n";
      addValueReply(key, length);
      w.replies += "END\r\n";
    }
    {
      std::string key = nextKey();
      size_t length = 100 - half * 68;  // 100 and 32 bytes
      w.requests += "set " + key + " 0 0 " + std::to_string(length) + "\r\n" + valueOf(length) + "\r\n";
      w.replies += "STORED\r\n";
    }
    {
      std::string line = "get";
      std::vector<std::string> keys;
      for (int k = 0; k < kMultiGetKeys; ++k) {
        keys.push_back(nextKey());
        line += " " + keys.back();
      }
      w.requests += line + "\r\n";
      for (const std::string& key : keys) {
        addValueReply(key, 48);
      }
      w.replies += "END\r\n";
    }
  }
  return w;
}

[[noreturn]] void fail(const char* what, size_t offset) {
  std::fprintf(stderr, "hot_path_bench: %s at offset %zu\n", what, offset);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 100000;
  if (argc > 1) {
    char* end = nullptr;
    iterations = std::strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0') {
      std::fprintf(stderr, "usage: %s [ITERATIONS]\n", argv[0]);
      return 2;
    }
  }

  std::vector<mcring::routing::ServerSpec> servers;
  for (uint16_t port : {11211, 11212, 11213}) {
    mcring::routing::ServerSpec s;
    s.host = "127.0.0.1";
    s.port = port;
    s.weight = 1;
    servers.push_back(s);
  }
  mcring::routing::RouterOptions options;
  options.hash = mcring::routing::HashFunction::Fnv1a_64;
  options.distribution = mcring::routing::Distribution::Ketama;
  std::string error;
  std::unique_ptr<const mcring::routing::Router> router =
      mcring::routing::Router::build(servers, options, &error);
  if (!router) {
    std::fprintf(stderr, "hot_path_bench: router: %s\n", error.c_str());
    return 1;
  }

  const Workload w = makeWorkload();
  const std::string_view requests = w.requests;
  const std::string_view replies = w.replies;
  const mcring::protocol::RequestParser request_parser;
  const mcring::protocol::ReplyParser reply_parser;
  mcring::protocol::Request req;
  mcring::protocol::Reply rep;

  uint64_t request_count = 0;
  uint64_t key_count = 0;
  uint64_t unit_count = 0;
  uint64_t per_server[3] = {0, 0, 0};
  uint64_t checksum = 0;
  for (uint64_t it = 0; it < iterations; ++it) {
    size_t off = 0;
    while (off < requests.size()) {
      uint64_t consumed = 0;
      std::string_view rest = requests.substr(off);
      if (mcring::protocol::frameRequest(request_parser, rest, req, &consumed) != ParseStatus::Ok) {
        fail("request did not parse", off);
      }
      std::string_view line = rest.substr(0, req.line_length);
      for (size_t k = 0; k < req.keys.size(); ++k) {
        uint32_t s = router->route(req.routingKey(line, k));
        ++per_server[s];
        checksum = checksum * 31 + s;
      }
      key_count += req.keys.size();
      ++request_count;
      off += consumed;
    }
    off = 0;
    while (off < replies.size()) {
      uint64_t consumed = 0;
      if (mcring::protocol::frameReply(reply_parser, replies.substr(off), rep, &consumed) !=
          ParseStatus::Ok) {
        fail("reply did not frame", off);
      }
      checksum += static_cast<uint64_t>(rep.kind);
      ++unit_count;
      off += consumed;
    }
  }
  std::printf("iterations %" PRIu64 "\nrequests %" PRIu64 "\nkeys %" PRIu64
              "\nreply_units %" PRIu64 "\nper_server %" PRIu64 " %" PRIu64 " %" PRIu64
              "\nchecksum %016" PRIx64 "\n",
              iterations, request_count, key_count, unit_count, per_server[0], per_server[1],
              per_server[2], checksum);
  static_assert(kRequestsPerIteration == 16);
  return 0;
}
