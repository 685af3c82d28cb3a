// The executor pool's handling of executors that are lost, for any kind of executor: the real ExecutorPool and
// DynamicBatcher with a stand-in executor that loses batches holding a "poison" request (as a worker process that
// crashes on it would). Every request is completed exactly once: innocent ones are replayed and served, a poison
// request fails alone the second time, a batch lost with its group is replayed whole and uncharged, and a lost
// executor is started again.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "../error_util.h"
#include "serve/completer.h"
#include "serve/executor_pool.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;

// Loses any batch holding a request whose id starts with `poison` (kFault), or, while `group_losses` > 0, loses
// batches as a group victim (kGroup). Lost, it is down until start() is called again.
class LosingExecutor final : public Executor {
 public:
  struct Log {
    std::mutex mu;
    int starts = 0;
    std::vector<size_t> batches;  // sizes run, in order
  };
  LosingExecutor(Log& log, std::atomic<int>& group_losses) : log_(log), group_losses_(group_losses) {}

  const std::string& name() const override { return name_; }
  std::optional<std::string> start() override {
    std::lock_guard lock(log_.mu);
    ++log_.starts;
    up_ = true;
    return std::nullopt;
  }
  bool up() const override { return up_; }
  BatchRun run(const Batch& batch) override {
    {
      std::lock_guard lock(log_.mu);
      log_.batches.push_back(batch.requests.size());
    }
    if (group_losses_ > 0) {
      --group_losses_;
      up_ = false;
      return BatchRun::lost(Loss::kGroup, "crashed", "killed with its group");
    }
    for (const auto& r : batch.requests)
      if (r->id.rfind("poison", 0) == 0) {
        up_ = false;
        return BatchRun::lost(Loss::kFault, "crashed", "it exited with signal 6");
      }
    std::vector<asr::Transcript> out(batch.requests.size());
    for (size_t i = 0; i < out.size(); ++i) out[i].text = batch.requests[i]->id;
    return BatchRun::done(std::move(out), {});
  }
  void stop() override {}

 private:
  std::string name_ = "stand-in 0";
  Log& log_;
  std::atomic<int>& group_losses_;
  bool up_ = false;
};

class PoolLosses : public ::testing::Test {
 protected:
  PoolLosses() { spdlog::set_level(spdlog::level::off); }  // the losses' error lines are expected here
  ~PoolLosses() override { spdlog::set_level(spdlog::level::info); }

  void submit(DynamicBatcher& batcher, const std::string& id) {
    auto r = testing::make_request(id, 1600);
    r->done = [this, id](TranscriptionResponse resp) {
      std::lock_guard lock(mu_);
      answers_[id].push_back(std::move(resp));
      cv_.notify_all();
    };
    batcher.submit(std::move(r));
  }
  bool wait_for(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return answers_.size() >= n; });
  }

  static BatcherConfig config() {
    BatcherConfig c;
    c.max_batch_size = 4;
    c.max_queue_delay = 1h;  // released when full, or as replays (one request each)
    c.max_padding_waste = 1;
    return c;
  }

  std::unique_ptr<ExecutorPool> pool(DynamicBatcher& batcher, ModelStatistics* stats) {
    std::vector<std::unique_ptr<Executor>> executors;
    executors.push_back(std::make_unique<LosingExecutor>(log_, group_losses_));
    PoolPolicy policy;
    policy.restart.backoff_initial = 1ms;
    policy.restart.backoff_max = 2ms;
    return std::make_unique<ExecutorPool>(std::move(executors), batcher, RequestCompleter(stats), stats, policy);
  }

  LosingExecutor::Log log_;
  std::atomic<int> group_losses_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<TranscriptionResponse>> answers_;
};

