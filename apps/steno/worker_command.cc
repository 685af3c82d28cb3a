// `steno worker`: a worker process of `steno serve --share processes`, started by the server with its end of a
// socket as a descriptor; not meant to be run by hand (hidden from --help). See steno/serve/fleet/worker.h.
#include <memory>

#include "commands.h"
#include "decoding_options.h"
#include "steno/core/error.h"
#include "steno/serve/fleet/worker.h"

namespace steno::cli {
namespace {

struct WorkerArgs {
  int socket_fd = -1;
  int index = 0;
  std::string model;
  std::string device = "cpu";
  std::string dtype = "f32";
  int threads = 0;
  std::string gemm = "onednn";
  int heartbeat_ms = 1000;
  bool export_weights = false;  // --share-weights: make the fleet's shared copy of the weights
  int import_weights_fd = -1;   // --share-weights: map the copy on this descriptor...
  uint64_t weights_bytes = 0;   // ... which holds this many bytes of weights, laid out so
  uint64_t weights_layout = 0;
  double long_audio_seconds = 0;
  int long_attention = 128;
  asr::DecodingRequest decoding;
};

int run_worker(const WorkerArgs& a) {
  serve::fleet::WorkerOptions o;
  o.socket_fd = a.socket_fd;
  o.index = a.index;
  o.model_dir = resolve_model_dir(a.model);
  o.device = parse_device(a.device);
  o.fp8_linears = a.dtype == "fp8";
  o.dtype = o.fp8_linears ? DType::kBF16 : parse_dtype(a.dtype);
  o.threads = a.threads;
  o.gemm = ops::parse_gemm_backend(a.gemm);
  STENO_CHECK(a.heartbeat_ms >= 1, "--heartbeat-ms must be >= 1, got {}", a.heartbeat_ms);
  o.heartbeat = std::chrono::milliseconds(a.heartbeat_ms);
  STENO_CHECK(!a.export_weights || a.import_weights_fd < 0,
              "--export-weights and --import-weights-fd exclude each other: a worker makes the shared weights or "
              "maps them");
  if (a.export_weights) o.weights.role = serve::fleet::WeightsRole::kExport;
  if (a.import_weights_fd >= 0) {
    STENO_CHECK(a.weights_bytes > 0, "--import-weights-fd needs --weights-bytes (the shared copy's size)");
    o.weights.role = serve::fleet::WeightsRole::kImport;
    o.weights.import_fd = a.import_weights_fd;
  }
  o.long_audio_seconds = a.long_audio_seconds;
  o.long_attention = a.long_attention;
  o.decoding = a.decoding;
  o.weights.bytes = a.weights_bytes;
  o.weights.layout = a.weights_layout;
  return serve::fleet::run_worker(o);
}

}  // namespace

Run add_worker_command(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand("worker", "A worker process of `steno serve --share processes` (internal)");
  cmd->group("");  // started by the server only
  cmd->add_option("--socket-fd", args->socket_fd, "Descriptor of this worker's socket to the server")->required();
  cmd->add_option("--index", args->index, "This worker's place in the fleet");
  cmd->add_option("-m,--model", args->model,
                  "Model directory or .nemo checkpoint (default: $STENO_MODEL or the bundled model)");
  cmd->add_option("--device", args->device, "cpu or cuda[:N]");
  cmd->add_option("--dtype", args->dtype, "Compute dtype: f32, f16, bf16 or fp8 (bf16, FP8 linear layers)");
  cmd->add_option("--threads", args->threads, "CPU threads (0: default)");
  cmd->add_option("--gemm", args->gemm, "CPU GEMM library: onednn or openblas");
  cmd->add_option("--heartbeat-ms", args->heartbeat_ms, "Heartbeat interval");
  cmd->add_flag("--export-weights", args->export_weights,
                "Load the weights into device memory shared with the other workers; send its descriptor");
  cmd->add_option("--import-weights-fd", args->import_weights_fd,
                  "Map the shared weights' device memory from this descriptor instead of loading a copy");
  cmd->add_option("--weights-bytes", args->weights_bytes,
                  "The shared copy's size (to map it, or to make a new one of that size without measuring)");
  cmd->add_option("--weights-layout", args->weights_layout,
                  "The shared copy's identity (program, model files, dtype), which this worker's must equal");
  cmd->add_option("--long-audio-seconds", args->long_audio_seconds,
                  "Audio longer than this runs in the engine's long-form mode (0: never)");
  cmd->add_option("--long-attention", args->long_attention, "The ASR's local attention half-width in long-form mode");
  add_decoding_options(cmd, args->decoding);
  return [args] { return run_worker(*args); };
}

}  // namespace steno::cli
