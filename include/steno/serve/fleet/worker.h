// `steno worker`: one worker process of the fleet (the `processes` and `mps` sharing modes), started by the server
// with its end of a socketpair. It loads the model, says Hello, then runs each RunBatch it receives with the same
// Transcriber runner the lanes use (transcriber_runners, lanes.h) and answers it with the transcripts or the
// error the batch threw. A thread of its own sends a heartbeat with the process's memory every interval, also
// during a batch. It exits when the server closes the socket, and the parent-death signal ends it if the server
// dies first: a worker never outlives its server.
#pragma once

#include <chrono>
#include <string>

#include "steno/asr/tdt_beam.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/ops/context.h"
#include "steno/serve/fleet/shared_weights.h"

namespace steno::serve::fleet {

struct WorkerOptions {
  int socket_fd = -1;  // this worker's end of the socket (inherited from the server)
  int index = 0;       // its place in the fleet, for logs
  std::string model_dir;
  Device device = Device::cpu();
  DType dtype = DType::kF32;
  bool fp8_linears = false;  // the ASR encoder's linear layers in FP8 beside dtype (bf16): --dtype fp8
  int threads = 0;  // CPU threads (0: the machine's)
  ops::GemmBackend gemm = ops::GemmBackend::kOneDnn;
  std::chrono::milliseconds heartbeat{1000};
  WeightsShare weights;  // --share-weights: make the fleet's copy, map it, or (default) load privately
  // Audio longer than this runs in the engine's long-form mode (0: never), as a lane's (serve/lanes.h LongForm):
  // the diarizer streaming, the ASR with local attention of half-width long_attention.
  double long_audio_seconds = 0;
  int long_attention = 128;
  asr::DecodingRequest decoding;  // an ASR model's decoding: greedy, or beam search (with an LM), as lanes do
};

// Serves batches until the server closes the socket (returns 0). A protocol error from the server is logged and
// returns 2. Throws steno::Error when the model cannot be loaded (the server sees the worker exit before Hello).
int run_worker(const WorkerOptions& options);

}  // namespace steno::serve::fleet
