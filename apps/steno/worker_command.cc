// `steno worker`: a worker process of `steno serve --share processes`, started by the server with its end of a
// socket as a descriptor; not meant to be run by hand (hidden from --help). See steno/serve/fleet/worker.h.
#include <memory>

#include "commands.h"
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
};

int run_worker(const WorkerArgs& a) {
  serve::fleet::WorkerOptions o;
  o.socket_fd = a.socket_fd;
  o.index = a.index;
  o.model_dir = a.model.empty() ? default_model_dir() : a.model;
  o.device = parse_device(a.device);
  o.dtype = parse_dtype(a.dtype);
  o.threads = a.threads;
  o.gemm = ops::parse_gemm_backend(a.gemm);
  STENO_CHECK(a.heartbeat_ms >= 1, "--heartbeat-ms must be >= 1, got {}", a.heartbeat_ms);
  o.heartbeat = std::chrono::milliseconds(a.heartbeat_ms);
  return serve::fleet::run_worker(o);
}

}  // namespace

Run add_worker_command(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand("worker", "A worker process of `steno serve --share processes` (internal)");
  cmd->group("");  // started by the server only
  cmd->add_option("--socket-fd", args->socket_fd, "Descriptor of this worker's socket to the server")->required();
  cmd->add_option("--index", args->index, "This worker's place in the fleet");
  cmd->add_option("-m,--model", args->model, "Model directory (default: $STENO_MODEL or the bundled model)");
  cmd->add_option("--device", args->device, "cpu or cuda[:N]");
  cmd->add_option("--dtype", args->dtype, "Compute dtype: f32, f16 or bf16");
  cmd->add_option("--threads", args->threads, "CPU threads (0: default)");
  cmd->add_option("--gemm", args->gemm, "CPU GEMM library: onednn or openblas");
  cmd->add_option("--heartbeat-ms", args->heartbeat_ms, "Heartbeat interval");
  return [args] { return run_worker(*args); };
}

}  // namespace steno::cli
