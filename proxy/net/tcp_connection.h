// A non-blocking stream connection (TCP or unix) with input/output buffers: a bufferevent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "proxy/net/buffer.h"
#include "proxy/net/event_loop.h"
#include "proxy/common/socket_address.h"

struct bufferevent;
struct evconnlistener;

namespace mcring::net {

// Why a connection ended.
enum class CloseReason : uint8_t { Eof, Error, Timeout, ConnectFailed };

class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  virtual void onConnected() {}
  // New bytes are in input().
  virtual void onReadable() = 0;
  // Output drained below the low watermark set with setWriteLowWatermark (0: fully flushed).
  virtual void onWritable() {}
  // The connection is dead; the handler decides when to destroy it (not from inside this call).
  virtual void onClosed(CloseReason reason, int error) = 0;
};

class TcpConnection {
 public:
  ~TcpConnection();
  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  // Wraps an accepted socket; starts reading. keepalive: SO_KEEPALIVE, so dead clients are
  // noticed (twemproxy's tcpkeepalive).
  static std::unique_ptr<TcpConnection> adopt(EventLoop& loop, int fd, ConnectionHandler* handler,
                                              bool keepalive = false);
  // Starts connecting; onConnected or onClosed(ConnectFailed/Timeout) follows.
  static std::unique_ptr<TcpConnection> connect(EventLoop& loop, const common::SocketAddress& address,
                                                ConnectionHandler* handler, uint32_t timeout_ms,
                                                bool keepalive);

  Buffer& input() { return input_; }
  Buffer& output() { return output_; }

  void enableReading(bool on);
  // 0 disables. Fires onClosed(Timeout) when no byte arrives for that long while reading.
  void setReadTimeout(uint32_t ms);
  void setWriteLowWatermark(size_t bytes);
  // Stop reading once this many bytes wait in input (0: unlimited).
  void setReadHighWatermark(size_t bytes);
  // Detaches the handler and closes the socket now.
  void close();
  int fd() const;

 private:
  TcpConnection(bufferevent* bev, ConnectionHandler* handler);
  static void onRead(bufferevent*, void* arg);
  static void onWrite(bufferevent*, void* arg);
  static void onEvent(bufferevent*, short what, void* arg);

  bufferevent* bev_ = nullptr;
  ConnectionHandler* handler_ = nullptr;
  Buffer input_;
  Buffer output_;
};

// Accepts connections on one address and hands each socket to a callback (main thread).
class Listener {
 public:
  using AcceptFn = std::function<void(int fd)>;
  ~Listener();
  static std::unique_ptr<Listener> open(EventLoop& loop, const common::SocketAddress& address, int backlog,
                                        bool reuseport, uint32_t unix_mode, AcceptFn fn,
                                        std::string* error);
  void pause();
  void resume();

 private:
  Listener() = default;
  evconnlistener* listener_ = nullptr;
  AcceptFn fn_;
  std::string unix_path_;
};

}  // namespace mcring::net
