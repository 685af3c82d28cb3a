// The inference core end to end: the bundled model behind two lanes under 200 concurrent submissions (each answered
// once, with the transcript `steno transcribe` gives, in real batches), drain while busy, the statistics, model
// names and aliases; and, with stand-in runners, the failure paths (engine errors, a lane that cannot start,
// deadlines while lanes are busy, refusals on submission counted like every other failure).
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "../error_util.h"
#include "metrics_text.h"
#include "testset_clips.h"
#include "steno/core/error.h"
#include "serve/inference_core.h"
#include "serve/lanes.h"

namespace steno::serve {
namespace {

using namespace std::chrono_literals;
using testing::metric_value;

constexpr const char* kModelName = "steno-tdt-small-en";

using testing::Clip;

// Every response, by request index; counts how often each request was answered.
class Responses {
 public:
  explicit Responses(size_t n) : calls_(n, 0), responses_(n) {}

  AnswerFn done_for(size_t i) {
    return [this, i](TranscriptionResponse r) {
      std::lock_guard lock(mu_);
      if (++calls_[i] == 1) responses_[i] = std::move(r);
      ++answered_;
      cv_.notify_all();
    };
  }
  bool wait_all(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return answered_ >= calls_.size(); });
  }
  bool wait_for(size_t i, std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return calls_[i] > 0; });
  }
  size_t answered() {
    std::lock_guard lock(mu_);
    return answered_;
  }
  int calls(size_t i) {
    std::lock_guard lock(mu_);
    return calls_[i];
  }
  TranscriptionResponse& at(size_t i) { return responses_[i]; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> calls_;
  std::vector<TranscriptionResponse> responses_;
  size_t answered_ = 0;
};

class InferenceCoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    spdlog::set_level(spdlog::level::warn);  // one info line per request would drown the test output
    model_ = asr::AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
    clips_ = testing::testset_clips();
  }
  static void TearDownTestSuite() {
    model_.reset();
    clips_.clear();
  }

  static std::unique_ptr<InferenceCore> make_core(int lanes, BatcherConfig batcher) {
    ModelSpec spec = lane_model(kModelName, lanes, transcriber_runners(model_, 1));
    spec.info.aliases = {"whisper-1", "default"};
    spec.batcher = batcher;
    return std::make_unique<InferenceCore>(std::vector<ModelSpec>{spec});
  }

  static Submission clip_submission(size_t i, const std::string& model = kModelName) {
    Submission s;
    s.id = "req-" + std::to_string(i);
    s.model = model;
    s.audio = PcmAudio{clips_[i % clips_.size()].pcm, 16000};
    return s;
  }

  static std::shared_ptr<const asr::AsrModel> model_;
  static std::vector<Clip> clips_;
};

std::shared_ptr<const asr::AsrModel> InferenceCoreTest::model_;
std::vector<Clip> InferenceCoreTest::clips_;

