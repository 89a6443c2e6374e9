// doctest's runner for unit tests that run event loops over real sockets (unit_net,
// unit_dataplane): quiet logs, no SIGPIPE, libevent's threading on.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>

#include <cstdlib>

#include "proxy/common/log.h"
#include "proxy/net/event_loop.h"

int main(int argc, char** argv) {
  // Errors only: the tests provoke faults on purpose. MCRING_TEST_VERBOSE=1 shows all.
  mcring::common::logInit(std::getenv("MCRING_TEST_VERBOSE") != nullptr ? 4 : 0, "");
  signal(SIGPIPE, SIG_IGN);
  mcring::net::initThreading();
  doctest::Context context(argc, argv);
  return context.run();
}
