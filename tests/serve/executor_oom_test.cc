// An executor that runs out of memory (the out-of-memory policy: executor_pool.h, batch_cap.h): the real
// ExecutorPool, lane and DynamicBatcher, with a runner that throws kResourceExhausted the way the CUDA allocator
// does for batches it cannot fit. Every request must be completed exactly once, with its own transcript; the
// executor must then ask for batches that fit.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

#include "steno/core/error.h"
#include "serve/executor_pool.h"
#include "serve/completer.h"
#include "serve/lanes.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;

std::string rid(int i) { return fmt::format("r{}", i); }

// Fits batches of up to `fits` clips, and no batch holding a clip longer than `longest` samples; the transcript
// of a clip is its length, so a result that went to the wrong request shows.
class MemoryBoundRunner final : public BatchRunner {
 public:
  struct Log {
    std::mutex mu;
    std::vector<size_t> attempts;  // batch sizes, in order, successful or not
    int releases = 0;              // release_cached_memory() calls
  };
  MemoryBoundRunner(size_t fits, size_t longest, Log& log) : fits_(fits), longest_(longest), log_(log) {}

  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings*) override {
    {
      std::lock_guard lock(log_.mu);
      log_.attempts.push_back(clips.size());
    }
    size_t max_len = 0;
    for (const auto& c : clips) max_len = std::max(max_len, c.size());
    if (clips.size() > fits_ || max_len > longest_)
      fail(ErrorCode::kResourceExhausted, "out of device memory on cuda:0 allocating {} bytes (test)",
           clips.size() * max_len * 4);
    std::vector<asr::Transcript> out(clips.size());
    for (size_t i = 0; i < clips.size(); ++i) out[i].text = std::to_string(clips[i].size());
    return out;
  }
  void release_cached_memory() override {
    std::lock_guard lock(log_.mu);
    ++log_.releases;
  }

 private:
  size_t fits_, longest_;
  Log& log_;
};

// Every completion, by request id.
class Answers {
 public:
  void add(Completion c) {
    std::lock_guard lock(mu_);
    by_id_[c.request->id].push_back(std::move(c.response));
    cv_.notify_all();
  }
  bool wait_for(size_t n, std::chrono::seconds bound) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, bound, [&] { return by_id_.size() >= n; });
  }
  std::map<std::string, std::vector<TranscriptionResponse>> all() {
    std::lock_guard lock(mu_);
    return by_id_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<TranscriptionResponse>> by_id_;
};

class LaneOutOfMemory : public ::testing::Test {
 protected:
  LaneOutOfMemory() {
    spdlog::set_level(spdlog::level::err);  // the lane's warnings are expected here
  }
  ~LaneOutOfMemory() override { spdlog::set_level(spdlog::level::info); }

  // Requests "r<first>".. of distinct lengths 1000 + i (or `length` when given), answered into answers_.
  void submit(DynamicBatcher& batcher, int first, int count, size_t length = 0) {
    for (int i = first; i < first + count; ++i) {
      auto r = std::make_unique<TranscriptionRequest>();
      r->id = rid(i);
      r->pcm.assign(length ? length : 1000 + static_cast<size_t>(i), 0.0f);
      r->done = [this, id = r->id](TranscriptionResponse resp) {
        Completion c;
        c.request = std::make_unique<TranscriptionRequest>();
        c.request->id = id;
        c.response = std::move(resp);
        answers_.add(std::move(c));
      };
      batcher.submit(std::move(r));
    }
  }

  static BatcherConfig config(int max_batch) {
    BatcherConfig c;
    c.max_batch_size = max_batch;
    c.max_queue_delay = 60s;    // batches go when full (or at shutdown): their sizes are the test's to choose
    c.max_padding_waste = 1.0;  // lengths do not split groups
    c.max_queue_size = 0;
    return c;
  }

  DynamicBatcher::Hooks hooks() {
    return {[](Completion c) { RequestCompleter(nullptr)(std::move(c)); }, nullptr};
  }

  RunnerFactory runners(size_t fits, size_t longest = SIZE_MAX) {
    return [this, fits, longest](int) { return std::make_unique<MemoryBoundRunner>(fits, longest, log_); };
  }

  std::vector<size_t> attempts() {
    std::lock_guard lock(log_.mu);
    return log_.attempts;
  }

  MemoryBoundRunner::Log log_;
  Answers answers_;
};

TEST_F(LaneOutOfMemory, SplitsTheBatchInHalvesUntilItFitsAndCompletesEveryRequestOnce) {
  DynamicBatcher batcher(config(16), hooks());
  submit(batcher, 0, 16);  // queued before the lane starts: one full batch of 16
  ExecutorPool lanes(lane_executors(1, runners(5)), batcher, RequestCompleter(nullptr), nullptr);
  ASSERT_TRUE(answers_.wait_for(16, 30s));

  // 16 does not fit; nor do its halves of 8; the quarters of 4 do.
  EXPECT_EQ(attempts(), (std::vector<size_t>{16, 8, 4, 4, 8, 4, 4}));
  const auto all = answers_.all();
  ASSERT_EQ(all.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    const auto& got = all.at(rid(i));
    ASSERT_EQ(got.size(), 1u) << "r" << i << " completed " << got.size() << " times";
    EXPECT_EQ(got[0].outcome, Outcome::kOk) << got[0].message;
    EXPECT_EQ(got[0].transcript.text, std::to_string(1000 + i));
    EXPECT_EQ(got[0].batch_size, 4);
  }
  EXPECT_EQ(lanes.batch_cap(0), 4);
  {
    std::lock_guard lock(log_.mu);
    EXPECT_EQ(log_.releases, 3);  // after each of the three batches that ran out
  }

  // From now on the lane asks for batches of 4: twelve more requests run in three batches, none too big.
  submit(batcher, 16, 12);
  ASSERT_TRUE(answers_.wait_for(28, 30s));
  const std::vector<size_t> all_attempts = attempts();
  const std::vector<size_t> later(all_attempts.begin() + 7, all_attempts.end());
  EXPECT_EQ(later, (std::vector<size_t>{4, 4, 4}));
  const auto after = answers_.all();
  for (int i = 16; i < 28; ++i) {
    const auto& got = after.at(rid(i));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].outcome, Outcome::kOk) << got[0].message;
    EXPECT_EQ(got[0].transcript.text, std::to_string(1000 + i));
  }
}

