// BinaryFramer: header checks, per-opcode length rules, too-large values, discards.
#include "proxy/protocol/binary_framer.h"

#include <algorithm>

namespace mcring::protocol {

namespace {

// How an opcode's packet must be shaped (memcached 1.6.18's dispatch_bin_command).
enum class Shape : uint8_t {
  KeyOnly,     // get*, delete: key, no extras, nothing else
  Store,       // set/add/replace: 8 bytes of extras, key, value
  Concat,      // append/prepend: key, value, no extras
  Arithmetic,  // incr/decr: 20 bytes of extras, key
  Empty,       // noop, version, quit: nothing
  Flush,       // no key; 0 or 4 bytes of extras and nothing else
  Stat,        // no extras; the key (a stats group) is read, the rest of the body is not
  Touch,       // touch/gat*: 4 bytes of extras and a key are read, the rest is not
  Unknown,     // answered "Unknown command", body skipped
};

Shape shapeOf(uint8_t opcode) {
  switch (static_cast<BinaryOpcode>(opcode)) {
    case BinaryOpcode::Get:
    case BinaryOpcode::GetQ:
    case BinaryOpcode::GetK:
    case BinaryOpcode::GetKQ:
    case BinaryOpcode::Delete:
    case BinaryOpcode::DeleteQ:
      return Shape::KeyOnly;
    case BinaryOpcode::Set:
    case BinaryOpcode::SetQ:
    case BinaryOpcode::Add:
    case BinaryOpcode::AddQ:
    case BinaryOpcode::Replace:
    case BinaryOpcode::ReplaceQ:
      return Shape::Store;
    case BinaryOpcode::Append:
    case BinaryOpcode::AppendQ:
    case BinaryOpcode::Prepend:
    case BinaryOpcode::PrependQ:
      return Shape::Concat;
    case BinaryOpcode::Increment:
    case BinaryOpcode::IncrementQ:
    case BinaryOpcode::Decrement:
    case BinaryOpcode::DecrementQ:
      return Shape::Arithmetic;
    case BinaryOpcode::Noop:
    case BinaryOpcode::Version:
    case BinaryOpcode::Quit:
    case BinaryOpcode::QuitQ:
      return Shape::Empty;
    case BinaryOpcode::Flush:
    case BinaryOpcode::FlushQ:
      return Shape::Flush;
    case BinaryOpcode::Stat:
      return Shape::Stat;
    case BinaryOpcode::Touch:
    case BinaryOpcode::Gat:
    case BinaryOpcode::GatQ:
    case BinaryOpcode::GatK:
    case BinaryOpcode::GatKQ:
      return Shape::Touch;
    default:
      // Verbosity: memcached 1.6.18 answers it "Unknown command" (it has no binary handler
      // left); SASL likewise when built without SASL, as Debian's is.
      return Shape::Unknown;
  }
}

}  // namespace

BinaryFrame BinaryFramer::reject(BinaryRequest& req, BinaryStatus status, bool close, uint64_t drop,
                                 uint64_t discard) {
  req.error = status;
  req.close = close;
  discard_ = discard;
  return {BinaryFrameKind::Rejected, close ? 0 : drop};
}

BinaryFrame BinaryFramer::next(ByteSource& in, BinaryRequest& req) {
  const size_t avail = in.size();
  if (discard_ > 0) {
    const uint64_t n = std::min<uint64_t>(discard_, avail);
    discard_ -= n;
    return n == 0 ? BinaryFrame{} : BinaryFrame{BinaryFrameKind::Discard, n};
  }
  if (avail < kBinaryHeaderSize) {
    return {};
  }
  req.header = decodeBinaryHeader(in.contiguous(kBinaryHeaderSize));
  req.error = BinaryStatus::Success;
  req.close = false;
  req.silent = false;
  req.value_length = 0;
  req.key.clear();
  req.extras.clear();
  const BinaryHeader& h = req.header;
  if (h.magic != kBinaryRequestMagic) {
    req.silent = true;
    return reject(req, BinaryStatus::InvalidArguments, true, 0, 0);
  }
  const uint64_t key = h.key_length;
  const uint64_t ext = h.extras_length;
  const uint64_t body = h.body_length;
  if (key + ext > body) {
    return reject(req, BinaryStatus::UnknownCommand, true, 0, 0);
  }
  if (key > parser_->limits().max_key_length) {
    return reject(req, BinaryStatus::InvalidArguments, true, 0, 0);
  }
  const Shape shape = shapeOf(h.opcode);
  bool ok = false;
  uint64_t read = ext + key;  // body bytes this request takes
  switch (shape) {
    case Shape::KeyOnly:
      ok = ext == 0 && key > 0 && body == key;
      break;
    case Shape::Store:
      ok = ext == 8 && key > 0;
      read = body;
      break;
    case Shape::Concat:
      ok = ext == 0 && key > 0;
      read = body;
      break;
    case Shape::Arithmetic:
      ok = ext == 20 && key > 0 && body == key + ext;
      break;
    case Shape::Empty:
      ok = ext == 0 && key == 0 && body == 0;
      break;
    case Shape::Flush:
      ok = key == 0 && body == ext && (ext == 0 || ext == 4);
      break;
    case Shape::Stat:
      ok = ext == 0;
      break;
    case Shape::Touch:
      ok = ext == 4 && key > 0;
      break;
    case Shape::Unknown:
      return reject(req, BinaryStatus::UnknownCommand, false, kBinaryHeaderSize, body);
  }
  if (!ok) {
    return reject(req, BinaryStatus::InvalidArguments, true, 0, 0);
  }
  const uint64_t head = kBinaryHeaderSize + ext + key;
  if (shape == Shape::Store || shape == Shape::Concat) {
    req.value_length = body - ext - key;
    // memcached holds the value's length in an int: past 2^31 it is negative, the item cannot be
    // allocated, and nothing is swallowed (the next bytes are read as a header).
    const bool negative = req.value_length > 0x7fffffffULL;
    if (negative || req.value_length > parser_->limits().item_size_max) {
      if (avail < head) {
        return {BinaryFrameKind::NeedMore, head};
      }
      req.extras.assign(in.contiguous(head).substr(kBinaryHeaderSize, ext));
      req.key.assign(in.contiguous(head).substr(kBinaryHeaderSize + ext, key));
      return reject(req, BinaryStatus::TooLarge, false, head, negative ? 0 : req.value_length);
    }
  }
  const uint64_t total = kBinaryHeaderSize + read;
  if (avail < total) {
    return {BinaryFrameKind::NeedMore, total};
  }
  const std::string_view bytes = in.contiguous(head);
  req.extras.assign(bytes.substr(kBinaryHeaderSize, ext));
  req.key.assign(bytes.substr(kBinaryHeaderSize + ext, key));
  return {BinaryFrameKind::Request, total};
}

}  // namespace mcring::protocol
