// Reply texts and counter names of RequestError, both generated from MCRING_REQUEST_ERRORS.
#include "proxy/protocol/request.h"

#include <array>

namespace mcring::protocol {
namespace {

// A counter name built at compile time from an enum identifier: "UnknownCommand" ->
// "unknown_command". Generated rather than written so the table stays the only list of errors.
struct SnakeName {
  char data[48] = {};
  size_t size = 0;
};

constexpr SnakeName toSnakeCase(std::string_view id) {
  SnakeName name;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (c >= 'A' && c <= 'Z') {
      if (i > 0) {
        name.data[name.size++] = '_';
      }
      name.data[name.size++] = static_cast<char>(c - 'A' + 'a');
    } else {
      name.data[name.size++] = c;
    }
  }
  return name;
}

constexpr std::string_view kTexts[] = {
#define MCRING_X(id, text) text,
    MCRING_REQUEST_ERRORS(MCRING_X)
#undef MCRING_X
};

constexpr SnakeName kNames[] = {
#define MCRING_X(id, text) toSnakeCase(#id),
    MCRING_REQUEST_ERRORS(MCRING_X)
#undef MCRING_X
};

static_assert(std::size(kTexts) == std::size(kNames));

}  // namespace

std::string_view requestErrorText(RequestError e) {
  const auto i = static_cast<size_t>(e);
  return i < std::size(kTexts) ? kTexts[i] : std::string_view("ERROR");
}

std::string_view requestErrorName(RequestError e) {
  const auto i = static_cast<size_t>(e);
  if (i >= std::size(kNames)) {
    return "unknown";
  }
  return std::string_view(kNames[i].data, kNames[i].size);
}

}  // namespace mcring::protocol
