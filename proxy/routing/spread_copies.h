// Hot-key spread (docs/design.md, "Hot-key spread"): the servers that hold a hot key's copies.
// Pure: a function of the router and the key, so every worker and the main thread agree.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "proxy/routing/router.h"

namespace mcring::routing {

// Up to `copies` distinct servers for `key`: its own server route(key) first, then the distinct
// servers of route("1#" + key), route("2#" + key), ..., until `copies` distinct servers or
// 8 * copies salts were tried (a pool with fewer servers, or a hash tag, which maps every salted
// name to the key's own server, gives fewer). The client's key is what every copy stores; the
// salted names only choose the servers.
//
// The salt goes in front, not behind as in the ring lab's key + "#1": FNV-1a (twemproxy's
// default hash) mixes a name's last bytes by one multiplication each, so key#1 .. key#9 hash to
// nearby ring points and land on two or three servers of ten; a prefix is mixed by every byte
// of the key after it.
std::vector<uint32_t> spreadCopies(const Router& router, std::string_view key, uint32_t copies);

}  // namespace mcring::routing
