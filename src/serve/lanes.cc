#include "serve/lanes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "core/cuda_fault.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "steno/core/thread_pool.h"

namespace steno::serve {
namespace {

class TranscriberRunner final : public BatchRunner {
 public:
  TranscriberRunner(std::shared_ptr<const asr::AsrModel> model, ops::Context ctx, LongForm long_form = {},
                    std::optional<asr::BeamOptions> beam = std::nullopt)
      : ctx_(std::move(ctx)), transcriber_(std::move(model), ctx_), long_form_(long_form) {
    if (long_form_.from_seconds > 0) transcriber_.set_long_form(long_form_.from_seconds, long_form_.window);
    transcriber_.set_beam(std::move(beam));
  }

  // Long clips run one at a time (local attention), the rest as one batch: a short clip is never padded to an
  // hour, and its transcript is what it was without the long one beside it.
  BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings* timings) override {
    const int rate = transcriber_.model().sample_rate();
    std::vector<size_t> short_ones;
    for (size_t i = 0; i < clips.size(); ++i)
      if (!long_form_.applies(clips[i].size(), rate)) short_ones.push_back(i);
    if (short_ones.size() == clips.size()) return transcriber_.transcribe(clips, timings);
    std::vector<asr::Transcript> out(clips.size());
    asr::StageTimings total, one;
    std::vector<std::span<const float>> batch;
    for (size_t i : short_ones) batch.push_back(clips[i]);
    if (!batch.empty()) {
      std::vector<asr::Transcript> got = transcriber_.transcribe(batch, &one);
      total += one;
      for (size_t j = 0; j < short_ones.size(); ++j) out[short_ones[j]] = std::move(got[j]);
    }
    for (size_t i = 0; i < clips.size(); ++i) {
      if (!long_form_.applies(clips[i].size(), rate)) continue;
      out[i] = std::move(transcriber_.transcribe({clips[i]}, &one).front());
      total += one;
    }
    if (timings) *timings = total;
    return out;
  }

  void release_cached_memory() override {
    if (auto* pool = dynamic_cast<steno::cuda::DeviceAllocator*>(&ctx_.allocator())) pool->trim();
  }

 private:
  ops::Context ctx_;  // before transcriber_, which keeps a reference to it
  asr::Transcriber transcriber_;
  LongForm long_form_;
};

}  // namespace

RunnerFactory transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int threads, ops::GemmBackend gemm,
                                  LongForm long_form, std::optional<asr::BeamOptions> beam) {
  STENO_CHECK(model != nullptr, "transcriber_runners needs a model");
  return [model = std::move(model), threads, gemm, long_form, beam](int) -> std::unique_ptr<BatchRunner> {
    const Device device = model->device();
    return std::make_unique<TranscriberRunner>(
        model, device.is_cpu() ? ops::Context::cpu(threads, gemm) : ops::Context::cuda(device.index), long_form,
        beam);
  };
}

RunnerFactory green_transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int sms_per_lane,
                                        GreenLanes lanes, std::optional<asr::BeamOptions> beam) {
  STENO_CHECK(model != nullptr, "green_transcriber_runners needs a model");
  const Device device = model->device();
  return green_runners(device, sms_per_lane, std::move(lanes),
                       [model = std::move(model), beam](ops::Context ctx) -> std::unique_ptr<BatchRunner> {
                         return std::make_unique<TranscriberRunner>(model, std::move(ctx), LongForm{}, beam);
                       });
}

