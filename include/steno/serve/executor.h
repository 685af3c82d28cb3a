// Executors in the `lanes` mode of design.md §4: N threads in the serving process, each pulling batches from one
// model's DynamicBatcher and running them on its own BatchRunner (its own ops::Context -- CPU threads, or a CUDA
// stream -- and Transcriber), all over one shared, read-only AsrModel -- one copy of the weights.
#pragma once

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
  // One transcript per clip, in order; `timings` receives the batch's stage timings. May throw.
  virtual std::vector<asr::Transcript> run(const std::vector<std::span<const float>>& clips,
                                           asr::StageTimings* timings) = 0;
};

// Makes a lane's runner; called on the lane's own thread (a CPU context's OpenMP settings are per thread).
using RunnerFactory = std::function<std::unique_ptr<BatchRunner>(int lane)>;

// The Transcriber runner over the shared model, on the model's device: on the CPU, a Context of `threads`
// threads (0 = default) with `gemm`; on CUDA, a Context of its own (its own stream, memory pool and cuBLASLt
// workspace) per lane, so the lanes' batches overlap on the GPU over one copy of the weights.
RunnerFactory transcriber_runners(std::shared_ptr<const asr::AsrModel> model, int threads,
                                  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn);

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
               ModelMetrics* metrics);
  ~LaneExecutor();  // shuts the batcher down, lets the lanes finish what is queued, joins them
  LaneExecutor(const LaneExecutor&) = delete;
  LaneExecutor& operator=(const LaneExecutor&) = delete;

  // Waits for every lane to finish. Idempotent.
  void join();
  int lanes() const { return static_cast<int>(threads_.size()); }

 private:
  void lane_main(int lane);
  void run_batch(BatchRunner& runner, Batch& batch);

  RunnerFactory runners_;
  DynamicBatcher& batcher_;
  RequestCompleter complete_;
  ModelMetrics* metrics_;
  std::vector<std::thread> threads_;
};

}  // namespace steno::serve
