// doctest's runner, compiled once and linked into every unit test that has no main of its own
// (the implementation is most of doctest's compile time, and the unit tests are built twice).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