RunnerFactory green_runners(Device on, int sms_per_lane, GreenLanes lanes,
                            std::function<std::unique_ptr<BatchRunner>(ops::Context)> make) {
  if (!steno::cuda::built())
    fail(ErrorCode::kUnavailable, "--share green puts lanes on CUDA green contexts, but this steno was built "
         "without CUDA (configure with -DSTENO_WITH_CUDA=ON on a machine with the CUDA toolkit)");
  if (steno::cuda::device_count() == 0)
    fail(ErrorCode::kUnavailable, "--share green puts lanes on CUDA green contexts, but no CUDA GPU is visible "
         "(no NVIDIA driver or device): use --share lanes on the CPU");
  STENO_CHECK(!on.is_cpu(), "--share green runs lanes on a GPU's green contexts: load the model on "
              "cuda (--device cuda), not {}", on.str());
  const int device = on.index;
  const steno::cuda::SmPartitioning sms = steno::cuda::sm_partitioning(device);  // kUnavailable without support
  STENO_CHECK(sms_per_lane >= sms.min_partition && sms_per_lane <= sms.sms && sms.alignment > 0 &&
                  sms_per_lane % sms.alignment == 0,
              "{} SMs per lane is not a green context size of cuda:{}: use a multiple of {} from {} to {}",
              sms_per_lane, device, sms.alignment, std::max(sms.min_partition, sms.alignment), sms.sms);
  // Every lane gets its own SMs: the partition is split once into disjoint groups (4 of 32 on an H200's 132), and
  // lane i takes group i. Green contexts made one at a time would all be the device's first SMs, so four lanes
  // would share a quarter of the GPU. Lanes beyond the groups wrap around and share, with a warning.
  std::shared_ptr<steno::cuda::GreenPartition> partition =
      lanes.partition ? lanes.partition : std::make_shared<steno::cuda::GreenPartition>(device);
  STENO_CHECK(partition->device() == device, "green lanes on cuda:{} given a partition of cuda:{}", device,
              partition->device());
  const int fit = partition->sms_left() / sms_per_lane;
  if (fit == 0)
    fail(ErrorCode::kUnavailable, "green lanes of {} SMs: only {} of cuda:{}'s {} SMs are not already given to other "
         "green lanes (lower --green-sms or --diarizer-green-sms)", sms_per_lane, partition->sms_left(), device,
         sms.sms);
  auto groups = std::make_shared<std::vector<steno::cuda::GreenContext>>(
      partition->carve(sms_per_lane, lanes.count > 0 ? std::min(lanes.count, fit) : fit));
  return [make = std::move(make), device, sms, groups](int lane) -> std::unique_ptr<BatchRunner> {
    const auto& green = (*groups)[static_cast<size_t>(lane) % groups->size()];
    spdlog::info("lane {}: green context {} of {} ({} SMs) on cuda:{} (of {})", lane,
                 static_cast<size_t>(lane) % groups->size(), groups->size(), green.sm_count(), device, sms.sms);
    if (static_cast<size_t>(lane) == groups->size())
      spdlog::warn("more lanes than the {} disjoint groups of {} SMs that cuda:{} holds: lanes from {} on share SMs "
                   "with earlier ones", groups->size(), green.sm_count(), device, lane);
    return make(ops::Context::cuda(green.make_stream()));
  };
}

int threads_per_executor(int executors, int threads) {
  if (threads > 0) return threads;
  return std::max(1, default_num_threads() / std::max(1, executors));
}

LaneExecutor::LaneExecutor(int index, RunnerFactory runners, Device device, OnDeviceFault on_fault)
    : index_(index),
      name_(fmt::format("lane {}", index)),
      runners_(std::move(runners)),
      device_(device),
      on_fault_(on_fault) {
  STENO_CHECK(runners_ != nullptr, "a lane needs a runner factory");
}

std::string LaneExecutor::device_fault() const {
  return device_.is_cpu() ? std::string() : steno::cuda::device_fault(device_.index);
}

std::optional<std::string> LaneExecutor::start() {
  if (faulted_) {
    const std::string fault = device_fault();
    if (!fault.empty())
      return fmt::format("{} faulted ({}): CUDA gives a working context on it only to a new process; the model's "
                         "other devices go on serving",
                         device_.str(), fault);
    faulted_ = false;
  }
  try {
    runner_ = runners_(index_);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!runner_) return std::string("its runner factory made no runner");
  return std::nullopt;
}

BatchRun LaneExecutor::run(const Batch& batch) {
  std::vector<std::span<const float>> clips;
  clips.reserve(batch.requests.size());
  for (const auto& r : batch.requests) clips.emplace_back(r->pcm);
  try {
    asr::StageTimings timings;
    BatchOutput out = runner_->run(clips, &timings);
    if (!out.diarizations.empty()) return BatchRun::diarized(std::move(out.diarizations), timings);
    return BatchRun::done(std::move(out.transcripts), timings);
  } catch (const Error& e) {
    // Out of memory is the pool's to handle; any other error may be the device's sticky fault.
    if (on_fault_ == OnDeviceFault::kTakeOut && e.code() != ErrorCode::kResourceExhausted)
      if (const std::string fault = device_fault(); !fault.empty()) {
        spdlog::error("{}: {} faulted ({}); taking this lane out, its batch goes to the other devices", name_,
                      device_.str(), fault);
        faulted_ = true;
        return BatchRun::lost(Loss::kFault, "crashed", fmt::format("{} faulted: {}", device_.str(), fault));
      }
    return BatchRun::failed(e.code(), e.what());
  } catch (const std::exception& e) {
    return BatchRun::failed(ErrorCode::kInternal, e.what());
  } catch (...) {
    return BatchRun::failed(ErrorCode::kInternal, "unknown exception in the executor");
  }
}

void LaneExecutor::release_cached_memory() {
  if (runner_) runner_->release_cached_memory();
}

std::vector<std::unique_ptr<Executor>> lane_executors(int count, const RunnerFactory& runners, Device device,
                                                      OnDeviceFault on_fault) {
  STENO_CHECK(count >= 1, "need at least one lane, got {}", count);
  std::vector<std::unique_ptr<Executor>> out;
  for (int i = 0; i < count; ++i) out.push_back(std::make_unique<LaneExecutor>(i, runners, device, on_fault));
  return out;
}

}  // namespace steno::serve
