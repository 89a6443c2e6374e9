// The bytes a framer reads: the front of a byte queue that may be split into chunks. The proxy's
// socket buffers (net::Buffer) and plain strings (tests, fuzzers, benchmarks) both implement it,
// so the framing that is tested is the framing that runs.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace mcring::protocol {

class ByteSource {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);

  virtual ~ByteSource() = default;
  // Bytes available.
  virtual size_t size() const = 0;
  // Offset of the first '\n' at or after `from` and before `limit` (clamped to size()); npos if
  // none.
  virtual size_t findNewline(size_t from, size_t limit) const = 0;
  // The first n bytes (n <= size()) as one contiguous view, valid until the source changes.
  virtual std::string_view contiguous(size_t n) = 0;
  // The byte at `pos` (pos < size()).
  virtual char byteAt(size_t pos) const = 0;
  // The bytes at the front that are already contiguous (a socket buffer's first chunk; all of a
  // string), possibly fewer than size(). A framer reads a unit that lies within it in place, with
  // no further call per byte or line (the common case: one socket read holds many units).
  virtual std::string_view front() const = 0;
};

// A ByteSource over a string_view (the bytes are not owned).
class StringSource final : public ByteSource {
 public:
  explicit StringSource(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t findNewline(size_t from, size_t limit) const override {
    size_t stop = limit < bytes_.size() ? limit : bytes_.size();
    if (from >= stop) {
      return npos;
    }
    const void* hit = std::memchr(bytes_.data() + from, '\n', stop - from);
    return hit == nullptr ? npos
                          : static_cast<size_t>(static_cast<const char*>(hit) - bytes_.data());
  }
  std::string_view contiguous(size_t n) override { return bytes_.substr(0, n); }
  char byteAt(size_t pos) const override { return bytes_[pos]; }
  std::string_view front() const override { return bytes_; }

 private:
  std::string_view bytes_;
};

}  // namespace mcring::protocol
