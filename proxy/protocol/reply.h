// A parsed backend reply unit: one line, plus a data block for VALUE and VA.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/protocol/request.h"

namespace mcring::protocol {

// Every reply line memcached sends in the text protocol. One table for enum and leading token.
#define MCRING_REPLY_KINDS(X)                         \
  X(Value, "VALUE") /* + data */                      \
  X(End, "END")                                       \
  X(Stored, "STORED")                                 \
  X(NotStored, "NOT_STORED")                          \
  X(Exists, "EXISTS")                                 \
  X(NotFound, "NOT_FOUND")                            \
  X(Deleted, "DELETED")                               \
  X(Touched, "TOUCHED")                               \
  X(Ok, "OK")                                         \
  X(Version, "VERSION")                               \
  X(Stat, "STAT")                                     \
  X(Item, "ITEM") /* stats cachedump */               \
  X(Number, "")   /* incr/decr result: digits only */ \
  X(Error, "ERROR")                                   \
  X(ClientError, "CLIENT_ERROR")                      \
  X(ServerError, "SERVER_ERROR")                      \
  X(MetaValue, "VA") /* + data */                     \
  X(MetaHit, "HD")                                    \
  X(MetaMiss, "EN")                                   \
  X(MetaNotFound, "NF")                               \
  X(MetaNotStored, "NS")                              \
  X(MetaExists, "EX")                                 \
  X(MetaNoop, "MN")                                   \
  X(MetaDebug, "ME")

enum class ReplyKind : uint8_t {
#define MCRING_X(id, token) id,
  MCRING_REPLY_KINDS(MCRING_X)
#undef MCRING_X
};

struct Reply {
  ReplyKind kind = ReplyKind::End;
  // Bytes of the reply line including its "\r\n".
  uint32_t line_length = 0;
  // Value and MetaValue: bytes of the data block after the line, including its "\r\n"
  // (value length + 2). 0 for every other kind.
  uint64_t data_length = 0;
  // Value: the key token of "VALUE <key> <flags> <bytes> [<cas>]" (offsets into the line).
  Span key;

  // ERROR, CLIENT_ERROR, SERVER_ERROR: ends any reply, whatever was asked.
  bool isError() const {
    return kind == ReplyKind::Error || kind == ReplyKind::ClientError ||
           kind == ReplyKind::ServerError;
  }
  // VALUE, STAT, ITEM: a unit of a reply that goes on until END (a get's, a stats view's, a
  // cachedump's), never the whole reply to anything.
  bool isListItem() const {
    return kind == ReplyKind::Value || kind == ReplyKind::Stat || kind == ReplyKind::Item;
  }
  uint64_t totalLength() const { return line_length + data_length; }
};

}  // namespace mcring::protocol