TEST_F(PoolLosses, InnocentRequestsAreReplayedAloneAndAPoisonRequestFailsAloneTheSecondTime) {
  ServeStatistics statistics;
  ModelStatistics& stats = statistics.add_model("m", "1");
  DynamicBatcher batcher(config(), {RequestCompleter(&stats), nullptr});
  auto p = pool(batcher, &stats);
  for (const char* id : {"a", "b", "poison", "c"}) submit(batcher, id);
  ASSERT_TRUE(wait_for(4));
  batcher.shutdown();
  p->join();

  for (const char* id : {"a", "b", "c"}) {
    ASSERT_EQ(answers_[id].size(), 1u) << id;
    EXPECT_EQ(answers_[id][0].outcome, Outcome::kOk) << id << ": " << answers_[id][0].message;
    EXPECT_EQ(answers_[id][0].transcript.text, id);
  }
  ASSERT_EQ(answers_["poison"].size(), 1u);
  EXPECT_EQ(answers_["poison"][0].outcome, Outcome::kInternal);
  EXPECT_EQ(answers_["poison"][0].message, "request crashed the worker twice; not retried");
  // The batch of 4 was lost; each request ran alone after that, the poison one twice (lost both times).
  std::lock_guard lock(log_.mu);
  EXPECT_EQ(log_.batches.front(), 4u);
  EXPECT_EQ(log_.batches.size(), 1u + 4u);
  EXPECT_EQ(log_.starts, 3);  // the first start, then once after each loss
  const std::string text = statistics.render();
  EXPECT_NE(text.find("steno_replayed_requests_total{model=\"m\",version=\"1\"} 4"), std::string::npos) << text;
  EXPECT_NE(text.find("steno_poisoned_requests_total{model=\"m\",version=\"1\"} 1"), std::string::npos) << text;
}

TEST_F(PoolLosses, ABatchLostWithItsGroupIsReplayedWholeWithoutBlame) {
  DynamicBatcher batcher(config(), {RequestCompleter(nullptr), nullptr});
  group_losses_ = 2;  // lost twice with its group: blamed, requests would be poisoned by now
  auto p = pool(batcher, nullptr);
  for (const char* id : {"a", "b", "c", "d"}) submit(batcher, id);
  ASSERT_TRUE(wait_for(4));
  batcher.shutdown();
  p->join();
  for (const char* id : {"a", "b", "c", "d"}) {
    ASSERT_EQ(answers_[id].size(), 1u) << id;
    EXPECT_EQ(answers_[id][0].outcome, Outcome::kOk) << id << ": " << answers_[id][0].message;
  }
  std::lock_guard lock(log_.mu);
  EXPECT_EQ(log_.batches, (std::vector<size_t>{4, 4, 4}));  // whole each time
}

// Executors that fail together, as MPS clients of one GPU do: a poison request's fault loses every batch running
// beside it. Its neighbours are charged for a fault they did not cause; replayed beside the poison request again,
// they would be charged twice and failed. With isolate_suspects a batch holding a charged request runs alone.
class SharedFate {
 public:
  // Waits (a moment) for `expected` batches to be running, so that the fault meets the neighbours it would meet
  // under load, then faults them all.
  void fault(int expected) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, 300ms, [&] { return running_ >= expected; });
    ++epoch_;
    cv_.notify_all();
  }
  uint64_t begin() {
    std::lock_guard lock(mu_);
    ++running_;
    cv_.notify_all();
    return epoch_;
  }
  // Runs a batch for `ms`; true when a fault hit it meanwhile.
  bool end_after(uint64_t epoch, std::chrono::milliseconds ms) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, ms, [&] { return epoch_ != epoch; });
    --running_;
    return epoch_ != epoch;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  uint64_t epoch_ = 0;
};

