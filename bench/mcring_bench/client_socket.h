// The socket under a benchmark client connection: connecting, writing, framing replies in place.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/protocol/reply_parser.h"

struct event;
struct event_base;
struct evbuffer;
struct ssl_st;

namespace mcring::bench {

// One TCP socket on its owner's thread and event_base, with its two buffers: requests are appended
// to an evbuffer and written in one writev, replies are read into one contiguous buffer so that
// they can be framed in place, never copied. LoadConnection (`load`) and CacheAsideClient's
// connections (`stampede`) sit on it; what they send, how they account replies and when they
// reconnect stay theirs.
//
// It never calls its owner by itself: its events run the owner's callbacks, and every failure is
// returned, so that the owner fails its requests in flight with it and then close()s.
class ClientSocket {
 public:
  enum class State : uint8_t { Down, Connecting, Connected };
  // libevent's event_callback_fn (evutil_socket_t is an int here), without its header.
  using Callback = void (*)(int fd, short what, void* arg);

  // The read buffer starts at `initial` bytes. A recv is made only with at least `min_room` bytes
  // free, so that none is tiny; the buffer doubles when one reply needs more, up to `max`.
  struct ReadSizes {
    size_t initial;
    size_t min_room;
    size_t max;
  };
  static constexpr size_t kNoMax = std::numeric_limits<size_t>::max();

  // From then on every new connection speaks TLS (TLS 1.2 or later, the server's certificate not
  // verified). False, with *error, if OpenSSL cannot make a context. Before any connect.
  static bool useTls(std::string* error);

  explicit ClientSocket(ReadSizes sizes);
  ~ClientSocket();  // closes
  ClientSocket(const ClientSocket&) = delete;
  ClientSocket& operator=(const ClientSocket&) = delete;

  State state() const { return state_; }
  // Requests not yet written. Appending is allowed while connecting; close() drops them.
  evbuffer* out() { return out_; }

  // From Down: starts connecting; on_writable(arg) runs when the connect is done, on_readable(arg)
  // whenever replies arrive once connected. A failure of socket() or connect() is not returned
  // here: on_writable runs from the loop and finishConnect() reports it, so that the requests the
  // caller issues meanwhile are failed with it, as they would be by a refusal seen later.
  void connect(event_base* base, const sockaddr* address, socklen_t length, Callback on_writable,
               Callback on_readable, void* arg);
  // In on_writable while Connecting: 0 once connected (reading starts), else the connect's errno.
  int finishConnect();
  // Closes the socket if open and drops what was not written or not consumed: Down.
  void close();

  // Writes what is buffered if connected; when the socket is full, on_writable runs for the rest.
  // False when the connection failed.
  bool write();

  enum class ReadResult : uint8_t {
    Received,    // more bytes for frameReplies()
    WouldBlock,  // nothing yet
    Closed,      // the server closed, or the connection failed
    TooLarge,    // one reply would need a buffer larger than ReadSizes::max
  };
  // One recv, after making room: an empty buffer restarts at its front, a partial reply slides to
  // the front, and the buffer grows only when one reply is larger than it.
  ReadResult read();

  // Frames the replies read, oldest first, and hands each whole one to on_reply(reply, bytes) (its
  // offsets are into bytes), which accounts it and must not close(). True once what is left is the
  // start of a reply still arriving; false when the stream is out of step: bytes while awaiting()
  // is false (no request in flight, as on_reply ends them), bytes that are no reply, or a reply
  // that on_reply refuses by returning false. Either way what was handed over stays accounted.
  template <typename Awaiting, typename OnReply>
  bool frameReplies(const protocol::ReplyParser& parser, Awaiting awaiting, OnReply on_reply) {
    protocol::Reply reply;
    while (read_begin_ < read_end_) {
      if (!awaiting()) {
        return false;  // bytes nobody asked for
      }
      const std::string_view bytes(read_buffer_.data() + read_begin_, read_end_ - read_begin_);
      uint64_t length = 0;
      const protocol::ParseStatus status = protocol::frameReply(parser, bytes, reply, &length);
      if (status == protocol::ParseStatus::Incomplete) {
        return true;
      }
      if (status == protocol::ParseStatus::Invalid || !on_reply(reply, bytes)) {
        return false;
      }
      read_begin_ += length;
    }
    return true;
  }

 private:
  const ReadSizes sizes_;
  State state_ = State::Down;
  int fd_ = -1;
  int connect_error_ = 0;  // an immediate connect() failure, reported from the loop
  event* read_event_ = nullptr;
  event* write_event_ = nullptr;
  evbuffer* out_ = nullptr;
  ssl_st* ssl_ = nullptr;  // with useTls: OpenSSL over fd_ (the handshake runs in its first I/O)

  // Received bytes not yet consumed: [read_begin_, read_end_).
  std::vector<char> read_buffer_;
  size_t read_begin_ = 0;
  size_t read_end_ = 0;
};

}  // namespace mcring::bench