TEST_F(InferenceCoreTest, ConcurrentRequestsAreEachAnsweredOnceWithTheCliTranscriptInRealBatches) {
  ASSERT_EQ(clips_.size(), 80u);  // the espeak-ng test set
  BatcherConfig batcher;
  batcher.max_batch_size = 8;
  batcher.max_queue_delay = 20ms;
  auto core = make_core(2, batcher);
  EXPECT_TRUE(core->ready());
  ASSERT_EQ(core->models().size(), 1u);
  EXPECT_EQ(core->models()[0].name, kModelName);
  EXPECT_EQ(core->models()[0].executors, 2);
  EXPECT_EQ(core->models()[0].max_batch_size, 8);

  constexpr size_t kRequests = 200, kThreads = 4;
  Responses responses(kRequests);
  std::vector<std::thread> clients;
  for (size_t t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      // By its name and by its aliases alike.
      const char* names[] = {kModelName, "whisper-1", "default"};
      for (size_t i = t; i < kRequests; i += kThreads)
        core->submit(clip_submission(i, names[i % 3]), responses.done_for(i));
    });
  for (auto& c : clients) c.join();
  ASSERT_TRUE(responses.wait_all(120s)) << responses.answered() << " of " << kRequests << " answered";
  core->drain();

  double audio_s = 0, exec_count = 0;
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(responses.calls(i), 1) << i;
    const TranscriptionResponse& r = responses.at(i);
    ASSERT_EQ(r.outcome, Outcome::kOk) << i << ": " << r.message;
    EXPECT_EQ(r.transcript.text, clips_[i % clips_.size()].reference) << "request " << i;
    EXPECT_EQ(r.model, kModelName);
    EXPECT_GE(r.batch_size, 1);
    EXPECT_LE(r.batch_size, 8);
    EXPECT_GT(r.durations.compute_ms, 0);
    EXPECT_GE(r.durations.compute_ms, r.durations.encoder_ms);
    audio_s += static_cast<double>(clips_[i % clips_.size()].pcm.size()) / 16000;
    exec_count += 1.0 / r.batch_size;  // a batch of n contributes n x 1/n = 1
  }

  const std::string text = core->render_metrics();
  const std::map<std::string, std::string> labels = {{"model", kModelName}, {"version", "1"}};
  EXPECT_EQ(metric_value(text, "nv_inference_request_success", labels), 200.0);
  for (const char* reason : {"REJECTED", "CANCELED", "BACKEND", "OTHER"})
    EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", kModelName}, {"reason", reason}}), 0.0);
  EXPECT_EQ(metric_value(text, "nv_inference_count", labels), 200.0);
  const double execs = metric_value(text, "nv_inference_exec_count", labels).value_or(0);
  EXPECT_NEAR(execs, exec_count, 1e-6);
  const double mean_batch = 200.0 / execs;
  std::printf("[ measured ] 200 requests in %.0f batches: mean batch size %.2f\n", execs, mean_batch);
  EXPECT_GT(mean_batch, 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_pending_request_count", labels), 0.0);
  EXPECT_NEAR(metric_value(text, "steno_audio_seconds_total", labels).value_or(0), audio_s, 1e-6);
  EXPECT_EQ(metric_value(text, "steno_batch_size_count", labels), execs);
  EXPECT_GT(metric_value(text, "nv_inference_compute_infer_duration_us", labels).value_or(0), 0);
  EXPECT_GT(metric_value(text, "nv_inference_queue_duration_us", labels).value_or(0), 0);
  EXPECT_GT(metric_value(text, "nv_inference_request_duration_us", labels).value_or(0), 0);
  EXPECT_GT(metric_value(text, "steno_stage_duration_us", {{"stage", "encoder"}}).value_or(0), 0);
}

TEST_F(InferenceCoreTest, SpreadBatchesRunOnBothLanesWithTheCliTranscripts) {
  BatcherConfig batcher;
  batcher.max_batch_size = 8;
  batcher.max_queue_delay = std::chrono::hours(1);  // released when full: one batch of 8
  batcher.max_padding_waste = 1;
  batcher.spread_over_idle_executors = true;
  auto core = make_core(2, batcher);
  // The lanes' threads reach the batcher within microseconds of the core's start; wait far longer than that, so
  // that both are waiting when the batch fills.
  std::this_thread::sleep_for(300ms);
  constexpr size_t kRequests = 8;
  Responses responses(kRequests);
  for (size_t i = 0; i < kRequests; ++i) core->submit(clip_submission(i), responses.done_for(i));
  ASSERT_TRUE(responses.wait_all(120s)) << responses.answered() << " of " << kRequests << " answered";
  core->drain();
  for (size_t i = 0; i < kRequests; ++i) {
    EXPECT_EQ(responses.calls(i), 1) << i;
    const TranscriptionResponse& r = responses.at(i);
    ASSERT_EQ(r.outcome, Outcome::kOk) << i << ": " << r.message;
    EXPECT_EQ(r.transcript.text, clips_[i].reference) << "request " << i;
    EXPECT_EQ(r.batch_size, 4) << "request " << i << ": the batch of 8 in two pieces, one per lane";
  }
  const std::map<std::string, std::string> labels = {{"model", kModelName}, {"version", "1"}};
  EXPECT_EQ(metric_value(core->render_metrics(), "nv_inference_exec_count", labels), 2.0);
}

