// What executors other than lanes need from the batcher: a batch size cap (after running out of memory), a pull
// that gives up at a time (worker processes look after their worker while idle), and batches handed back to run
// again (requeue: a worker died), which go first, are split to the cap, and still honour deadlines,
// cancellation and draining.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "serve/batcher.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::ids;
using testing::make_request;

struct Completed {
  std::mutex mu;
  std::map<std::string, Outcome> outcomes;
  DynamicBatcher::Hooks hooks() {
    return {[this](Completion c) {
              std::lock_guard lock(mu);
              outcomes[c.request->id] = c.response.outcome;
            },
            nullptr};
  }
};

BatcherConfig requeue_config(int max_batch, std::chrono::microseconds delay) {
  BatcherConfig c;
  c.max_batch_size = max_batch;
  c.max_queue_delay = delay;
  c.max_padding_waste = 1;
  return c;
}

TEST(BatchQueueCap, ACappedCutIsReleasedAtTheCap) {
  FakeClock clock;
  BatchQueue q(requeue_config(8, 1s));
  for (int i = 0; i < 5; ++i) q.admit(make_request("r" + std::to_string(i), 100), clock.now);
  EXPECT_FALSE(q.cut(clock.now));  // 5 of 8, delay not reached
  std::optional<Batch> b = q.cut(clock.now, false, 2);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"r0", "r1"}));
  EXPECT_EQ(q.size(), 3u);
}

TEST(SplitFront, MovesTheFirstRequestsWithTheirQueueTimes) {
  FakeClock clock;
  Batch b;
  for (int i = 0; i < 3; ++i) {
    b.requests.push_back(make_request("r" + std::to_string(i), 100 * static_cast<size_t>(i + 1)));
    b.enqueued.push_back(clock.now + std::chrono::seconds(i));
  }
  Batch front = split_front(b, 1);
  EXPECT_EQ(ids(front.requests), (std::vector<std::string>{"r0"}));
  EXPECT_EQ(front.enqueued.front(), clock.now);
  EXPECT_EQ(front.padding_waste, 0);
  EXPECT_EQ(ids(b.requests), (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(b.enqueued.front(), clock.now + 1s);
  EXPECT_NEAR(b.padding_waste, 1 - 500.0 / 600.0, 1e-12);
}

TEST(DynamicBatcherPull, GivesUpAtItsTimeAndCapsTheBatch) {
  Completed done;
  DynamicBatcher batcher(requeue_config(8, 10s), done.hooks());
  const auto start = Clock::now();
  DynamicBatcher::Pull p = batcher.pull(0, start + 30ms);
  EXPECT_FALSE(p.batch);
  EXPECT_FALSE(p.finished);
  EXPECT_GE(Clock::now() - start, 30ms);

  for (int i = 0; i < 3; ++i) batcher.submit(make_request("r" + std::to_string(i), 100));
  p = batcher.pull(2, Clock::now() + 5s);  // the cap releases it at once, without the 10 s delay
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(p.batch->requests.size(), 2u);
  batcher.shutdown();
  p = batcher.pull(2, Clock::now() + 5s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"r2"}));
  EXPECT_TRUE(batcher.pull(2, Clock::now() + 5s).finished);
}

TEST(DynamicBatcherRequeue, RequeuedBatchesGoFirstSplitToTheCallersCap) {
  Completed done;
  DynamicBatcher batcher(requeue_config(8, 0us), done.hooks());
  batcher.submit(make_request("new", 100));
  Batch lost;
  for (int i = 0; i < 3; ++i) {
    lost.requests.push_back(make_request("lost" + std::to_string(i), 100));
    lost.enqueued.push_back(Clock::now());
  }
  batcher.requeue(std::move(lost));
  EXPECT_EQ(batcher.queued(), 4u);

  DynamicBatcher::Pull p = batcher.pull(2, Clock::now() + 1s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"lost0", "lost1"}));
  p = batcher.pull(2, Clock::now() + 1s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"lost2"}));
  p = batcher.pull(2, Clock::now() + 1s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"new"}));
}

TEST(DynamicBatcherRequeue, DeadlinesAndCancellationStillApply) {
  Completed done;
  DynamicBatcher batcher(requeue_config(8, 0us), done.hooks());
  Batch lost;
  auto late = make_request("late", 100);
  late->deadline = Clock::now() - 1ms;
  auto gone = make_request("gone", 100);
  gone->cancelled->store(true);
  for (auto* r : {&late, &gone}) {
    lost.requests.push_back(std::move(*r));
    lost.enqueued.push_back(Clock::now());
  }
  lost.requests.push_back(make_request("fine", 100));
  lost.enqueued.push_back(Clock::now());
  batcher.requeue(std::move(lost));

  DynamicBatcher::Pull p = batcher.pull(0, Clock::now() + 1s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"fine"}));
  std::lock_guard lock(done.mu);
  EXPECT_EQ(done.outcomes["late"], Outcome::kDeadlineExceeded);
  EXPECT_EQ(done.outcomes["gone"], Outcome::kCancelled);
}

// No executor pulls (every worker restarting): the reaper still answers a requeued request at its deadline.
TEST(DynamicBatcherRequeue, TheReaperExpiresRequeuedRequestsWhileNoExecutorPulls) {
  Completed done;
  DynamicBatcher batcher(requeue_config(8, 0us), done.hooks());
  Batch lost;
  auto soon = make_request("soon", 100);
  soon->deadline = Clock::now() + 50ms;
  lost.requests.push_back(std::move(soon));
  lost.enqueued.push_back(Clock::now());
  batcher.requeue(std::move(lost));
  const auto start = Clock::now();
  for (;;) {
    {
      std::lock_guard lock(done.mu);
      if (done.outcomes.count("soon")) break;
    }
    ASSERT_LT(Clock::now() - start, 5s) << "the requeued request was never answered";
    std::this_thread::sleep_for(5ms);
  }
  std::lock_guard lock(done.mu);
  EXPECT_EQ(done.outcomes["soon"], Outcome::kDeadlineExceeded);
  EXPECT_EQ(batcher.queued(), 0u);
}

TEST(DynamicBatcherRequeue, ADrainingBatcherIsNotFinishedWhileABatchIsRequeued) {
  Completed done;
  DynamicBatcher batcher(requeue_config(8, 0us), done.hooks());
  batcher.shutdown();
  Batch lost;
  lost.requests.push_back(make_request("lost", 100));
  lost.enqueued.push_back(Clock::now());
  batcher.requeue(std::move(lost));
  DynamicBatcher::Pull p = batcher.pull(0, Clock::now() + 1s);
  ASSERT_TRUE(p.batch);
  EXPECT_EQ(ids(p.batch->requests), (std::vector<std::string>{"lost"}));
  EXPECT_TRUE(batcher.pull(0, Clock::now() + 1s).finished);
}

TEST(DynamicBatcherRequeue, WhatIsLeftAtDestructionIsCompletedAsShuttingDown) {
  Completed done;
  {
    DynamicBatcher batcher(requeue_config(8, 0us), done.hooks());
    Batch lost;
    lost.requests.push_back(make_request("lost", 100));
    lost.enqueued.push_back(Clock::now());
    batcher.requeue(std::move(lost));
  }
  std::lock_guard lock(done.mu);
  EXPECT_EQ(done.outcomes["lost"], Outcome::kShuttingDown);
}

}  // namespace
}  // namespace steno::serve
