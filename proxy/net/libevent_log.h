// libevent's own messages ("Error from accept() call", ...) go to mcring's logger, which honours
// -o, instead of libevent's default of stderr, and through its rate limit.
#pragma once

namespace mcring::net {

// Installs the callback; initThreading() calls it. Idempotent.
void routeLibeventLog();

}  // namespace mcring::net