TEST_F(InferenceCoreTest, DrainWhileBusyFinishesQueuedWorkAndRefusesNewWork) {
  BatcherConfig batcher;
  batcher.max_batch_size = 8;
  batcher.max_queue_delay = std::chrono::hours(1);  // only full batches go by themselves; drain must flush the rest
  auto core = make_core(2, batcher);

  constexpr size_t kQueued = 60, kLateCap = 5000;
  Responses responses(kQueued + kLateCap);
  for (size_t i = 0; i < kQueued; ++i) core->submit(clip_submission(i), responses.done_for(i));

  // A client that goes on submitting (short clips) during the drain: each of its requests is served or refused,
  // never lost.
  std::atomic<bool> refused{false};
  std::atomic<size_t> late_sent{0};
  std::thread client([&] {
    for (size_t i = kQueued; i < kQueued + kLateCap && !refused; ++i) {
      Submission s = clip_submission(i);
      std::get<PcmAudio>(s.audio).samples.resize(1600);
      core->submit(std::move(s), [&, inner = responses.done_for(i)](TranscriptionResponse resp) {
        if (resp.outcome == Outcome::kShuttingDown) refused = true;
        inner(std::move(resp));
      });
      ++late_sent;
    }
  });
  while (late_sent < 10) std::this_thread::yield();
  EXPECT_LT(responses.answered(), kQueued);  // requests were still queued or running when the drain began
  core->drain();
  EXPECT_FALSE(core->ready());
  client.join();
  EXPECT_TRUE(refused);

  for (size_t i = 0; i < kQueued; ++i) {
    EXPECT_EQ(responses.calls(i), 1) << i;
    EXPECT_EQ(responses.at(i).outcome, Outcome::kOk) << i << ": " << responses.at(i).message;
    EXPECT_EQ(responses.at(i).transcript.text, clips_[i % clips_.size()].reference) << i;
  }
  for (size_t i = kQueued; i < kQueued + late_sent; ++i) {
    EXPECT_EQ(responses.calls(i), 1) << i;
    const Outcome o = responses.at(i).outcome;
    EXPECT_TRUE(o == Outcome::kOk || o == Outcome::kShuttingDown || o == Outcome::kQueueFull) << outcome_name(o);
  }

  Responses after(1);
  core->submit(clip_submission(0), after.done_for(0));
  ASSERT_EQ(after.calls(0), 1);  // answered inside submit
  EXPECT_EQ(after.at(0).outcome, Outcome::kShuttingDown);
  core->drain();  // idempotent
}

TEST_F(InferenceCoreTest, AnUnknownModelIsRefusedWithoutCreatingItsSeries) {
  auto core = make_core(1, BatcherConfig{});
  Responses responses(3);
  core->submit(clip_submission(0, "whisper-large"), responses.done_for(0));
  ASSERT_EQ(responses.calls(0), 1);
  EXPECT_EQ(responses.at(0).outcome, Outcome::kModelNotFound);
  EXPECT_EQ(responses.at(0).error().http_status(), 404);
  EXPECT_NE(responses.at(0).message.find("whisper-large"), std::string::npos);
  EXPECT_NE(responses.at(0).message.find(kModelName), std::string::npos);  // what is served, aliases too
  EXPECT_NE(responses.at(0).message.find("whisper-1"), std::string::npos);
  EXPECT_EQ(core->render_metrics().find("whisper-large"), std::string::npos);
  // No name: the default model only where the protocol allows it (OpenAI), never for KServe.
  core->submit(clip_submission(1, ""), responses.done_for(1));
  EXPECT_EQ(responses.at(1).outcome, Outcome::kModelNotFound);
  Submission openai = clip_submission(2, "");
  openai.default_model_allowed = true;
  core->submit(std::move(openai), responses.done_for(2));
  ASSERT_TRUE(responses.wait_for(2, 60s));
  EXPECT_EQ(responses.at(2).outcome, Outcome::kOk) << responses.at(2).message;
  EXPECT_EQ(responses.at(2).model, kModelName);
}

TEST_F(InferenceCoreTest, RefusalsOnSubmissionCountInBothStatisticsAlike) {
  auto core = make_core(1, BatcherConfig{});
  Responses responses(4);
  Submission garbage = clip_submission(0);
  const std::string text = "this is not audio at all, just text";
  garbage.audio = EncodedAudio{text};
  core->submit(std::move(garbage), responses.done_for(0));
  Submission too_long = clip_submission(1);
  std::get<PcmAudio>(too_long.audio).samples.assign(16000 * 1300, 0.0f);  // over the 1200 s limit
  core->submit(std::move(too_long), responses.done_for(1));
  Submission refused = clip_submission(2);
  refused.refused = ServeError(Outcome::kInvalidInput, "unknown output 'txet'");
  core->submit(std::move(refused), responses.done_for(2));
  Submission fault = clip_submission(3);
  fault.fault = "explode";  // fault injection is off: the tag is ignored
  core->submit(std::move(fault), responses.done_for(3));
  ASSERT_TRUE(responses.wait_all(60s));
  EXPECT_EQ(responses.at(0).outcome, Outcome::kInvalidInput);
  EXPECT_EQ(responses.at(0).param, "file");
  EXPECT_EQ(responses.at(1).outcome, Outcome::kOverLimit);
  EXPECT_EQ(responses.at(1).error().http_status(), 413);
  EXPECT_NE(responses.at(1).message.find("1200"), std::string::npos) << responses.at(1).message;
  EXPECT_EQ(responses.at(2).outcome, Outcome::kInvalidInput);
  EXPECT_EQ(responses.at(2).message, "unknown output 'txet'");
  EXPECT_EQ(responses.at(3).outcome, Outcome::kOk) << responses.at(3).message;

  const std::string metrics = core->render_metrics();
  const std::vector<ModelStatsSnapshot> stats = core->statistics({kModelName});
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(metric_value(metrics, "nv_inference_request_failure", {{"reason", "OTHER"}}), 3.0);
  EXPECT_EQ(stats[0].fail.count, 3u);
  EXPECT_EQ(metric_value(metrics, "nv_inference_request_success", {{"model", kModelName}}), 1.0);
  EXPECT_EQ(stats[0].success.count, 1u);
}

