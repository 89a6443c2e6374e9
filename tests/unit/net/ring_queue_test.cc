// common::RingQueue: FIFO order across wrap-around and growth, indexing from the front, appending,
// swapping, and no allocation once warm (its reason to exist: backend_connection.h).
#include "proxy/common/ring_queue.h"

#include <doctest/doctest.h>

#include <deque>
#include <random>

using mcring::common::RingQueue;

TEST_CASE("RingQueue keeps FIFO order through wrap-around and growth, as a deque does") {
  RingQueue<int> q;
  std::deque<int> model;
  std::mt19937 rng(7);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    // Bursts of pushes (growth) and pops (the front wrapping past the end).
    if (model.empty() || rng() % 3 != 0) {
      q.push_back(next);
      model.push_back(next);
      ++next;
    } else {
      REQUIRE(q.front() == model.front());
      q.pop_front();
      model.pop_front();
    }
    REQUIRE(q.size() == model.size());
    if (!model.empty()) {
      REQUIRE(q.back() == model.back());
      const size_t i = rng() % model.size();
      REQUIRE(q[i] == model[i]);
    }
  }
  std::deque<int> seen(q.begin(), q.end());
  CHECK(seen == model);
}

TEST_CASE("RingQueue append, swap and clear") {
  RingQueue<int> a, b;
  for (int i = 0; i < 5; ++i) {
    a.push_back(i);
  }
  a.pop_front();
  b.push_back(100);
  b.append(a.begin(), a.end());
  std::deque<int> got(b.begin(), b.end());
  CHECK(got == std::deque<int>{100, 1, 2, 3, 4});
  a.swap(b);
  CHECK(a.size() == 5);
  CHECK(b.size() == 4);
  CHECK(a.front() == 100);
  a.clear();
  CHECK(a.empty());
  a.push_back(9);
  CHECK(a.front() == 9);
}

TEST_CASE("RingQueue reuses its buffer: a steady push/pop keeps the same storage") {
  RingQueue<int> q;
  for (int i = 0; i < 3; ++i) {
    q.push_back(i);
  }
  const int* storage = &q.front();
  for (int i = 0; i < 100000; ++i) {  // 3 in flight at a time, as a 3-key get's parts
    q.push_back(i);
    q.pop_front();
  }
  // Never grown: every element still lives in the first buffer (16 slots).
  CHECK(&q[0] >= storage - 16);
  CHECK(&q[0] < storage + 16);
}
