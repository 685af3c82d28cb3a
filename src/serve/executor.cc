#include "steno/serve/executor.h"
#include "steno/serve/stage_durations.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/core/thread_pool.h"

namespace steno::serve {
namespace {

class TranscriberRunner final : public BatchRunner {
 public:
  TranscriberRunner(std::shared_ptr<const asr::AsrModel> model, ops::Context ctx)
      : ctx_(std::move(ctx)), transcriber_(std::move(model), ctx_) {}

  std::vector<asr::Transcript> run(const std::vector<std::span<const float>>& clips,
                                   asr::StageTimings* timings) override {
    return transcriber_.transcribe(clips, timings);
  }

  void release_cached_memory() override {
    if (auto* pool = dynamic_cast<steno::cuda::DeviceAllocator*>(&ctx_.allocator())) pool->trim();
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
    const Device device = model->device();
    return std::make_unique<TranscriberRunner>(
        model, device.is_cpu() ? ops::Context::cpu(threads, gemm) : ops::Context::cuda(device.index));
  };
}

RunnerFactory green_transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int sms_per_lane) {
  STENO_CHECK(model != nullptr, "green_transcriber_runners needs a model");
  if (!steno::cuda::built())
    fail(ErrorCode::kUnavailable, "--share green puts lanes on CUDA green contexts, but this steno was built "
         "without CUDA (configure with -DSTENO_WITH_CUDA=ON on a machine with the CUDA toolkit)");
  if (steno::cuda::device_count() == 0)
    fail(ErrorCode::kUnavailable, "--share green puts lanes on CUDA green contexts, but no CUDA GPU is visible "
         "(no NVIDIA driver or device): use --share lanes on the CPU");
  STENO_CHECK(!model->device().is_cpu(), "--share green runs lanes on a GPU's green contexts: load the model on "
              "cuda (--device cuda), not {}", model->device().str());
  const int device = model->device().index;
  const steno::cuda::SmPartitioning sms = steno::cuda::sm_partitioning(device);  // kUnavailable without support
  STENO_CHECK(sms_per_lane >= sms.min_partition && sms_per_lane <= sms.sms && sms.alignment > 0 &&
                  sms_per_lane % sms.alignment == 0,
              "{} SMs per lane is not a green context size of cuda:{}: use a multiple of {} from {} to {}",
              sms_per_lane, device, sms.alignment, std::max(sms.min_partition, sms.alignment), sms.sms);
  // Every lane gets its own SMs: the device is split once into as many disjoint groups as fit (4 of 32 on an
  // H200's 132), and lane i takes group i. Green contexts made one at a time would all be the device's first SMs,
  // so four lanes would share a quarter of the GPU. Lanes beyond the groups wrap around and share, with a warning.
  const int fit = sms.sms / sms_per_lane;
  auto groups = std::make_shared<std::vector<steno::cuda::GreenContext>>(
      steno::cuda::GreenContext::partition(device, sms_per_lane, fit));
  return [model = std::move(model), device, sms, groups](int lane) -> std::unique_ptr<BatchRunner> {
    const auto& green = (*groups)[static_cast<size_t>(lane) % groups->size()];
    spdlog::info("lane {}: green context {} of {} ({} SMs) on cuda:{} (of {})", lane,
                 static_cast<size_t>(lane) % groups->size(), groups->size(), green.sm_count(), device, sms.sms);
    if (static_cast<size_t>(lane) == groups->size())
      spdlog::warn("more lanes than the {} disjoint groups of {} SMs that cuda:{} holds: lanes from {} on share SMs "
                   "with earlier ones", groups->size(), green.sm_count(), device, lane);
    return std::make_unique<TranscriberRunner>(model, ops::Context::cuda(green.make_stream()));
  };
}

int LaneConfig::resolved_threads_per_lane() const {
  if (threads_per_lane > 0) return threads_per_lane;
  return std::max(1, default_num_threads() / std::max(1, lanes));
}

// One lane's runner and the cap on the batches it asks for (OomPolicy). Used from the lane's thread only; the
// cap is published through an atomic for batch_cap().
class LaneExecutor::Lane {
 public:
  Lane(int index, std::unique_ptr<BatchRunner> runner, int max_batch, std::atomic<int>& cap, OomPolicy policy)
      : index_(index), runner_(std::move(runner)), max_batch_(max_batch), cap_(cap), policy_(policy) {}

  BatchRunner& runner() { return *runner_; }
  int cap() const { return cap_.load(std::memory_order_relaxed); }

  // A batch of `n` (> 1) requests ran out of memory: ask for at most the half that is tried next, or for the
  // largest size that ran since the last time (a regrowth probe that failed goes back to where it was).
  void ran_out_of_memory(int n) {
    streak_ = 0;
    int lower = (n + 1) / 2;
    if (largest_ok_ < n) lower = std::max(lower, largest_ok_);
    largest_ok_ = 0;
    if (lower >= cap()) return;
    spdlog::warn("lane {}: out of memory with a batch of {}; asking for batches of at most {} from now on", index_,
                 n, lower);
    cap_.store(lower, std::memory_order_relaxed);
  }