// ---- stand-in runners: the failure paths without the model ---------------------------------------------

Submission stub_submission(size_t i, size_t samples = 1600) {
  Submission s;
  s.id = "stub-" + std::to_string(i);
  s.model = "stub";
  s.audio = PcmAudio{std::vector<float>(samples, 0.0f), 16000};
  return s;
}

class FnRunner final : public BatchRunner {
 public:
  using Fn = std::function<std::vector<asr::Transcript>(const std::vector<std::span<const float>>&)>;
  explicit FnRunner(Fn fn) : fn_(std::move(fn)) {}
  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings*) override {
    return fn_(clips);
  }

 private:
  Fn fn_;
};

std::unique_ptr<InferenceCore> stub_core(RunnerFactory runners, int lanes = 1) {
  ModelSpec spec = lane_model("stub", lanes, std::move(runners));
  spec.batcher.max_queue_delay = 0us;
  return std::make_unique<InferenceCore>(std::vector<ModelSpec>{spec});
}

TEST(InferenceCoreFailures, AnEngineErrorFailsEveryRequestOfItsBatchOnce) {
  auto core = stub_core([](int) {
    return std::make_unique<FnRunner>([](const auto&) -> std::vector<asr::Transcript> {
      throw Error(ErrorCode::kInternal, "engine exploded");
    });
  });
  Responses responses(5);
  for (size_t i = 0; i < 5; ++i) core->submit(stub_submission(i), responses.done_for(i));
  ASSERT_TRUE(responses.wait_all(30s));
  core->drain();
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(responses.calls(i), 1);
    EXPECT_EQ(responses.at(i).outcome, Outcome::kInternal);
    EXPECT_EQ(responses.at(i).message, "engine exploded");
  }
  const std::string text = core->render_metrics();
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"reason", "BACKEND"}}), 5.0);
  EXPECT_EQ(metric_value(text, "nv_inference_exec_count", {{"model", "stub"}}), 0.0);
}

// Loses its first batch and then cannot start again until healed: a GPU that faulted for good, in the small.
class BrokenAfterFirstBatch final : public Executor {
 public:
  explicit BrokenAfterFirstBatch(std::atomic<bool>& healed) : healed_(healed) {}
  const std::string& name() const override { return name_; }
  std::optional<std::string> start() override {
    if (broken_ && !healed_) return std::string("its device faulted");
    up_ = true;
    return std::nullopt;
  }
  bool up() const override { return up_; }
  BatchRun run(const Batch& batch) override {
    if (!broken_) {
      broken_ = true;
      up_ = false;
      return BatchRun::lost(Loss::kFault, "crashed", "its device faulted");
    }
    return BatchRun::done(std::vector<asr::Transcript>(batch.requests.size()), {});
  }
  void stop() override {}

 private:
  std::string name_ = "broken 0";
  std::atomic<bool>& healed_;
  bool broken_ = false, up_ = false;
};

