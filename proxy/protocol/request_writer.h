// Every request line mcring writes to a backend on its own account (not a client's line passed
// through): fragments of a split multi-get, warm-up fetches and copies, invalidations, replica
// touches, spread fills, shadow reads, broadcasts, the mn that ends a quiet meta request. One
// writer, so the wire format of each is in one place and each caller learns how many bytes it
// wrote (what a backend connection counts as sent) instead of counting them by hand.
//
// A line is a verb, then space-separated tokens, then "\r\n". Sink: anything with
// append(std::string_view) (net::Buffer, std::string); protocol sees neither sockets nor
// libevent, so it is a template.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "proxy/protocol/command.h"

namespace mcring::protocol {

template <class Sink>
class RequestWriter {
 public:
  explicit RequestWriter(Sink& out) : out_(out) {}

  // Bytes written so far.
  size_t written() const { return written_; }

  // Starts a line.
  RequestWriter& verb(std::string_view name) {
    put(name);
    return *this;
  }
  RequestWriter& verb(Command c) { return verb(commandName(c)); }
  // " <token>" (a key, an exptime, a number).
  RequestWriter& arg(std::string_view token) {
    put(" ");
    put(token);
    return *this;
  }
  // " <t1> <t2> ...": token_of(item) for each item (a multi-get fragment's keys), gathered on the
  // stack so that the sink sees one append per ~1 KiB instead of two per token (an evbuffer_add
  // each: ~200 instructions a key; bench/results/perf-profile.md).
  template <class Items, class TokenOf>
  RequestWriter& args(const Items& items, TokenOf token_of) {
    char staged[1024];
    size_t used = 0;
    for (const auto& item : items) {
      const std::string_view token = token_of(item);
      if (used + 1 + token.size() > sizeof staged) {
        put(std::string_view(staged, used));
        used = 0;
        if (1 + token.size() > sizeof staged) {
          arg(token);
          continue;
        }
      }
      staged[used] = ' ';
      std::memcpy(staged + used + 1, token.data(), token.size());
      used += 1 + token.size();
    }
    put(std::string_view(staged, used));
    return *this;
  }
  // " <flag><token>": a meta flag ("T" "30" -> " T30"; a bare flag with no token).
  RequestWriter& flag(char name, std::string_view token = {}) {
    const char f[2] = {' ', name};
    put(std::string_view(f, 2));
    put(token);
    return *this;
  }
  // A meta command's key, with the b flag's meaning kept: " <key>" and, if base64, " b".
  RequestWriter& metaKey(std::string_view key, bool base64) {
    arg(key);
    if (base64) {
      flag('b');
    }
    return *this;
  }
  // Ends the line.
  RequestWriter& end() {
    put("\r\n");
    return *this;
  }
  // Bytes as they are (a client's request line or data block).
  RequestWriter& raw(std::string_view bytes) {
    put(bytes);
    return *this;
  }

  // The whole lines mcring writes most.
  // `mn`: ends a quiet meta request's replies.
  RequestWriter& noop() { return verb("mn").end(); }
  // `md <key>[ b]`: an invalidation (its answer is HD or NF).
  RequestWriter& metaDelete(std::string_view key, bool base64) {
    return verb("md").metaKey(key, base64).end();
  }
  // `touch <key> <exptime>`.
  RequestWriter& touch(std::string_view key, std::string_view exptime) {
    return verb("touch").arg(key).arg(exptime).end();
  }

 private:
  void put(std::string_view s) {
    if (s.empty()) {
      return;
    }
    out_.append(s);
    written_ += s.size();
  }

  Sink& out_;
  size_t written_ = 0;
};

}  // namespace mcring::protocol
