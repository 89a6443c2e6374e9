// Minimal JSON string escaping for the admin endpoint's hand-built documents.
#pragma once

#include <string>
#include <string_view>

namespace mcring::common {

// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 if none starts there
// (overlong forms, surrogates and code points past U+10FFFF are not well-formed).
inline size_t utf8SequenceLength(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  size_t n = c < 0x80                 ? 1
             : c >= 0xc2 && c <= 0xdf ? 2
             : c >= 0xe0 && c <= 0xef ? 3
             : c >= 0xf0 && c <= 0xf4 ? 4
                                      : 0;
  if (n <= 1 || i + n > s.size()) {
    return n == 1 ? 1 : 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) {
      return 0;
    }
  }
  if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) > 0x9f) || (c == 0xf0 && b(1) < 0x90) ||
      (c == 0xf4 && b(1) > 0x8f)) {
    return 0;
  }
  return n;
}

// Appends s as a quoted JSON string. JSON is UTF-8: a byte of s that is not part of a well-formed
// UTF-8 sequence (memcached keys may hold any byte but space and control characters) is written
// as the code point of the same value (\u00XX), so the document stays valid and the byte shows.
inline void appendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = utf8SequenceLength(s, i);
      if (n == 0) {
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
      } else {
        out->append(s.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

}  // namespace mcring::common
