// A meta command's flags as mcring reads them: tokens after the key, each named by its first
// character (memcached's rule), e.g. `T30` is flag T with token "30".
#pragma once

#include <optional>
#include <string_view>

namespace mcring::protocol {

// The token of the first flag named `flag` in `flags` (the text after the key, up to and maybe
// including "\r\n"), without its first character: "30" for T in "v T30 c"; "" for a bare flag;
// nullopt if there is none.
std::optional<std::string_view> findMetaFlag(std::string_view flags, char flag);

}  // namespace mcring::protocol
