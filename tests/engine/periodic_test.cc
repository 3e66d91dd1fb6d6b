#include "engine/periodic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace skippr {
namespace {

using namespace std::chrono_literals;

TEST(Periodic, TasksRunOnOneThreadUntilTheirHandleGoesAndAThrowingOneStopsAlone) {
  std::atomic<int> a = 0, b = 0, bad = 0;
  std::atomic<std::thread::id> a_thread, b_thread;
  auto first = run_periodically(10ms, [&] {
    a_thread = std::this_thread::get_id();
    ++a;
  });
  auto second = run_periodically(10ms, [&] {
    b_thread = std::this_thread::get_id();
    ++b;
  });
  auto throwing = run_periodically(10ms, [&] {
    ++bad;
    throw std::runtime_error("broken");
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_GE(a.load(), 5);
  EXPECT_GE(b.load(), 5);
  EXPECT_EQ(bad.load(), 1) << "a task that threw was called again";
  EXPECT_EQ(a_thread.load(), b_thread.load());
  EXPECT_NE(a_thread.load(), std::this_thread::get_id());
  first.reset();
  const int after = a.load();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(a.load(), after) << "a task ran after its handle was destroyed";
  EXPECT_GT(b.load(), 10);
}

TEST(Periodic, DestroyingTheHandleWaitsForACallInProgress) {
  std::atomic<bool> inside = false, finished = false;
  auto slow = run_periodically(1ms, [&] {
    inside = true;
    std::this_thread::sleep_for(100ms);
    finished = true;
  });
  while (!inside) std::this_thread::sleep_for(1ms);
  slow.reset();
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace skippr
