// The batcher's policy, driven by a fake clock: when batches are released (max delay, preferred size, max size),
// how they are grouped by length under the padding bound, priorities, deadlines, cancellation, a full queue.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "steno/core/error.h"
#include "serve/batch_queue.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::ids;
using testing::make_request;

BatcherConfig queue_config(int max_batch, std::chrono::microseconds delay, std::vector<int> preferred = {},
                           double waste = 0.3, size_t max_queue = 0) {
  BatcherConfig c;
  c.max_batch_size = max_batch;
  c.max_queue_delay = delay;
  c.preferred_batch_sizes = std::move(preferred);
  c.max_padding_waste = waste;
  c.max_queue_size = max_queue;
  return c;
}

void admit_ok(BatchQueue& q, std::unique_ptr<TranscriptionRequest> r, Clock::time_point now) {
  ASSERT_FALSE(q.admit(std::move(r), now).has_value());
}

TEST(BatchQueue, ReleasesWhenTheOldestHasWaitedTheMaxQueueDelay) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 10ms));
  admit_ok(q, make_request("a", 1000), clock.now);
  clock.advance(4ms);
  admit_ok(q, make_request("b", 1000), clock.now);
  admit_ok(q, make_request("c", 1000), clock.now);
  EXPECT_FALSE(q.cut(clock.now));
  ASSERT_TRUE(q.next_release());
  EXPECT_EQ(*q.next_release(), clock.now + 6ms);  // measured from the oldest, "a"
  clock.advance(6ms - 1us);
  EXPECT_FALSE(q.cut(clock.now));
  clock.advance(1us);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(b->formed, clock.now);
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.next_release());
}

TEST(BatchQueue, ReleasesAtOnceAtMaxBatchSize) {
  FakeClock clock;
  BatchQueue q(queue_config(4, 1s));
  for (int i = 0; i < 3; ++i) admit_ok(q, make_request("r" + std::to_string(i), 1000), clock.now);
  EXPECT_FALSE(q.cut(clock.now));
  admit_ok(q, make_request("r3", 1000), clock.now);
  admit_ok(q, make_request("r4", 1000), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"r0", "r1", "r2", "r3"}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_FALSE(q.cut(clock.now));  // r4 alone waits for company or the delay
}

TEST(BatchQueue, ReleasesTheLargestPreferredSizeAtOnce) {
  FakeClock clock;
  BatchQueue q(queue_config(16, 1s, {4, 2}));
  admit_ok(q, make_request("a", 1000), clock.now);
  EXPECT_FALSE(q.cut(clock.now));
  admit_ok(q, make_request("b", 1000), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->requests.size(), 2u);

  for (int i = 0; i < 5; ++i) admit_ok(q, make_request("c" + std::to_string(i), 1000), clock.now);
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"c0", "c1", "c2", "c3"}));
  EXPECT_FALSE(q.cut(clock.now));  // one left: no preferred size fits, so it waits for the delay
  clock.advance(1s);
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"c4"}));
}

TEST(BatchQueue, ZeroDelayBatchesWhatIsAlreadyQueued) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 0us));
  admit_ok(q, make_request("a", 1000), clock.now);
  admit_ok(q, make_request("b", 1000), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->requests.size(), 2u);
}

TEST(BatchQueue, FlushReleasesWithoutWaiting) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 1s));
  admit_ok(q, make_request("a", 1000), clock.now);
  EXPECT_FALSE(q.cut(clock.now));
  std::optional<Batch> b = q.cut(clock.now, /*flush=*/true);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"a"}));
  EXPECT_FALSE(q.cut(clock.now, true));
}