TEST_F(LaneOutOfMemory, ARequestThatDoesNotFitAloneFailsAloneWithAClearMessage) {
  DynamicBatcher batcher(config(4), hooks());
  submit(batcher, 0, 2);
  submit(batcher, 2, 1, /*length=*/50'000);  // r2: too long for any batch
  submit(batcher, 3, 1);
  ExecutorPool lanes(lane_executors(1, runners(16, /*longest=*/10'000)), batcher, RequestCompleter(nullptr), nullptr);
  ASSERT_TRUE(answers_.wait_for(4, 30s));

  const auto all = answers_.all();
  for (int i = 0; i < 4; ++i) {
    const auto& got = all.at(rid(i));
    ASSERT_EQ(got.size(), 1u) << "r" << i;
    if (i == 2) {
      EXPECT_EQ(got[0].outcome, Outcome::kInternal);
      EXPECT_NE(got[0].message.find("out of memory running this request alone"), std::string::npos)
          << got[0].message;
      EXPECT_NE(got[0].message.find("3.1 s of audio"), std::string::npos) << got[0].message;  // 50,000 samples
      EXPECT_NE(got[0].message.find("out of device memory"), std::string::npos) << got[0].message;
    } else {
      EXPECT_EQ(got[0].outcome, Outcome::kOk) << got[0].message;
      EXPECT_EQ(got[0].transcript.text, std::to_string(1000 + i));
    }
  }
  // 4 -> 2 + 2 -> the pair with r2 splits again -> r2 alone fails; the other pair ran.
  EXPECT_EQ(attempts(), (std::vector<size_t>{4, 2, 2, 1, 1}));
  // r2 explains every failure: the lane keeps asking for full batches.
  batcher.shutdown();
  lanes.join();
  EXPECT_EQ(lanes.batch_cap(0), 4);
}

TEST_F(LaneOutOfMemory, TheCapGrowsBackAndAFailedProbeReturnsToTheSizeThatRan) {
  DynamicBatcher batcher(config(16), hooks());
  submit(batcher, 0, 16);
  ExecutorPool lanes(lane_executors(1, runners(4)), batcher, RequestCompleter(nullptr), nullptr,
                     PoolPolicy{.oom = {.regrow_after = 3}});
  ASSERT_TRUE(answers_.wait_for(16, 30s));
  // Three batches of 4 in a row at the lowered cap: it grows to 5.
  submit(batcher, 16, 12);
  ASSERT_TRUE(answers_.wait_for(28, 30s));
  EXPECT_EQ(lanes.batch_cap(0), 5);
  // The probe of 5 runs out; its halves run; the cap returns to 4, the largest batch that ran.
  submit(batcher, 28, 5);
  ASSERT_TRUE(answers_.wait_for(33, 30s));
  batcher.shutdown();
  lanes.join();  // the cap is lowered after the halves have completed their requests
  const std::vector<size_t> all_attempts = attempts();
  const std::vector<size_t> later(all_attempts.begin() + 7, all_attempts.end());
  EXPECT_EQ(later, (std::vector<size_t>{4, 4, 4, 5, 3, 2}));
  EXPECT_EQ(lanes.batch_cap(0), 4);
  for (const auto& [id, got] : answers_.all()) {
    ASSERT_EQ(got.size(), 1u) << id;
    EXPECT_EQ(got[0].outcome, Outcome::kOk) << id << ": " << got[0].message;
  }
}

TEST_F(LaneOutOfMemory, OtherErrorsAreNotRetried) {
  DynamicBatcher batcher(config(4), hooks());
  submit(batcher, 0, 4);
  int calls = 0;
  auto failing = [&calls](int) {
    struct Failing final : BatchRunner {
      int& calls;
      explicit Failing(int& c) : calls(c) {}
      BatchOutput run(const std::vector<std::span<const float>>&, asr::StageTimings*) override {
        ++calls;
        throw Error(ErrorCode::kInternal, "kernel launch failed");
      }
    };
    return std::make_unique<Failing>(calls);
  };
  {
    ExecutorPool lanes(lane_executors(1, failing), batcher, RequestCompleter(nullptr), nullptr);
    ASSERT_TRUE(answers_.wait_for(4, 30s));
    EXPECT_EQ(lanes.batch_cap(0), 4);
  }
  EXPECT_EQ(calls, 1);
  for (const auto& [id, got] : answers_.all()) {
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].message, "kernel launch failed");
  }
}

}  // namespace
}  // namespace steno::serve