class SharedFateExecutor final : public Executor {
 public:
  SharedFateExecutor(int i, SharedFate& fate, int executors) : name_("fate " + std::to_string(i)), fate_(fate), n_(executors) {}
  const std::string& name() const override { return name_; }
  std::optional<std::string> start() override {
    up_ = true;
    return std::nullopt;
  }
  bool up() const override { return up_; }
  BatchRun run(const Batch& batch) override {
    const uint64_t epoch = fate_.begin();
    bool poison = false;
    for (const auto& r : batch.requests) poison = poison || r->id.rfind("poison", 0) == 0;
    if (poison) fate_.fault(n_);
    if (fate_.end_after(epoch, poison ? 0ms : 50ms)) {
      up_ = false;
      return BatchRun::lost(Loss::kFault, "crashed", "the GPU's clients faulted together");
    }
    return BatchRun::done(std::vector<asr::Transcript>(batch.requests.size()), {});
  }
  void stop() override {}

 private:
  std::string name_;
  SharedFate& fate_;
  int n_;
  bool up_ = false;
};

// Poison requests and innocent ones on four executors that fail together: which requests end failed.
std::map<std::string, Outcome> run_shared_fate(bool isolate_suspects) {
  constexpr int kExecutors = 4;
  SharedFate fate;
  BatcherConfig config;
  config.max_batch_size = 1;
  config.max_queue_delay = 0us;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, Outcome> outcomes;
  CompleteFn complete = [&](Completion c) {
    std::lock_guard lock(mu);
    outcomes[c.request->id] = c.response.outcome;
    cv.notify_all();
  };
  DynamicBatcher batcher(config, {complete, nullptr});
  std::vector<std::unique_ptr<Executor>> executors;
  for (int i = 0; i < kExecutors; ++i) executors.push_back(std::make_unique<SharedFateExecutor>(i, fate, kExecutors));
  PoolPolicy policy;
  policy.restart.backoff_initial = 1ms;
  policy.restart.backoff_max = 2ms;
  policy.isolate_suspects = isolate_suspects;
  ExecutorPool pool(std::move(executors), batcher, complete, nullptr, policy);
  for (const char* id : {"innocent-1", "innocent-2", "innocent-3", "poison"})
    batcher.submit(testing::make_request(id, 1600));
  std::unique_lock lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, 30s, [&] { return outcomes.size() == 4; }));
  return outcomes;
}

TEST(SharedFate, SuspectsRunAloneSoThatOnlyThePoisonRequestFails) {
  spdlog::set_level(spdlog::level::off);
  const auto isolated = run_shared_fate(true);
  EXPECT_EQ(isolated.at("poison"), Outcome::kInternal);
  for (const char* id : {"innocent-1", "innocent-2", "innocent-3"}) EXPECT_EQ(isolated.at(id), Outcome::kOk) << id;
  // Without it, the innocent ones replayed beside the poison one fall with it a second time.
  const auto side_by_side = run_shared_fate(false);
  int failed = 0;
  for (const auto& [id, outcome] : side_by_side) failed += outcome == Outcome::kInternal ? 1 : 0;
  EXPECT_GT(failed, 1);
  spdlog::set_level(spdlog::level::info);
}

TEST(ExecutorPoolStart, AnExecutorThatCannotStartFailsThePoolWithItsNameAndReason) {
  struct NeverUp final : Executor {
    std::string n = "worker 3";
    const std::string& name() const override { return n; }
    std::optional<std::string> start() override { return std::string("it exited before it was ready"); }
    bool up() const override { return false; }
    BatchRun run(const Batch&) override { return BatchRun::failed(ErrorCode::kInternal, "never runs"); }
    void stop() override {}
  };
  DynamicBatcher batcher(BatcherConfig{}, {RequestCompleter(nullptr), nullptr});
  std::vector<std::unique_ptr<Executor>> executors;
  executors.push_back(std::make_unique<NeverUp>());
  const std::string msg = steno::testing::error_of(
      [&] { ExecutorPool(std::move(executors), batcher, RequestCompleter(nullptr), nullptr); },
      ErrorCode::kUnavailable);
  EXPECT_EQ(msg, "worker 3 could not start: it exited before it was ready");
}

}  // namespace
}  // namespace steno::serve
