// doctest entry point for unit_net: quiet logs, no SIGPIPE, libevent threading on.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>

#include <cstdlib>

#include "proxy/common/log.h"
#include "proxy/net/event_loop.h"

int main(int argc, char** argv) {
  mcring::common::logInit(std::getenv("MCRING_TEST_VERBOSE") != nullptr ? 4 : 0, "");
  signal(SIGPIPE, SIG_IGN);
  mcring::net::initThreading();
  doctest::Context context(argc, argv);
  return context.run();
}
