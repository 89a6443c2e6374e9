// A byte queue (libevent's evbuffer) with the few operations the proxy needs: find a line,
// view a prefix contiguously, and move bytes between queues without copying whole chains.
#pragma once

#include <cstddef>
#include <string_view>

struct evbuffer;

namespace mcring::net {

class Buffer {
 public:
  Buffer();                             // owns a new evbuffer
  explicit Buffer(evbuffer* borrowed);  // wraps one owned elsewhere (a bufferevent's)
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;

  size_t size() const;
  bool empty() const { return size() == 0; }

  // Offset of the first '\n' at or after `from`, searching no further than `limit` bytes from
  // the front; npos if none.
  static constexpr size_t npos = static_cast<size_t>(-1);
  size_t findNewline(size_t from, size_t limit) const;

  // The first n bytes as one contiguous view (rearranges the chain only if they span chunks).
  // Valid until the buffer is next modified.
  std::string_view contiguous(size_t n);

  // Copies the byte at `pos` (pos < size()).
  char byteAt(size_t pos) const;

  void drain(size_t n);
  // Moves the first n bytes to the end of dst; whole chunks move without copying.
  void moveTo(Buffer& dst, size_t n);
  // Moves everything to the end of dst.
  void moveAllTo(Buffer& dst);
  void append(std::string_view bytes);
  void append(const char* data, size_t n) { append(std::string_view(data, n)); }

  evbuffer* raw() const { return buf_; }

 private:
  evbuffer* buf_ = nullptr;
  bool owned_ = false;
};

}  // namespace mcring::net
