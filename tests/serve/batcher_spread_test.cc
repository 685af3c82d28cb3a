// BatcherConfig::spread_over_idle_executors: a batch released while other executors wait in pull() is cut into
// one piece per executor (this one and the waiting ones), as even as the batch allows, lengths kept together.
// Executors are real threads blocked in next_batch(); the test waits (bounded) until they are all waiting, then
// fills a batch, so which executor cuts it does not matter: the pieces do.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <initializer_list>
#include <set>
#include <thread>

#include "serve/batcher.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;
using testing::ids;
using testing::make_request;

DynamicBatcher::Hooks no_hooks() {
  return {[](Completion) {}, nullptr};
}

BatcherConfig spread_config(int max_batch, bool spread) {
  BatcherConfig c;
  c.max_batch_size = max_batch;
  c.max_queue_delay = std::chrono::hours(1);  // only a full batch is released
  c.max_padding_waste = 1;                    // any lengths batch together
  c.spread_over_idle_executors = spread;
  return c;
}

// `n` executors waiting in next_batch() (each returns what it got: a batch, or nothing at shutdown).
std::vector<std::future<std::optional<Batch>>> waiting_executors(DynamicBatcher& b, size_t n) {
  std::vector<std::future<std::optional<Batch>>> out;
  for (size_t i = 0; i < n; ++i) out.push_back(std::async(std::launch::async, [&b] { return b.next_batch(); }));
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (b.idle_executors() < n && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  EXPECT_EQ(b.idle_executors(), n);
  return out;
}

// What the executors got once the batch was handed out: each executor's batch size (0: none), sorted down, and every
// request id handed out. Executors still waiting are released by shutdown() after `expect_batches` have come back.
struct Handed {
  std::vector<size_t> sizes;
  std::vector<std::string> ids;
};
Handed collect(DynamicBatcher& b, std::vector<std::future<std::optional<Batch>>>& executors, size_t expect_batches) {
  Handed h;
  std::vector<bool> done(executors.size(), false);
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  size_t got = 0;
  while (got < expect_batches && std::chrono::steady_clock::now() < give_up)
    for (size_t i = 0; i < executors.size(); ++i)
      if (!done[i] && executors[i].wait_for(1ms) == std::future_status::ready) {
        done[i] = true;
        if (std::optional<Batch> batch = executors[i].get()) {
          ++got;
          h.sizes.push_back(batch->requests.size());
          for (const std::string& id : ids(batch->requests)) h.ids.push_back(id);
        } else {
          h.sizes.push_back(0);
        }
      }
  b.shutdown();  // the executors that got nothing return now
  for (size_t i = 0; i < executors.size(); ++i)
    if (!done[i]) {
      EXPECT_EQ(executors[i].wait_for(10s), std::future_status::ready);
      std::optional<Batch> batch = executors[i].get();
      EXPECT_FALSE(batch) << "a batch after shutdown";
      h.sizes.push_back(0);
    }
  std::sort(h.sizes.rbegin(), h.sizes.rend());
  std::sort(h.ids.begin(), h.ids.end());
  return h;
}

// `executors` wait, then requests `ids` (equal lengths) fill a batch of their count; what each executor got once
// `expect_batches` came back. (GCC 12 warns falsely about the id strings' copy once inlined here: its bug 105651.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
Handed share_one_batch(bool spread, size_t executors, std::initializer_list<const char*> ids, size_t expect_batches) {
  DynamicBatcher b(spread_config(static_cast<int>(ids.size()), spread), no_hooks());
  auto waiting = waiting_executors(b, executors);
  for (const char* id : ids) b.submit(make_request(id, 1000));
  return collect(b, waiting, expect_batches);
}
#pragma GCC diagnostic pop

TEST(BatcherSpread, ABatchIsSharedByTheWaitingExecutors) {
  const Handed h = share_one_batch(true, 3, {"a", "b", "c", "d", "e", "f"}, 3);
  EXPECT_EQ(h.sizes, (std::vector<size_t>{2, 2, 2}));
  EXPECT_EQ(h.ids, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));  // each exactly once
}

TEST(BatcherSpread, WithoutItOneExecutorTakesTheWholeBatch) {
  EXPECT_EQ(share_one_batch(false, 3, {"a", "b", "c", "d", "e", "f"}, 1).sizes, (std::vector<size_t>{6, 0, 0}));
}

TEST(BatcherSpread, PiecesAreAsEvenAsTheBatchAllows) {
  EXPECT_EQ(share_one_batch(true, 3, {"a", "b", "c", "d", "e", "f", "g"}, 3).sizes, (std::vector<size_t>{3, 2, 2}));
}

TEST(BatcherSpread, NoPieceIsEmptyWhenExecutorsOutnumberTheRequests) {
  EXPECT_EQ(share_one_batch(true, 3, {"a", "b"}, 2).sizes, (std::vector<size_t>{1, 1, 0}));
}

TEST(BatcherSpread, PiecesKeepNeighbouringLengthsTogether) {
  DynamicBatcher b(spread_config(4, true), no_hooks());
  auto executors = waiting_executors(b, 2);
  b.submit(make_request("short1", 16000));
  b.submit(make_request("long1", 160000));
  b.submit(make_request("short2", 17000));
  b.submit(make_request("long2", 161000));
  std::set<std::vector<std::string>> pieces;
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  for (auto& e : executors) {
    ASSERT_EQ(e.wait_until(give_up), std::future_status::ready);
    std::optional<Batch> batch = e.get();
    ASSERT_TRUE(batch);
    std::vector<std::string> got = ids(batch->requests);
    std::sort(got.begin(), got.end());
    pieces.insert(got);
    EXPECT_LT(batch->padding_waste, 0.05) << got[0];  // a piece of one length class pads little
  }
  EXPECT_EQ(pieces, (std::set<std::vector<std::string>>{{"long1", "long2"}, {"short1", "short2"}}));
}

}  // namespace
}  // namespace steno::serve