TEST(InferenceCoreHealth, AModelWithNoExecutorUpIsNotReadyAndAfterTheGraceNotLive) {
  spdlog::set_level(spdlog::level::off);  // the failed starts' error lines are expected
  std::atomic<bool> healed{false};
  ModelSpec spec = lane_model("stub", 1, nullptr);
  spec.batcher.max_queue_delay = 0us;
  spec.policy.restart.backoff_initial = 1ms;
  spec.policy.restart.backoff_max = 5ms;
  spec.executors = [&healed](prometheus::Registry&) {
    std::vector<std::unique_ptr<Executor>> out;
    out.push_back(std::make_unique<BrokenAfterFirstBatch>(healed));
    return out;
  };
  CoreConfig config;
  config.no_executor_grace = 1s;  // long enough that a loaded machine checks live() within it
  InferenceCore core({spec}, config);
  EXPECT_TRUE(core.ready());
  EXPECT_TRUE(core.live());

  Responses responses(1);
  core.submit(stub_submission(0), responses.done_for(0));
  const auto not_ready_by = std::chrono::steady_clock::now() + 10s;
  while (core.ready() && std::chrono::steady_clock::now() < not_ready_by) std::this_thread::sleep_for(1ms);
  EXPECT_FALSE(core.ready());  // its only executor is down: route elsewhere
  EXPECT_TRUE(core.live());    // within the grace
  std::this_thread::sleep_for(1200ms);
  EXPECT_FALSE(core.ready());
  EXPECT_FALSE(core.live());  // down past the grace: restart the process
  EXPECT_EQ(responses.calls(0), 0);  // the replayed request waits, never lost

  healed = true;  // it starts again, runs the request, and the model is healthy
  ASSERT_TRUE(responses.wait_all(30s));
  EXPECT_EQ(responses.at(0).outcome, Outcome::kOk) << responses.at(0).message;
  EXPECT_TRUE(core.ready());
  EXPECT_TRUE(core.live());
  core.drain();
  spdlog::set_level(spdlog::level::info);
}

TEST(InferenceCoreFailures, ALaneThatCannotStartFailsTheStartWithItsReason) {
  // As a worker process that cannot load its model: the server does not start serving with an executor short.
  std::atomic<int> made{0};
  const std::string msg = steno::testing::error_of(
      [&] {
        stub_core(
            [&](int lane) -> std::unique_ptr<BatchRunner> {
              ++made;
              if (lane == 1) throw Error(ErrorCode::kUnavailable, "no GPU");
              return std::make_unique<FnRunner>([](const auto& c) { return std::vector<asr::Transcript>(c.size()); });
            },
            2);
      },
      ErrorCode::kUnavailable);
  EXPECT_NE(msg.find("lane 1 could not start: no GPU"), std::string::npos) << msg;
  EXPECT_EQ(made.load(), 2);  // both lanes tried, side by side
}

TEST(InferenceCoreFailures, RequestsExpireInTheQueueWhileTheLaneIsBusyAndNeverRun) {
  std::promise<void> started, release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> first{true};
  std::atomic<int> clips_run{0};
  auto core = stub_core([&](int) {
    return std::make_unique<FnRunner>([&](const std::vector<std::span<const float>>& clips) {
      if (first.exchange(false)) started.set_value();
      gate.wait();  // the lane stays busy until the test lets it go
      clips_run += static_cast<int>(clips.size());
      return std::vector<asr::Transcript>(clips.size());
    });
  });
  Responses responses(2);
  core->submit(stub_submission(0), responses.done_for(0));
  ASSERT_EQ(started.get_future().wait_for(30s), std::future_status::ready);  // the lane holds request 0
  Submission late = stub_submission(1);
  late.deadline = Clock::now() + 30ms;
  core->submit(std::move(late), responses.done_for(1));
  // The busy lane cannot pull it: the batcher's reaper answers it at its deadline.
  ASSERT_TRUE(responses.wait_for(1, 30s));
  EXPECT_EQ(responses.at(1).outcome, Outcome::kDeadlineExceeded);
  EXPECT_GE(responses.at(1).durations.queue_ms, 25.0);
  release.set_value();
  ASSERT_TRUE(responses.wait_all(30s));
  core->drain();
  EXPECT_EQ(responses.at(0).outcome, Outcome::kOk);
  EXPECT_EQ(clips_run.load(), 1);  // the late request never reached the engine
  EXPECT_EQ(metric_value(core->render_metrics(), "nv_inference_request_failure", {{"reason", "REJECTED"}}), 1.0);
}

TEST(InferenceCoreFailures, RejectsABadConfiguration) {
  EXPECT_THROW(InferenceCore({}, CoreConfig{}), Error);
  ModelSpec no_executors;
  no_executors.info.name = "a";
  no_executors.info.max_audio_seconds = 10;
  EXPECT_THROW(InferenceCore({no_executors}, CoreConfig{}), Error);
  auto fn = [](int) { return std::make_unique<FnRunner>([](const auto& c) { return std::vector<asr::Transcript>(c.size()); }); };
  EXPECT_THROW(InferenceCore({lane_model("a", 1, fn), lane_model("a", 1, fn)}, CoreConfig{}), Error);
  ModelSpec b = lane_model("b", 1, fn);
  b.info.aliases = {"a"};  // an alias may not take another model's name
  EXPECT_THROW(InferenceCore({lane_model("a", 1, fn), b}, CoreConfig{}), Error);
}

}  // namespace
}  // namespace steno::serve
