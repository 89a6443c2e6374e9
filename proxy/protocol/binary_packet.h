// memcached's binary protocol on the wire: the 24-byte header, the opcodes memcached 1.6 knows,
// the response statuses with memcached's own texts, and how a response packet is written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mcring::protocol {

inline constexpr uint8_t kBinaryRequestMagic = 0x80;   // PROTOCOL_BINARY_REQ
inline constexpr uint8_t kBinaryResponseMagic = 0x81;  // PROTOCOL_BINARY_RES
inline constexpr size_t kBinaryHeaderSize = 24;

// The opcodes memcached 1.6 defines (protocol_binary.h). Those it does not serve (SASL without
// SASL support, verbosity, the range and vbucket commands) are answered "Unknown command".
enum class BinaryOpcode : uint8_t {
  Get = 0x00,
  Set = 0x01,
  Add = 0x02,
  Replace = 0x03,
  Delete = 0x04,
  Increment = 0x05,
  Decrement = 0x06,
  Quit = 0x07,
  Flush = 0x08,
  GetQ = 0x09,
  Noop = 0x0a,
  Version = 0x0b,
  GetK = 0x0c,
  GetKQ = 0x0d,
  Append = 0x0e,
  Prepend = 0x0f,
  Stat = 0x10,
  SetQ = 0x11,
  AddQ = 0x12,
  ReplaceQ = 0x13,
  DeleteQ = 0x14,
  IncrementQ = 0x15,
  DecrementQ = 0x16,
  QuitQ = 0x17,
  FlushQ = 0x18,
  AppendQ = 0x19,
  PrependQ = 0x1a,
  Verbosity = 0x1b,
  Touch = 0x1c,
  Gat = 0x1d,
  GatQ = 0x1e,
  SaslListMechs = 0x20,
  SaslAuth = 0x21,
  SaslStep = 0x22,
  GatK = 0x23,
  GatKQ = 0x24,
};

// Response statuses, with the body text memcached 1.6.18 sends with each (write_bin_error).
#define MCRING_BINARY_STATUSES(X)                                       \
  X(Success, 0x00, "")                                                  \
  X(KeyNotFound, 0x01, "Not found")                                     \
  X(KeyExists, 0x02, "Data exists for key.")                            \
  X(TooLarge, 0x03, "Too large.")                                       \
  X(InvalidArguments, 0x04, "Invalid arguments")                        \
  X(NotStored, 0x05, "Not stored.")                                     \
  X(NonNumeric, 0x06, "Non-numeric server-side value for incr or decr") \
  X(AuthError, 0x20, "Auth failure.")                                   \
  X(UnknownCommand, 0x81, "Unknown command")                            \
  X(OutOfMemory, 0x82, "Out of memory")                                 \
  X(Busy, 0x85, "Busy")

enum class BinaryStatus : uint16_t {
#define MCRING_X(id, code, text) id = code,
  MCRING_BINARY_STATUSES(MCRING_X)
#undef MCRING_X
};

std::string_view binaryStatusText(BinaryStatus s);

// A request header as read from the wire (host byte order).
struct BinaryHeader {
  uint8_t magic = 0;
  uint8_t opcode = 0;
  uint16_t key_length = 0;
  uint8_t extras_length = 0;
  uint8_t data_type = 0;
  uint16_t vbucket = 0;
  uint32_t body_length = 0;
  uint32_t opaque = 0;
  uint64_t cas = 0;
};

// `bytes` holds at least kBinaryHeaderSize bytes.
BinaryHeader decodeBinaryHeader(std::string_view bytes);

uint32_t loadBigEndian32(const char* p);
uint64_t loadBigEndian64(const char* p);
void appendBigEndian32(std::string& out, uint32_t v);
void appendBigEndian64(std::string& out, uint64_t v);

// Appends a response header for a body of extras + key + `value_length` value bytes (the caller
// appends the body).
void appendBinaryResponseHeader(std::string& out, uint8_t opcode, BinaryStatus status,
                                uint32_t opaque, uint64_t cas, uint8_t extras_length,
                                uint16_t key_length, uint64_t value_length);
// A whole response: header, extras, key, value.
void appendBinaryResponse(std::string& out, uint8_t opcode, BinaryStatus status, uint32_t opaque,
                          uint64_t cas, std::string_view extras, std::string_view key,
                          std::string_view value);
// An error response as memcached writes it: no extras, no key, the status's text as body.
void appendBinaryError(std::string& out, uint8_t opcode, BinaryStatus status, uint32_t opaque);

}  // namespace mcring::protocol
