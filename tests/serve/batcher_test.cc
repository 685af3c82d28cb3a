// DynamicBatcher's threads and locking: executors blocking in next_batch(), shutdown flushing the queue, the reaper
// completing expired and cancelled requests while nobody pulls, rejections completed inside submit().
// No sleeps: what is waited for is a batch or a completion, each with a generous bound.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "serve/batcher.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;
using testing::ids;
using testing::make_request;

// Collects completions by request id.
struct Recorder {
  std::mutex mu;
  std::map<std::string, std::vector<TranscriptionResponse>> by_id;
  std::vector<size_t> sizes;

  DynamicBatcher::Hooks hooks() {
    return {[this](Completion c) {
              std::lock_guard lock(mu);
              by_id[c.request->id].push_back(std::move(c.response));
            },
            [this](size_t n) {
              std::lock_guard lock(mu);
              sizes.push_back(n);
            }};
  }
  std::vector<TranscriptionResponse> of(const std::string& id) {
    std::lock_guard lock(mu);
    return by_id[id];
  }
};

BatcherConfig batcher_config(int max_batch, std::chrono::microseconds delay, size_t max_queue = 0) {
  BatcherConfig c;
  c.max_batch_size = max_batch;
  c.max_queue_delay = delay;
  c.max_queue_size = max_queue;
  return c;
}

// A request whose completion can be awaited.
std::unique_ptr<TranscriptionRequest> awaited(const std::string& id, std::future<TranscriptionResponse>* f) {
  auto promise = std::make_shared<std::promise<TranscriptionResponse>>();
  *f = promise->get_future();
  auto r = make_request(id, 1000);
  r->done = [promise](TranscriptionResponse resp) { promise->set_value(std::move(resp)); };
  return r;
}

TEST(DynamicBatcher, AFullBatchIsHandedOutWithoutWaitingForTheDelay) {
  Recorder rec;
  DynamicBatcher b(batcher_config(2, std::chrono::hours(1)), rec.hooks());
  b.submit(make_request("a", 1000));
  b.submit(make_request("b", 1000));
  std::optional<Batch> batch = b.next_batch();
  ASSERT_TRUE(batch);
  EXPECT_EQ(ids(batch->requests), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(b.queued(), 0u);
  std::lock_guard lock(rec.mu);
  EXPECT_EQ(rec.sizes, (std::vector<size_t>{1, 2, 0}));  // the pending-count hook follows the queue
}

TEST(DynamicBatcher, ShutdownFlushesTheQueueThenEnds) {
  Recorder rec;
  DynamicBatcher b(batcher_config(2, std::chrono::hours(1)), rec.hooks());
  for (const char* id : {"a", "b", "c"}) b.submit(make_request(id, 1000));
  std::optional<Batch> first = b.next_batch();  // a and b fill a batch
  ASSERT_TRUE(first);
  b.shutdown();
  std::optional<Batch> rest = b.next_batch();  // c goes at once instead of waiting an hour
  ASSERT_TRUE(rest);
  EXPECT_EQ(ids(rest->requests), (std::vector<std::string>{"c"}));
  EXPECT_FALSE(b.next_batch());
  b.submit(make_request("late", 1000));
  ASSERT_EQ(rec.of("late").size(), 1u);
  EXPECT_EQ(rec.of("late")[0].outcome, Outcome::kShuttingDown);
}

TEST(DynamicBatcher, ShutdownWakesWaitingExecutors) {
  Recorder rec;
  DynamicBatcher b(batcher_config(8, std::chrono::hours(1)), rec.hooks());
  std::vector<std::future<bool>> waiting;
  for (int i = 0; i < 3; ++i)
    waiting.push_back(std::async(std::launch::async, [&b] { return b.next_batch().has_value(); }));
  b.shutdown();
  for (auto& w : waiting) {
    ASSERT_EQ(w.wait_for(10s), std::future_status::ready);
    EXPECT_FALSE(w.get());
  }
}

TEST(DynamicBatcher, AWaitingExecutorGetsTheBatchWhenItFills) {
  Recorder rec;
  DynamicBatcher b(batcher_config(2, std::chrono::hours(1)), rec.hooks());
  auto executor = std::async(std::launch::async, [&b] { return b.next_batch(); });
  b.submit(make_request("a", 1000));
  b.submit(make_request("b", 1000));
  ASSERT_EQ(executor.wait_for(10s), std::future_status::ready);
  std::optional<Batch> batch = executor.get();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->requests.size(), 2u);
}

TEST(DynamicBatcher, AFullQueueRejectsInsideSubmit) {
  Recorder rec;
  DynamicBatcher b(batcher_config(8, std::chrono::hours(1), /*max_queue=*/1), rec.hooks());
  b.submit(make_request("a", 1000));
  b.submit(make_request("b", 1000));
  const auto b_responses = rec.of("b");  // completed before submit returned
  ASSERT_EQ(b_responses.size(), 1u);
  EXPECT_EQ(b_responses[0].outcome, Outcome::kQueueFull);
  EXPECT_GE(b_responses[0].retry_after_s, 1.0);
  EXPECT_TRUE(rec.of("a").empty());
  b.shutdown();
}

TEST(DynamicBatcher, ADoneCallbackMaySubmitAgain) {
  // Completions run outside the batcher's lock: a client retrying from its callback must not deadlock.
  std::vector<Outcome> outcomes;
  DynamicBatcher* batcher = nullptr;
  DynamicBatcher b(batcher_config(8, std::chrono::hours(1), 1), {[&](Completion c) {
                                                           outcomes.push_back(c.response.outcome);
                                                           if (c.request->id == "b")
                                                             batcher->submit(make_request("c", 1000));
                                                         },
                                                         nullptr});
  batcher = &b;
  b.submit(make_request("a", 1000));
  b.submit(make_request("b", 1000));
  EXPECT_EQ(outcomes, (std::vector<Outcome>{Outcome::kQueueFull, Outcome::kQueueFull}));
  b.shutdown();
}

TEST(DynamicBatcher, TheReaperExpiresRequestsWhileNoExecutorPulls) {
  DynamicBatcher b(batcher_config(8, std::chrono::hours(1)), {[](Completion c) {
                     if (c.request->done) c.request->done(std::move(c.response));
                   },
                   nullptr});
  std::future<TranscriptionResponse> f;
  auto r = awaited("late", &f);
  r->deadline = Clock::now() + 20ms;
  b.submit(std::move(r));
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().outcome, Outcome::kDeadlineExceeded);
  EXPECT_EQ(b.queued(), 0u);
}

TEST(DynamicBatcher, TheReaperDropsCancelledRequests) {
  DynamicBatcher b(batcher_config(8, std::chrono::hours(1)), {[](Completion c) {
                     if (c.request->done) c.request->done(std::move(c.response));
                   },
                   nullptr});
  std::future<TranscriptionResponse> f;
  auto r = awaited("gone", &f);
  auto flag = r->cancelled;
  b.submit(std::move(r));
  flag->store(true);  // the client went away; nothing tells the batcher but the flag
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(f.get().outcome, Outcome::kCancelled);
}

TEST(DynamicBatcher, DestructionCompletesWhatIsLeftWithShuttingDown) {
  Recorder rec;
  {
    DynamicBatcher b(batcher_config(8, std::chrono::hours(1)), rec.hooks());
    b.submit(make_request("a", 1000));
  }
  ASSERT_EQ(rec.of("a").size(), 1u);
  EXPECT_EQ(rec.of("a")[0].outcome, Outcome::kShuttingDown);
}

}  // namespace
}  // namespace steno::serve
