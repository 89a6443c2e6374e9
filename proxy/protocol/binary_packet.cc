// Binary protocol header codec and response packets.
#include "proxy/protocol/binary_packet.h"

namespace mcring::protocol {

std::string_view binaryStatusText(BinaryStatus s) {
  switch (s) {
#define MCRING_X(id, code, text) \
  case BinaryStatus::id:         \
    return text;
    MCRING_BINARY_STATUSES(MCRING_X)
#undef MCRING_X
  }
  return "";
}

uint32_t loadBigEndian32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) | (uint32_t{u[2]} << 8) | u[3];
}

uint64_t loadBigEndian64(const char* p) {
  return (uint64_t{loadBigEndian32(p)} << 32) | loadBigEndian32(p + 4);
}

void appendBigEndian32(std::string& out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}

void appendBigEndian64(std::string& out, uint64_t v) {
  appendBigEndian32(out, static_cast<uint32_t>(v >> 32));
  appendBigEndian32(out, static_cast<uint32_t>(v));
}

BinaryHeader decodeBinaryHeader(std::string_view bytes) {
  const char* p = bytes.data();
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  BinaryHeader h;
  h.magic = u[0];
  h.opcode = u[1];
  h.key_length = static_cast<uint16_t>((u[2] << 8) | u[3]);
  h.extras_length = u[4];
  h.data_type = u[5];
  h.vbucket = static_cast<uint16_t>((u[6] << 8) | u[7]);
  h.body_length = loadBigEndian32(p + 8);
  h.opaque = loadBigEndian32(p + 12);
  h.cas = loadBigEndian64(p + 16);
  return h;
}

void appendBinaryResponseHeader(std::string& out, uint8_t opcode, BinaryStatus status,
                                uint32_t opaque, uint64_t cas, uint8_t extras_length,
                                uint16_t key_length, uint64_t value_length) {
  const auto st = static_cast<uint16_t>(status);
  const char head[8] = {static_cast<char>(kBinaryResponseMagic),
                        static_cast<char>(opcode),
                        static_cast<char>(key_length >> 8),
                        static_cast<char>(key_length),
                        static_cast<char>(extras_length),
                        0,
                        static_cast<char>(st >> 8),
                        static_cast<char>(st)};
  out.append(head, 8);
  appendBigEndian32(out, static_cast<uint32_t>(extras_length + key_length + value_length));
  appendBigEndian32(out, opaque);
  appendBigEndian64(out, cas);
}

void appendBinaryResponse(std::string& out, uint8_t opcode, BinaryStatus status, uint32_t opaque,
                          uint64_t cas, std::string_view extras, std::string_view key,
                          std::string_view value) {
  appendBinaryResponseHeader(out, opcode, status, opaque, cas, static_cast<uint8_t>(extras.size()),
                             static_cast<uint16_t>(key.size()), value.size());
  out.append(extras);
  out.append(key);
  out.append(value);
}

void appendBinaryError(std::string& out, uint8_t opcode, BinaryStatus status, uint32_t opaque) {
  appendBinaryResponse(out, opcode, status, opaque, 0, {}, {}, binaryStatusText(status));
}

}  // namespace mcring::protocol
