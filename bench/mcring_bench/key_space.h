// Names of the load generator's keys: a prefix and a fixed-width index ("key:00000042").
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace mcring::bench {

// Formats and parses key names without allocating. Width is at least 8 digits, more when the
// key space needs them, so every key of a run has the same length.
class KeySpace {
 public:
  KeySpace(std::string prefix, uint64_t keys) : prefix_(std::move(prefix)), keys_(keys) {
    width_ = 8;
    for (uint64_t limit = 100000000; keys > limit && width_ < 20; limit *= 10) {
      ++width_;
    }
  }

  uint64_t size() const { return keys_; }
  size_t keyLength() const { return prefix_.size() + width_; }
  const std::string& prefix() const { return prefix_; }

  // Writes key `index` at `out` (keyLength() bytes, no terminator); returns the length.
  size_t format(uint64_t index, char* out) const {
    std::memcpy(out, prefix_.data(), prefix_.size());
    char* digits = out + prefix_.size();
    for (int i = width_ - 1; i >= 0; --i) {
      digits[i] = static_cast<char>('0' + index % 10);
      index /= 10;
    }
    return keyLength();
  }

  // The index of a key this space formatted, or nullopt for any other string (a reply for a key
  // we never asked about means the stream is out of step).
  std::optional<uint64_t> parse(std::string_view key) const {
    if (key.size() != keyLength() || key.substr(0, prefix_.size()) != prefix_) {
      return std::nullopt;
    }
    uint64_t index = 0;
    for (char c : key.substr(prefix_.size())) {
      if (c < '0' || c > '9') {
        return std::nullopt;
      }
      index = index * 10 + static_cast<uint64_t>(c - '0');
    }
    return index;
  }

 private:
  std::string prefix_;
  uint64_t keys_;
  int width_;
};

}  // namespace mcring::bench
