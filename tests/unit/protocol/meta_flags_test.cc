// findMetaFlag: a meta command's flag found by its first character, wherever it stands.
#include "proxy/protocol/meta_flags.h"

#include <doctest/doctest.h>

using mcring::protocol::findMetaFlag;

TEST_CASE("findMetaFlag: the first token named by the flag, without its name") {
  CHECK(findMetaFlag(" v T30 c\r\n", 'T') == std::optional<std::string_view>("30"));
  CHECK(findMetaFlag(" T30\r\n", 'T') == std::optional<std::string_view>("30"));
  CHECK(findMetaFlag(" v C5 T1", 'C') == std::optional<std::string_view>("5"));
  CHECK(findMetaFlag(" q  k", 'k') == std::optional<std::string_view>(""));  // a bare flag
  CHECK(findMetaFlag(" v t c\r\n", 'T') == std::nullopt);                    // t is not T
  CHECK(findMetaFlag(" vT30", 'T') == std::nullopt);  // only a token's first character names it
  CHECK(findMetaFlag("", 'T') == std::nullopt);
}
