// Internal: the per-distribution Router factories Router::build dispatches to, and their base.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "proxy/routing/router.h"

namespace mcring::routing {

// The key -> 32-bit hash step every distribution shares: hash_tag, then the key hash. An empty
// key (after the tag) hashes to 0, as in twemproxy's server_pool_hash.
class KeyHashingRouter : public Router {
 public:
  uint32_t hashOf(std::string_view key) const final {
    const std::string_view part = applyHashTag(key, options_.hash_tag);
    if (part.empty()) {
      return 0;
    }
    return hashKey(options_.hash, part);
  }

 protected:
  explicit KeyHashingRouter(RouterOptions options) : Router(std::move(options)) {}
};

// Each returns nullptr and sets *error when the servers/options do not fit the distribution.
// Router::build has already checked what is common to all (non-empty, weights >= 1, hash_tag,
// duplicate servers).
std::unique_ptr<const Router> makeKetamaRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error);
std::unique_ptr<const Router> makeModulaRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error);
std::unique_ptr<const Router> makeRandomRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error);
std::unique_ptr<const Router> makeJumpRouter(std::span<const ServerSpec> servers,
                                             const RouterOptions& options, std::string* error);
std::unique_ptr<const Router> makeRendezvousRouter(std::span<const ServerSpec> servers,
                                                   const RouterOptions& options,
                                                   std::string* error);
std::unique_ptr<const Router> makeMaglevRouter(std::span<const ServerSpec> servers,
                                               const RouterOptions& options, std::string* error);

}  // namespace mcring::routing