TEST(BatchQueue, DifferentLengthsBatchTogetherWithinThePaddingBound) {
  // The case study batched only identical lengths; here 0.8 s to 1 s clips share a batch (waste ~10 %).
  FakeClock clock;
  BatchQueue q(queue_config(8, 0us, {}, 0.3));
  const std::vector<size_t> lengths = {16000, 12800, 14400, 15200, 13600};
  for (size_t i = 0; i < lengths.size(); ++i) admit_ok(q, make_request("r" + std::to_string(i), lengths[i]), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->requests.size(), lengths.size());
  EXPECT_NEAR(b->padding_waste, 1.0 - (16000 + 12800 + 14400 + 15200 + 13600) / (5.0 * 16000), 1e-9);
}

TEST(BatchQueue, GroupsByLengthAndNeverExceedsThePaddingBound) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 0us, {}, 0.2));
  // Long and short clips interleaved; the head (oldest) is long.
  const std::vector<std::pair<std::string, size_t>> reqs = {{"L1000", 1000}, {"S100", 100}, {"L950", 950},
                                                             {"S120", 120},   {"L990", 990}, {"S110", 110}};
  for (const auto& [id, len] : reqs) admit_ok(q, make_request(id, len), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  // Nearest lengths first; adding S120 would make the waste 1 - 3060/4000 = 0.235 > 0.2.
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"L1000", "L990", "L950"}));
  EXPECT_LE(b->padding_waste, 0.2);
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"S100", "S110", "S120"}));
  EXPECT_LE(b->padding_waste, 0.2);
  EXPECT_TRUE(q.empty());
}

TEST(BatchQueue, ZeroWasteBoundBatchesOnlyIdenticalLengths) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 0us, {}, 0.0));
  for (size_t len : {500, 501, 500, 499, 500}) admit_ok(q, make_request(std::to_string(len), len), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"500", "500", "500"}));
  EXPECT_EQ(b->padding_waste, 0.0);
}

TEST(BatchQueue, RandomQueuesRespectTheBoundAndReleaseEveryRequestOnce) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    FakeClock clock;
    const double bound = std::uniform_real_distribution<double>(0.0, 0.6)(rng);
    const int max_batch = std::uniform_int_distribution<int>(1, 12)(rng);
    BatchQueue q(queue_config(max_batch, 5ms, {}, bound));
    std::map<std::string, int> seen;
    const int n = std::uniform_int_distribution<int>(1, 80)(rng);
    for (int i = 0; i < n; ++i) {
      const size_t len = std::uniform_int_distribution<size_t>(1, 4000)(rng);
      const int priority = std::uniform_int_distribution<int>(0, 2)(rng);
      admit_ok(q, make_request(std::to_string(i), len, priority), clock.now);
      seen[std::to_string(i)] = 0;
    }
    while (std::optional<Batch> b = q.cut(clock.now, /*flush=*/true)) {
      ASSERT_LE(static_cast<int>(b->requests.size()), max_batch);
      std::vector<int64_t> lengths;
      for (const auto& r : b->requests) {
        lengths.push_back(static_cast<int64_t>(r->pcm.size()));
        ++seen[r->id];
      }
      EXPECT_LE(padding_waste(lengths), bound + 1e-9);
      EXPECT_NEAR(b->padding_waste, padding_waste(lengths), 1e-12);
    }
    for (const auto& [id, count] : seen) EXPECT_EQ(count, 1) << id;
  }
}

TEST(BatchQueue, EveryPrefixOfAGroupRespectsTheBound) {
  // Truncating to a preferred size keeps a prefix of the group, so every prefix must hold the bound.
  std::mt19937 rng(11);
  std::vector<QueuedItem> items(40);
  for (size_t i = 0; i < items.size(); ++i)
    items[i] = {std::uniform_int_distribution<int64_t>(0, 1000)(rng), 0, i};
  const std::vector<size_t> group = group_by_length(items, 3, 16, 0.25);
  EXPECT_EQ(group.front(), 3u);
  std::vector<int64_t> prefix;
  for (size_t i : group) {
    prefix.push_back(items[i].length);
    EXPECT_LE(padding_waste(prefix), 0.25 + 1e-12);
  }
}

