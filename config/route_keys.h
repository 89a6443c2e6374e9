// The `routes` pool key: a listener's list of routes, parsed and checked within its pool.
//
// What needs the other pools (a route's pool exists, has servers, has no routes of its own) is
// checked by the loader once every pool is read; see config_loader.cc, checkRoutes.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "config/pool_keys.h"

namespace mcring::config {

inline constexpr size_t kMaxRoutes = 1000;
inline constexpr size_t kMaxRoutePrefix = 250;            // memcached's longest key
inline constexpr uint32_t kMaxRouteTtl = 30 * 24 * 3600;  // beyond it memcached reads a date

// Parses `routes:` into pool.routes, reporting every problem through `value`.
void setRoutes(ValueReader& value, PoolConfig& pool);

}  // namespace mcring::config
