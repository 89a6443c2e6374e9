// A byte queue (libevent's evbuffer) with the few operations the proxy needs: find a line,
// view a prefix contiguously, and move bytes between queues without copying whole chains. It is a
// protocol::ByteSource, so the framers read sockets' buffers in place.
#pragma once

#include <cstddef>
#include <string_view>

#include "proxy/protocol/byte_source.h"

struct evbuffer;

namespace mcring::net {

class Buffer final : public protocol::ByteSource {
 public:
  Buffer();                             // owns a new evbuffer
  explicit Buffer(evbuffer* borrowed);  // wraps one owned elsewhere (a bufferevent's)
  ~Buffer() override;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;

  size_t size() const override;
  bool empty() const { return size() == 0; }

  // Offset of the first '\n' at or after `from`, searching no further than `limit` bytes from
  // the front; npos if none.
  size_t findNewline(size_t from, size_t limit) const override;

  // The first n bytes as one contiguous view (rearranges the chain only if they span chunks).
  // Valid until the buffer is next modified.
  std::string_view contiguous(size_t n) override;

  // Copies the byte at `pos` (pos < size()).
  char byteAt(size_t pos) const override;

  // The first chunk's bytes, in place.
  std::string_view front() const override;

  void drain(size_t n);
  // Moves the first n bytes to the end of dst. A chunk that holds at least kMoveMin bytes of
  // them moves without copying; smaller pieces are copied into dst's last chunk. Moving a
  // chunk moves its whole allocation (up to 64 KiB for a socket read), so moving small pieces
  // would let a queue of tiny replies cost a chunk each: 7-byte error replies cost ~1 KiB each,
  // and a client that sent junk without reading its replies grew RSS by 600 MB. With this
  // rule a buffer's memory stays within a small factor of the bytes it holds.
  static constexpr size_t kMoveMin = 8 * 1024;
  void moveTo(Buffer& dst, size_t n);
  void moveAllTo(Buffer& dst) { moveTo(dst, size()); }
  void append(std::string_view bytes);
  void append(const char* data, size_t n) { append(std::string_view(data, n)); }
  // Room for n more bytes at the end, contiguous: fill it, then commit(room, n) before anything
  // else touches the buffer. Pieces from several places are copied once into place, where an
  // append or move per piece costs a buffer call each (a multi-get's assembly in key order).
  struct Room {
    char* data = nullptr;
    size_t size = 0;
  };
  Room reserve(size_t n);
  void commit(Room room, size_t n);
  // Copies n bytes starting `offset` bytes from the front to the end of dst, leaving them here
  // (a route's shadow sends a copy of a request's data block; the request moves on).
  void copyTo(Buffer& dst, size_t offset, size_t n) const;
  // Copies n bytes starting `offset` bytes from the front into dst (n must be buffered).
  void copyOut(size_t offset, size_t n, char* dst) const;
  // Puts bytes before the front (a request line rewritten in place: a route's max_ttl).
  void prepend(std::string_view bytes);

  evbuffer* raw() const { return buf_; }

  // Called after bytes were added at the end (append, prepend, moveTo or copyTo into this
  // buffer), or drained from the front (drain, moveTo out of it); not for what the owner does to
  // raw() itself. How a connection learns that its output has bytes to write, or that its input
  // went below a watermark: an evbuffer callback does the same but runs on every change of the
  // buffer, its own socket I/O included, and costed ~700 instructions a request
  // (bench/results/perf-profile.md). One of each per buffer; nullptr removes it. Not moved with
  // the bytes (move construction and assignment leave both as they were).
  using Hook = void (*)(void* arg);
  void setHooks(Hook on_added, Hook on_drained, void* arg) {
    on_added_ = on_added;
    on_drained_ = on_drained;
    hook_arg_ = arg;
  }

 private:
  void moveBytes(Buffer& dst, size_t n);
  void added() const {
    if (on_added_ != nullptr) {
      on_added_(hook_arg_);
    }
  }
  void drained() const {
    if (on_drained_ != nullptr) {
      on_drained_(hook_arg_);
    }
  }

  evbuffer* buf_ = nullptr;
  bool owned_ = false;
  Hook on_added_ = nullptr;
  Hook on_drained_ = nullptr;
  void* hook_arg_ = nullptr;
};

}  // namespace mcring::net