TEST(BatchQueue, LowerPriorityValueIsServedFirst) {
  FakeClock clock;
  BatchQueue q(queue_config(2, 0us));
  admit_ok(q, make_request("low1", 1000, 5), clock.now);
  admit_ok(q, make_request("low2", 1000, 5), clock.now);
  admit_ok(q, make_request("high", 3000, 1), clock.now);
  admit_ok(q, make_request("mid", 1000, 2), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  // "high" goes first, alone: 3000 samples beside 1000 would waste 0.33 > 0.3. Then "mid" heads the next batch.
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"high"}));
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"mid", "low1"}));
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"low2"}));
}

TEST(BatchQueue, PriorityZeroMeansTheDefaultLevel) {
  FakeClock clock;
  BatcherConfig c = queue_config(1, 0us);
  c.default_priority_level = 5;
  BatchQueue q(c);
  admit_ok(q, make_request("behind", 1000, 9), clock.now);
  admit_ok(q, make_request("default", 1000, 0), clock.now);
  admit_ok(q, make_request("ahead", 1000, 1), clock.now);
  admit_ok(q, make_request("same-as-default", 1000, 5), clock.now);
  std::vector<std::string> order;
  while (std::optional<Batch> b = q.cut(clock.now)) order.push_back(b->requests[0]->id);
  EXPECT_EQ(order, (std::vector<std::string>{"ahead", "default", "same-as-default", "behind"}));
}

TEST(BatchQueue, BetterPriorityFillsABatchBeforeNearerLengths) {
  FakeClock clock;
  BatchQueue q(queue_config(2, 0us));
  admit_ok(q, make_request("head", 1000, 1), clock.now);
  admit_ok(q, make_request("near-low", 1000, 3), clock.now);
  admit_ok(q, make_request("far-high", 800, 1), clock.now);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"head", "far-high"}));
}

TEST(BatchQueue, PiecesOfLongRequestsBatchOnlyWithPieces) {
  FakeClock clock;
  BatchQueue q(queue_config(4, 0us));
  auto piece = [](const std::string& id) {
    auto r = make_request(id, 1000, 6);  // pieces queue a level behind their request (serve/piecewise.h)
    r->piece = true;
    return r;
  };
  admit_ok(q, piece("piece0"), clock.now);
  admit_ok(q, make_request("short", 1000, 0), clock.now);
  admit_ok(q, piece("piece1"), clock.now);
  // The short request goes first and alone: a piece would add its compute to the short request's batch.
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"short"}));
  b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"piece0", "piece1"}));
}

TEST(BatchQueue, ExpiredRequestsLeaveBeforeCostingCompute) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 10ms));
  auto r = make_request("late", 1000);
  r->deadline = clock.now + 5ms;
  admit_ok(q, std::move(r), clock.now);
  admit_ok(q, make_request("fine", 1000), clock.now);
  ASSERT_TRUE(q.next_deadline());
  EXPECT_EQ(*q.next_deadline(), clock.now + 5ms);
  clock.advance(5ms);
  std::vector<Completion> expired = q.expire(clock.now);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].request->id, "late");
  EXPECT_EQ(expired[0].response.outcome, Outcome::kDeadlineExceeded);
  EXPECT_NE(expired[0].response.message.find("deadline"), std::string::npos);
  EXPECT_FALSE(q.next_deadline());
  clock.advance(5ms);
  std::optional<Batch> b = q.cut(clock.now);
  ASSERT_TRUE(b);
  EXPECT_EQ(ids(b->requests), (std::vector<std::string>{"fine"}));
}

TEST(BatchQueue, ARequestPastItsDeadlineIsNotQueued) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 10ms));
  auto r = make_request("late", 1000);
  r->deadline = clock.now;
  std::optional<Completion> c = q.admit(std::move(r), clock.now);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->response.outcome, Outcome::kDeadlineExceeded);
  EXPECT_TRUE(q.empty());
}