  void succeeded(int n) {
    largest_ok_ = std::max(largest_ok_, n);
    if (cap() >= max_batch_ || ++streak_ < policy_.regrow_after) return;
    streak_ = 0;
    const int grown = std::min(max_batch_, cap() + std::max(1, cap() / 4));
    spdlog::info("lane {}: {} batches without running out of memory; batch cap {} -> {}", index_,
                 policy_.regrow_after, cap(), grown);
    cap_.store(grown, std::memory_order_relaxed);
  }

 private:
  int index_;
  std::unique_ptr<BatchRunner> runner_;
  int max_batch_;
  std::atomic<int>& cap_;
  OomPolicy policy_;
  int streak_ = 0;      // batches run in a row without running out of memory
  int largest_ok_ = 0;  // the largest batch run since the last time it ran out of memory
};

LaneExecutor::LaneExecutor(int lanes, RunnerFactory runners, DynamicBatcher& batcher, RequestCompleter complete,
                           ModelMetrics* metrics, OomPolicy oom)
    : runners_(std::move(runners)), batcher_(batcher), complete_(complete), metrics_(metrics), oom_(oom) {
  STENO_CHECK(lanes >= 1, "need at least one lane, got {}", lanes);
  STENO_CHECK(runners_ != nullptr, "LaneExecutor needs a runner factory");
  STENO_CHECK(oom_.regrow_after >= 1, "OomPolicy::regrow_after must be >= 1, got {}", oom_.regrow_after);
  caps_ = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(lanes));
  for (int i = 0; i < lanes; ++i) caps_[i].store(batcher_.config().max_batch_size);
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

int LaneExecutor::batch_cap(int lane) const {
  STENO_CHECK(lane >= 0 && lane < lanes(), "no lane {} (have {})", lane, lanes());
  return caps_[lane].load(std::memory_order_relaxed);
}

void LaneExecutor::lane_main(int index) {
  std::unique_ptr<BatchRunner> runner;
  try {
    runner = runners_(index);
  } catch (const std::exception& e) {
    spdlog::error("lane {} could not start: {}", index, e.what());
    runner = std::make_unique<FailedRunner>(std::string("executor lane could not start: ") + e.what());
  }
  Lane lane(index, std::move(runner), batcher_.config().max_batch_size, caps_[index], oom_);
  for (;;) {
    DynamicBatcher::Pull pulled = batcher_.pull(lane.cap(), Clock::time_point::max());
    if (pulled.finished) break;
    if (pulled.batch) run_batch(lane, *pulled.batch, Clock::now());
  }
}

bool LaneExecutor::run_batch(Lane& lane, Batch& batch, Clock::time_point start) {
  const int n = static_cast<int>(batch.requests.size());
  std::vector<std::span<const float>> clips;
  clips.reserve(batch.requests.size());
  for (const auto& r : batch.requests) clips.emplace_back(r->pcm);

  const Clock::time_point run_start = Clock::now();
  asr::StageTimings timings;
  std::vector<asr::Transcript> transcripts;
  std::string error;
  bool out_of_memory = false;
  try {
    transcripts = lane.runner().run(clips, &timings);
    if (transcripts.size() != clips.size())
      error = fmt::format("internal error: {} transcripts for a batch of {}", transcripts.size(), clips.size());
  } catch (const Error& e) {
    out_of_memory = e.code() == ErrorCode::kResourceExhausted;
    error = e.what();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown exception in the executor";
  }
  const Clock::time_point end = Clock::now();

  if (out_of_memory) {
    try {
      lane.runner().release_cached_memory();
    } catch (const std::exception& e) {
      spdlog::warn("could not release cached memory after running out: {}", e.what());
    }
    if (n > 1) {
      // Halves, front first: a half that still does not fit is split again, down to single requests.
      Batch front = split_front(batch, static_cast<size_t>((n + 1) / 2));
      const bool front_alone = run_batch(lane, front, start);
      const bool alone = run_batch(lane, batch, start) || front_alone;
      // A request too big to run even alone explains the failure: the clip is the problem, not the batch size.
      if (!alone) lane.ran_out_of_memory(n);
      return alone;
    }
    error = fmt::format("out of memory running this request alone ({:.1f} s of audio): {}",
                        static_cast<double>(clips[0].size()) / kPcmSampleRate, error);
  } else if (error.empty()) {
    lane.succeeded(n);
  }

  const StageDurations d = batch_durations(ms_between(run_start, end), timings);
  if (!error.empty()) {
    spdlog::error("batch of {} failed: {}", n, error);
    transcripts.clear();
  }
  complete_batch(batch, std::move(transcripts), error, d, start, end);
  return out_of_memory;  // only a single request gets here out of memory
}

void LaneExecutor::complete_batch(Batch& batch, std::vector<asr::Transcript> transcripts, const std::string& error,
                                  const StageDurations& d, Clock::time_point start, Clock::time_point end) {
  const int n = static_cast<int>(batch.requests.size());
  // Batch metrics before the requests': a client that has its answer sees its batch counted.
  if (error.empty() && metrics_) metrics_->batch_executed(n, batch.padding_waste, d);
  for (int i = 0; i < n; ++i) {
    Completion c;
    c.response.durations = d;
    c.response.durations.queue_ms = ms_between(batch.enqueued[i], start);
    // From the lane taking the batch: after out-of-memory retries, more than this piece's own run.
    c.response.durations.compute_ms = ms_between(start, end);
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
