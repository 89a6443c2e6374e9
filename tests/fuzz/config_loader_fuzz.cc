// libFuzzer target: the config loader must answer any bytes with a Config or errors, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string yaml(reinterpret_cast<const char*>(data), size);
  mcring::config::LoadResult r = mcring::config::loadConfigString(yaml, "fuzz.yml");
  // Exactly one of the two outcomes, and every error renders.
  if (r.config.has_value() == !r.errors.empty()) {
    __builtin_trap();
  }
  for (const auto& e : r.errors) {
    if (e.toString().empty()) {
      __builtin_trap();
    }
  }
  return 0;
}