TEST(BatchQueue, CancelledRequestsAreDropped) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 10ms));
  auto a = make_request("a", 1000);
  auto flag = a->cancelled;
  admit_ok(q, std::move(a), clock.now);
  admit_ok(q, make_request("b", 1000), clock.now);
  EXPECT_TRUE(q.expire(clock.now).empty());
  flag->store(true);
  std::vector<Completion> dropped = q.expire(clock.now);
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].request->id, "a");
  EXPECT_EQ(dropped[0].response.outcome, Outcome::kCancelled);
  EXPECT_EQ(q.size(), 1u);

  auto c = make_request("c", 1000);
  c->cancelled->store(true);
  std::optional<Completion> rejected = q.admit(std::move(c), clock.now);
  ASSERT_TRUE(rejected);
  EXPECT_EQ(rejected->response.outcome, Outcome::kCancelled);
}

TEST(BatchQueue, FullQueueRejectsAtOnceWithARetryHintFromTheThroughput) {
  FakeClock clock;
  BatchQueue q(queue_config(2, 0us, {}, 0.3, /*max_queue=*/4));
  for (int i = 0; i < 4; ++i) admit_ok(q, make_request("a" + std::to_string(i), 1000), clock.now);
  std::optional<Completion> c = q.admit(make_request("x", 1000), clock.now);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->response.outcome, Outcome::kQueueFull);
  EXPECT_EQ(c->response.retry_after_s, 1.0);  // no throughput measured yet
  EXPECT_NE(c->response.message.find("queue full"), std::string::npos);

  // 4 requests released over 2 s: 2 per second, so a queue of 4 clears in about 2 s.
  ASSERT_TRUE(q.cut(clock.now));
  clock.advance(2s);
  ASSERT_TRUE(q.cut(clock.now));
  for (int i = 0; i < 4; ++i) admit_ok(q, make_request("b" + std::to_string(i), 1000), clock.now);
  c = q.admit(make_request("y", 1000), clock.now);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->response.outcome, Outcome::kQueueFull);
  EXPECT_EQ(c->response.retry_after_s, 2.0);
}

TEST(BatchQueue, TakeAllEmptiesTheQueue) {
  FakeClock clock;
  BatchQueue q(queue_config(8, 1s));
  admit_ok(q, make_request("a", 10), clock.now);
  admit_ok(q, make_request("b", 10), clock.now);
  EXPECT_EQ(ids(q.take_all()), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(q.empty());
}

TEST(BatchQueue, RejectsABadConfiguration) {
  EXPECT_THROW(BatchQueue(queue_config(0, 0us)), Error);
  EXPECT_THROW(BatchQueue(queue_config(4, 0us, {8})), Error);
  EXPECT_THROW(BatchQueue(queue_config(4, 0us, {}, 1.5)), Error);
  EXPECT_THROW(BatchQueue(queue_config(4, -1us)), Error);
  BatcherConfig no_default = queue_config(4, 0us);
  no_default.default_priority_level = 0;
  EXPECT_THROW(BatchQueue{no_default}, Error);
}

TEST(RateMeter, AveragesOverAtLeastOneSecondAndForgetsOldEvents) {
  FakeClock clock;
  RateMeter m(std::chrono::seconds(10));
  EXPECT_EQ(m.rate(clock.now), 0.0);
  m.record(clock.now, 8);
  EXPECT_EQ(m.rate(clock.now), 8.0);  // a burst reads as 8 per second, not infinitely many
  clock.advance(4s);
  m.record(clock.now, 8);
  EXPECT_EQ(m.rate(clock.now), 4.0);
  clock.advance(7s);
  EXPECT_EQ(m.rate(clock.now), 8.0 / 7.0);  // the first event left the window
}

}  // namespace
}  // namespace steno::serve
