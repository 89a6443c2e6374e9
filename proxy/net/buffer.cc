// Buffer: thin wrapper over evbuffer.
#include "proxy/net/buffer.h"

#include <event2/buffer.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace mcring::net {

Buffer::Buffer() : buf_(evbuffer_new()), owned_(true) {}
Buffer::Buffer(evbuffer* borrowed) : buf_(borrowed), owned_(false) {}
Buffer::~Buffer() {
  if (owned_ && buf_ != nullptr) {
    evbuffer_free(buf_);
  }
}
Buffer::Buffer(Buffer&& other) noexcept
    : buf_(std::exchange(other.buf_, nullptr)), owned_(std::exchange(other.owned_, false)) {}
Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    if (owned_ && buf_ != nullptr) {
      evbuffer_free(buf_);
    }
    buf_ = std::exchange(other.buf_, nullptr);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

size_t Buffer::size() const {
  return evbuffer_get_length(buf_);
}

size_t Buffer::findNewline(size_t from, size_t limit) const {
  size_t len = size();
  if (from >= len) {
    return npos;
  }
  size_t stop_at = limit < len ? limit : len;
  if (from >= stop_at) {
    return npos;
  }
  // Fast path: the range starts in the first chunk (the common case: a line at the front).
  evbuffer_iovec first;
  if (evbuffer_peek(buf_, -1, nullptr, &first, 1) >= 1 && from < first.iov_len) {
    size_t end_in_first = stop_at < first.iov_len ? stop_at : first.iov_len;
    const char* base = static_cast<const char*>(first.iov_base);
    const void* hit = std::memchr(base + from, '\n', end_in_first - from);
    if (hit != nullptr) {
      return static_cast<size_t>(static_cast<const char*>(hit) - base);
    }
    if (end_in_first == stop_at) {
      return npos;
    }
    from = end_in_first;
  }
  evbuffer_ptr start;
  if (evbuffer_ptr_set(buf_, &start, from, EVBUFFER_PTR_SET) != 0) {
    return npos;
  }
  evbuffer_ptr end;
  size_t stop = limit < len ? limit : len;
  if (evbuffer_ptr_set(buf_, &end, stop, EVBUFFER_PTR_SET) != 0) {
    return npos;
  }
  evbuffer_ptr found = evbuffer_search_range(buf_, "\n", 1, &start, &end);
  if (found.pos < 0) {
    return npos;
  }
  return static_cast<size_t>(found.pos);
}

std::string_view Buffer::contiguous(size_t n) {
  if (n == 0) {
    return {};
  }
  auto* p = reinterpret_cast<const char*>(evbuffer_pullup(buf_, static_cast<ev_ssize_t>(n)));
  return p == nullptr ? std::string_view() : std::string_view(p, n);
}

std::string_view Buffer::front() const {
  evbuffer_iovec first;
  if (evbuffer_peek(buf_, -1, nullptr, &first, 1) < 1) {
    return {};
  }
  return {static_cast<const char*>(first.iov_base), first.iov_len};
}

char Buffer::byteAt(size_t pos) const {
  evbuffer_iovec first;
  if (evbuffer_peek(buf_, -1, nullptr, &first, 1) >= 1 && pos < first.iov_len) {
    return static_cast<const char*>(first.iov_base)[pos];
  }
  evbuffer_ptr ptr;
  char c = 0;
  if (evbuffer_ptr_set(buf_, &ptr, pos, EVBUFFER_PTR_SET) == 0) {
    evbuffer_copyout_from(buf_, &ptr, &c, 1);
  }
  return c;
}

void Buffer::drain(size_t n) {
  if (n == 0) {
    return;
  }
  evbuffer_drain(buf_, n);
  drained();
}
void Buffer::moveTo(Buffer& dst, size_t n) {
  if (n == 0) {
    return;
  }
  moveBytes(dst, n);
  dst.added();
  drained();
}
void Buffer::moveBytes(Buffer& dst, size_t n) {
  while (n > 0) {
    evbuffer_iovec front;
    if (evbuffer_peek(buf_, -1, nullptr, &front, 1) < 1) {
      return;
    }
    if (front.iov_len == 0) {  // not expected from evbuffer; keep the bytes moving anyway
      evbuffer_remove_buffer(buf_, dst.buf_, n);
      return;
    }
    if (front.iov_len >= kMoveMin && front.iov_len <= n) {
      // Exactly the front chunk's bytes: evbuffer hands the chunk over.
      evbuffer_remove_buffer(buf_, dst.buf_, front.iov_len);
      n -= front.iov_len;
    } else if (n < front.iov_len) {
      // Within the front chunk (most values of a socket read): evbuffer copies them and moves
      // the chunk's start in one call, as add + drain would in two.
      evbuffer_remove_buffer(buf_, dst.buf_, n);
      return;
    } else {
      size_t k = front.iov_len < n ? front.iov_len : n;
      evbuffer_add(dst.buf_, front.iov_base, k);
      evbuffer_drain(buf_, k);
      n -= k;
    }
  }
}
void Buffer::append(std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  evbuffer_add(buf_, bytes.data(), bytes.size());
  added();
}

Buffer::Room Buffer::reserve(size_t n) {
  evbuffer_iovec vec;
  if (evbuffer_reserve_space(buf_, static_cast<ev_ssize_t>(n), &vec, 1) != 1 || vec.iov_len < n) {
    return {};
  }
  return {static_cast<char*>(vec.iov_base), vec.iov_len};
}

void Buffer::commit(Room room, size_t n) {
  evbuffer_iovec vec;
  vec.iov_base = room.data;
  vec.iov_len = n;
  if (n > 0 && evbuffer_commit_space(buf_, &vec, 1) == 0) {
    added();
  }
}

void Buffer::copyTo(Buffer& dst, size_t offset, size_t n) const {
  evbuffer_ptr at;
  if (n == 0 || evbuffer_ptr_set(buf_, &at, offset, EVBUFFER_PTR_SET) != 0) {
    return;
  }
  bool copied = false;
  while (n > 0) {
    evbuffer_iovec piece;
    if (evbuffer_peek(buf_, static_cast<ev_ssize_t>(n), &at, &piece, 1) < 1 || piece.iov_len == 0) {
      break;
    }
    const size_t take = std::min(n, piece.iov_len);
    evbuffer_add(dst.buf_, piece.iov_base, take);
    copied = true;
    n -= take;
    if (n > 0 && evbuffer_ptr_set(buf_, &at, take, EVBUFFER_PTR_ADD) != 0) {
      break;
    }
  }
  if (copied) {
    dst.added();  // once for the whole copy, however many pieces it took
  }
}

void Buffer::copyOut(size_t offset, size_t n, char* dst) const {
  evbuffer_ptr at;
  if (n == 0 || evbuffer_ptr_set(buf_, &at, offset, EVBUFFER_PTR_SET) != 0) {
    return;
  }
  evbuffer_copyout_from(buf_, &at, dst, n);
}

void Buffer::prepend(std::string_view bytes) {
  if (bytes.empty()) {
    return;
  }
  evbuffer_prepend(buf_, bytes.data(), bytes.size());
  added();
}

}  // namespace mcring::net
