// Executors in the `lanes` and `green` modes of design.md §4: N threads in the serving process, each pulling
// batches from one model's DynamicBatcher and running them on its own BatchRunner (its own ops::Context -- CPU
// threads, a CUDA stream, or a stream of a green context -- and Transcriber), all over one shared, read-only
// AsrModel -- one copy of the weights.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/ops/context.h"
#include "steno/serve/batcher.h"
#include "steno/serve/completer.h"

namespace steno::serve {

// Runs one batch on one lane's resources. Used from that lane's thread only.
class BatchRunner {
 public:
  virtual ~BatchRunner() = default;
  // One transcript per clip, in order; `timings` receives the batch's stage timings. May throw; out of memory
  // must be steno::Error with kResourceExhausted (the lane then retries the batch in smaller pieces).
  virtual std::vector<asr::Transcript> run(const std::vector<std::span<const float>>& clips,
                                           asr::StageTimings* timings) = 0;
  // Gives cached scratch memory back (to the driver or the OS) after running out of memory, so that the smaller
  // retries find it in one piece. Optional.
  virtual void release_cached_memory() {}
};

// Makes a lane's runner; called on the lane's own thread (a CPU context's OpenMP settings are per thread).
using RunnerFactory = std::function<std::unique_ptr<BatchRunner>(int lane)>;

// The Transcriber runner over the shared model, on the model's device: on the CPU, a Context of `threads`
// threads (0 = default) with `gemm`; on CUDA, a Context of its own (its own stream, memory pool and cuBLASLt
// workspace) per lane, so the lanes' batches overlap on the GPU over one copy of the weights.
RunnerFactory transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int threads,
                                  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn);

// The `green` mode of design.md §4: transcriber_runners on CUDA, each lane's Context on a stream of its own green
// context of `sms_per_lane` SMs (at least the device's minimum partition and a multiple of its alignment: 8 and 8
// on sm_90; at most the device's SMs). Lanes x SMs may exceed the device: each partition is carved from the whole
// device, so they then overlap (logged). Throws kUnavailable without a CUDA build, GPU or driver support for green
// contexts, kInvalidArgument for a CPU model or a bad SM count; a lane's green context is made on its thread.
RunnerFactory green_transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int sms_per_lane);

// What a lane does when its runner runs out of memory (kResourceExhausted): it splits the batch in halves and
// runs them, recursively down to single requests (one that still does not fit fails alone, with a message
// saying so), and from then on asks the batcher for batches no larger than the half (or the largest batch that
// ran since it last ran out), so it does not hit the wall on every batch -- unless a request too big even alone
// explains the failure. The need depends on clip lengths, not
// only on the count, so after `regrow_after` batches in a row without running out of memory the cap grows back
// by a quarter (at least 1, up to max_batch_size); a grown cap that runs out goes back to the last size that ran.
struct OomPolicy {
  int regrow_after = 100;
};

struct LaneConfig {
  int lanes = 1;
  int threads_per_lane = 0;  // 0: the machine's threads (default_num_threads()) shared out among the lanes
  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn;
  int resolved_threads_per_lane() const;
};

class LaneExecutor {
 public:
  // Starts `lanes` threads pulling from `batcher` (which must outlive this executor) until it is shut down and
  // empty. Every request of every batch is completed exactly once through `complete`, also when the runner throws
  // (kError with the exception's message).
  LaneExecutor(int lanes, RunnerFactory runners, DynamicBatcher& batcher, RequestCompleter complete,
               ModelMetrics* metrics, OomPolicy oom = {});
  ~LaneExecutor();  // shuts the batcher down, lets the lanes finish what is queued, joins them
  LaneExecutor(const LaneExecutor&) = delete;
  LaneExecutor& operator=(const LaneExecutor&) = delete;

  // Waits for every lane to finish. Idempotent.
  void join();
  int lanes() const { return static_cast<int>(threads_.size()); }
  // The largest batch `lane` asks for now: max_batch_size until it runs out of memory (OomPolicy).
  int batch_cap(int lane) const;

 private:
  class Lane;  // one lane's runner and batch cap (executor.cc)
  void lane_main(int lane);
  // Runs `batch` (part of one taken from the batcher at `start`), splitting it on out-of-memory; completes
  // every request of it exactly once. True when a request of it ran out of memory alone.
  bool run_batch(Lane& lane, Batch& batch, Clock::time_point start);
  // Completes every request of `batch`, which ran from `start` (the lane took it) to `end`; `d` times its last
  // run; `transcripts` is empty when they failed with `error`.
  void complete_batch(Batch& batch, std::vector<asr::Transcript> transcripts, const std::string& error,
                      const StageDurations& d, Clock::time_point start, Clock::time_point end);

  RunnerFactory runners_;
  DynamicBatcher& batcher_;
  RequestCompleter complete_;
  ModelMetrics* metrics_;
  OomPolicy oom_;
  std::unique_ptr<std::atomic<int>[]> caps_;  // per lane, written by the lane, read by batch_cap()
  std::vector<std::thread> threads_;
};

}  // namespace steno::serve
