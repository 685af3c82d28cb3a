#include "steno/serve/executor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "steno/core/error.h"
#include "steno/core/thread_pool.h"

namespace steno::serve {
namespace {

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::max(0.0, std::chrono::duration<double, std::milli>(to - from).count());
}

class TranscriberRunner final : public BatchRunner {
 public:
  TranscriberRunner(std::shared_ptr<const asr::AsrModel> model, int threads, ops::GemmBackend gemm)
      : ctx_(model->device().is_cpu() ? ops::Context::cpu(threads, gemm) : ops::Context::cuda(model->device().index)),
        transcriber_(std::move(model), ctx_) {}

  std::vector<asr::Transcript> run(const std::vector<std::span<const float>>& clips,
                                   asr::StageTimings* timings) override {
    return transcriber_.transcribe(clips, timings);
  }

 private:
  ops::Context ctx_;  // before transcriber_, which keeps a reference to it
  asr::Transcriber transcriber_;
};

// Stands in for a lane whose runner could not be built: its batches fail instead of hanging their clients.
class FailedRunner final : public BatchRunner {
 public:
  explicit FailedRunner(std::string why) : why_(std::move(why)) {}
  std::vector<asr::Transcript> run(const std::vector<std::span<const float>>&, asr::StageTimings*) override {
    throw Error(ErrorCode::kUnavailable, why_);
  }

 private:
  std::string why_;
};

}  // namespace

RunnerFactory transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int threads, ops::GemmBackend gemm) {
  STENO_CHECK(model != nullptr, "transcriber_runners needs a model");
  return [model = std::move(model), threads, gemm](int) -> std::unique_ptr<BatchRunner> {
    return std::make_unique<TranscriberRunner>(model, threads, gemm);
  };
}

int LaneConfig::resolved_threads_per_lane() const {
  if (threads_per_lane > 0) return threads_per_lane;
  return std::max(1, default_num_threads() / std::max(1, lanes));
}

LaneExecutor::LaneExecutor(int lanes, RunnerFactory runners, DynamicBatcher& batcher, RequestCompleter complete,
                           ModelMetrics* metrics)
    : runners_(std::move(runners)), batcher_(batcher), complete_(complete), metrics_(metrics) {
  STENO_CHECK(lanes >= 1, "need at least one lane, got {}", lanes);
  STENO_CHECK(runners_ != nullptr, "LaneExecutor needs a runner factory");
  for (int i = 0; i < lanes; ++i) threads_.emplace_back([this, i] { lane_main(i); });
}

LaneExecutor::~LaneExecutor() {
  batcher_.shutdown();  // without it, lanes would wait for batches forever
  join();
}

void LaneExecutor::join() {
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

void LaneExecutor::lane_main(int lane) {
  std::unique_ptr<BatchRunner> runner;
  try {
    runner = runners_(lane);
  } catch (const std::exception& e) {
    spdlog::error("lane {} could not start: {}", lane, e.what());
    runner = std::make_unique<FailedRunner>(std::string("executor lane could not start: ") + e.what());
  }
  while (std::optional<Batch> batch = batcher_.next_batch()) run_batch(*runner, *batch);
}

void LaneExecutor::run_batch(BatchRunner& runner, Batch& batch) {
  const int n = static_cast<int>(batch.requests.size());
  std::vector<std::span<const float>> clips;
  clips.reserve(batch.requests.size());
  for (const auto& r : batch.requests) clips.emplace_back(r->pcm);

  const Clock::time_point start = Clock::now();
  asr::StageTimings timings;
  std::vector<asr::Transcript> transcripts;
  std::string error;
  try {
    transcripts = runner.run(clips, &timings);
    if (transcripts.size() != clips.size())
      error = fmt::format("internal error: {} transcripts for a batch of {}", transcripts.size(), clips.size());
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception in the executor";
  }
  const Clock::time_point end = Clock::now();

  StageDurations d;
  d.compute_ms = ms_between(start, end);
  d.features_ms = timings.features_ms;
  d.encoder_ms = timings.encoder_ms;
  d.decoder_ms = timings.decoder_ms;
  d.detokenize_ms = timings.detokenize_ms;
  // Batch metrics before the requests': a client that has its answer sees its batch counted.
  if (error.empty() && metrics_) metrics_->batch_executed(n, batch.padding_waste, d);
  if (!error.empty()) spdlog::error("batch of {} failed: {}", n, error);

  for (int i = 0; i < n; ++i) {
    Completion c;
    c.response.durations = d;
    c.response.durations.queue_ms = ms_between(batch.enqueued[i], start);
    c.response.batch_size = n;
    if (error.empty()) {
      c.response.transcript = std::move(transcripts[i]);
    } else {
      c.response.outcome = Outcome::kError;
      c.response.message = error;
    }
    c.request = std::move(batch.requests[i]);
    complete_(std::move(c));
  }
}

}  // namespace steno::serve
