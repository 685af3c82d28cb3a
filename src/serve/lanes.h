// The `lanes` and `green` sharing modes: executors that are threads of the serving process, each running batches
// on its own BatchRunner (its own ops::Context -- CPU threads, a CUDA stream, or a stream of a green context -- and
// Transcriber), all over one shared, read-only AsrModel: one copy of the weights.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/ops/context.h"
#include "serve/executor.h"

namespace steno::cuda {
class GreenPartition;
}  // namespace steno::cuda

namespace steno::diar {
class SortformerModel;  // steno/diar/sortformer_model.h
}  // namespace steno::diar

namespace steno::serve {

// What a runner gives for a batch: one answer per clip, in order -- transcripts from a transcription model,
// diarizations from a diarization model.
struct BatchOutput {
  BatchOutput() = default;
  BatchOutput(std::vector<asr::Transcript> t) : transcripts(std::move(t)) {}  // NOLINT: a transcription's answer
  BatchOutput(std::vector<DiarizationResult> d) : diarizations(std::move(d)) {}  // NOLINT: a diarization's
  std::vector<asr::Transcript> transcripts;
  std::vector<DiarizationResult> diarizations;
};

// Runs one batch on one lane's resources. Used from that lane's thread only.
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  // One answer per clip, in order; `timings` receives the batch's stage timings. May throw; out of memory must be
  // steno::Error with kResourceExhausted (the batch is then retried in smaller pieces).
  virtual BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings* timings) = 0;
  // Gives cached scratch memory back (to the driver or the OS) after running out of memory, so that the smaller
  // retries find it in one piece. Optional.
  virtual void release_cached_memory() {}
};

// When a clip is long (--long-audio-seconds): past from_seconds it runs alone (never padding a batch of short
// clips to its length) in the engine's linear-cost mode: the ASR with local attention of half-width `window`,
// the diarizer streaming. from_seconds 0: off.
struct LongForm {
  double from_seconds = 0;
  int window = 128;
  bool applies(size_t samples, int sample_rate) const {
    return from_seconds > 0 && static_cast<double>(samples) / sample_rate > from_seconds;
  }
};

// Makes a lane's runner; called on the lane's own thread (a CPU context's OpenMP settings are per thread).
using RunnerFactory = std::function<std::unique_ptr<BatchRunner>(int lane)>;

// The Transcriber runner over the shared model, on the model's device: on the CPU, a Context of `threads`
// threads (0 = default) with `gemm`; on CUDA, a Context of its own (its own stream, memory pool and cuBLASLt
// workspace) per lane, so the lanes' batches overlap on the GPU over one copy of the weights.
// `beam`: every lane decodes with beam search (tdt_beam.h; on the host, whatever the model's device), else
// greedily.
RunnerFactory transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int threads,
                                  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn, LongForm long_form = {},
                                  std::optional<asr::BeamOptions> beam = std::nullopt);

// The diarizer's runners (diarizer_lanes.cc): a Sortformer model served by lanes as transcriber_runners serves an
// ASR model; each answer a DiarizationResult after the model's own post-processing.
RunnerFactory diarizer_runners(std::shared_ptr<const diar::SortformerModel> model, int threads,
                               ops::GemmBackend gemm = ops::GemmBackend::kOneDnn, LongForm long_form = {});

// Which SMs a model's green lanes take: `count` disjoint groups (0: as many as fit) carved, when the runners are
// made, from `partition` (null: a partition of the model's device of their own). Two models given one partition
// never run on each other's SMs: the first carves its groups, the second carves from what is left.
struct GreenLanes {
  int count = 0;
  std::shared_ptr<steno::cuda::GreenPartition> partition;
};

// The `green` mode: transcriber_runners on CUDA, each lane's Context on a stream of its own green
// context of `sms_per_lane` SMs (at least the device's minimum partition and a multiple of its alignment: 8 and 8
// on sm_90; at most the device's SMs). Lanes beyond the groups that fit wrap around and share SMs (logged). Throws
// kUnavailable without a CUDA build, GPU or driver support for green contexts, or when not one group fits what is
// left of the partition; kInvalidArgument for a CPU model or a bad SM count. `beam` as for transcriber_runners.
RunnerFactory green_transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int sms_per_lane,
                                        GreenLanes lanes = {}, std::optional<asr::BeamOptions> beam = std::nullopt);
// The same for any runner: lanes on `on`'s green contexts, each runner made by `make` on its lane's context.
RunnerFactory green_runners(Device on, int sms_per_lane, GreenLanes lanes,
                            std::function<std::unique_ptr<BatchRunner>(ops::Context)> make);
// The diarizer's runners on green contexts (diarizer_lanes.cc).
RunnerFactory green_diarizer_runners(std::shared_ptr<const diar::SortformerModel> model, int sms_per_lane,
                                     LongForm long_form = {}, GreenLanes lanes = {});

// CPU threads each of `executors` executors gets: `threads` when > 0, else the machine's threads
// (default_num_threads()) shared out among them (at least 1).
int threads_per_executor(int executors, int threads);

// What a lane does when its CUDA device faults (a kernel's illegal address or trap: sticky, every later call on
// the device fails, and only a new process gets a working context there).
enum class OnDeviceFault {
  kFailBatches,  // the batch fails, and every later one: one device, nowhere else to run them
  kTakeOut,      // the lane is lost (its batch replayed on the model's other devices) and stays down
};

// A lane: an executor in this process that runs batches on the runner `runners` makes for it (on its own thread,
// when it starts) on `device`. A lane that crashes takes the server with it; one whose device faults acts as
// `on_fault` says (its start then fails, naming the fault, as long as the process lives).
class LaneExecutor final : public Executor {
 public:
  LaneExecutor(int index, RunnerFactory runners, Device device = Device::cpu(),
               OnDeviceFault on_fault = OnDeviceFault::kFailBatches);

  const std::string& name() const override { return name_; }
  std::optional<std::string> start() override;
  bool up() const override { return runner_ != nullptr && !faulted_; }
  BatchRun run(const Batch& batch) override;
  void release_cached_memory() override;
  void stop() override {}

 private:
  // Empty while the lane's device works (always on the CPU); else why it does not.
  std::string device_fault() const;

  int index_;
  std::string name_;
  RunnerFactory runners_;
  Device device_;
  OnDeviceFault on_fault_;
  std::unique_ptr<BatchRunner> runner_;
  bool faulted_ = false;  // taken out: its device faulted
};

// `count` lanes over one runner factory (the `lanes` and `green` modes) on `device`.
std::vector<std::unique_ptr<Executor>> lane_executors(int count, const RunnerFactory& runners,
                                                      Device device = Device::cpu(),
                                                      OnDeviceFault on_fault = OnDeviceFault::kFailBatches);

}  // namespace steno::serve
