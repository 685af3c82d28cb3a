// One executor: a thing that runs batches of one model -- a lane (a thread of this process with its own CUDA
// stream or CPU threads; lanes.h), a green lane (a lane on SMs of its own), or a worker process, plain or an MPS
// client (fleet/worker_executor.h). To the executor pool (executor_pool.h) every kind is the same: it is started,
// given batches, asked about its health while idle, and stopped. Everything the kinds share -- pulling batches,
// completing their requests, the out-of-memory policy, replaying what a lost executor was running, restarting it
// -- happens once, in the pool.
//
// Threading: an executor is used from its own pool thread only (start, run, check_idle, stop), except where a
// method says otherwise.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "steno/asr/transcriber.h"
#include "steno/core/error.h"
#include "serve/batch.h"
#include "steno/serve/service.h"

namespace steno::serve {

// How an executor went away.
enum class Loss {
  kNone,
  kFault,  // it crashed, hung or broke its protocol: the batch it held may be to blame
  kGroup,  // it was taken down because another executor of its group faulted (MPS): its batch is not to blame
};

// How a batch given to an executor ended.
struct BatchRun {
  enum class Status { kDone, kFailed, kLost };
  Status status = Status::kDone;
  std::vector<asr::Transcript> transcripts;  // kDone, transcription models: one per request, in order
  std::vector<DiarizationResult> diarizations;  // kDone, diarization models: one per request, in order
  asr::StageTimings timings;                 // kDone: the engine's stages
  ErrorCode code = ErrorCode::kInternal;     // kFailed: kResourceExhausted means out of memory
  std::string message;                       // kFailed and kLost: what happened
  Loss loss = Loss::kNone;                   // kLost
  std::string how;                           // kLost: "crashed" or "hung", for the client of a poison request

  static BatchRun done(std::vector<asr::Transcript> transcripts, const asr::StageTimings& timings);
  static BatchRun diarized(std::vector<DiarizationResult> diarizations, const asr::StageTimings& timings);
  // Answers for the batch's requests (transcripts or diarizations).
  size_t answers() const { return transcripts.size() + diarizations.size(); }
  static BatchRun failed(ErrorCode code, std::string message);
  static BatchRun lost(Loss loss, std::string how, std::string message);
};

class Executor {
 public:
  virtual ~Executor() = default;

  // "lane 0", "worker 2": for logs.
  virtual const std::string& name() const = 0;
  // The device group it runs on: its index in the model's --device list (device_groups.h); 0 with one device.
  virtual int device_group() const { return 0; }
  // The largest batch it can take (a worker process: what the wire protocol carries).
  virtual int max_batch_size() const { return 1 << 30; }

  // Brings it up: a lane builds its runner (on this thread: a CPU context's OpenMP settings are per thread), a
  // worker process is spawned and waited for until it has loaded its model. nullopt when it is up; otherwise why
  // not, and it stays down (the pool calls again, after a backoff).
  virtual std::optional<std::string> start() = 0;
  virtual bool up() const = 0;

  // Runs a batch; never throws. An executor that is lost while running it is down afterwards.
  virtual BatchRun run(const Batch& batch) = 0;

  // While it waits for work, the pool calls this at least every idle_check_interval(): it looks after the
  // executor (a worker's heartbeats) and says whether it was lost meanwhile (it is then down).
  virtual std::chrono::milliseconds idle_check_interval() const { return std::chrono::milliseconds::max(); }
  virtual Loss check_idle() { return Loss::kNone; }

  // After running out of memory: gives cached scratch memory back (to the driver or the OS), so that the smaller
  // retries find it in one piece. Optional.
  virtual void release_cached_memory() {}

  // Stops it after its last batch (the pool is draining). Idempotent.
  virtual void stop() = 0;
};

}  // namespace steno::serve
