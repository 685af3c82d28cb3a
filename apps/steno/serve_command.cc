// `steno serve`: the HTTP server (OpenAI /v1 and KServe v2) and, with --grpc-port, KServe v2 over gRPC, both over
// one inference core (dynamic batcher + executors: lanes, or worker processes with --share processes) and one
// table of KServe statistics.
// Settings come from --config FILE.json, then $STENO_API_KEY, then flags (each layer overrides the one before).
// SIGTERM or SIGINT: both front ends stop accepting and answer the requests in flight, the core drains, exit 0.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <vector>

#include "commands.h"
#include "steno/asr/model.h"
#include "steno/core/error.h"
#include "steno/ops/context.h"
#include "steno/serve/executor.h"
#include "steno/serve/fleet/mps.h"
#include "steno/serve/fleet/mps_monitor.h"
#include "steno/serve/frontend/model_stats.h"
#include "steno/serve/grpc/server.h"
#include "steno/serve/http/serve_config.h"
#include "steno/serve/http/server.h"
#include "steno/serve/inference_core.h"

namespace steno::cli {
namespace {

using serve::http::ServeConfig;

struct ServeCommand {
  std::string config_file;
  ServeConfig flags;  // values of the flags given on the command line
  std::vector<std::pair<CLI::Option*, std::function<void(ServeConfig&)>>> given;  // flag -> copy into the config

  template <typename T>
  void add(CLI::App* cmd, const std::string& name, T ServeConfig::*field, const std::string& help) {
    CLI::Option* opt = cmd->add_option(name, flags.*field, help);
    given.emplace_back(opt, [this, field](ServeConfig& c) { c.*field = flags.*field; });
  }
  void add_flag(CLI::App* cmd, const std::string& name, bool ServeConfig::*field, const std::string& help) {
    CLI::Option* opt = cmd->add_flag(name, flags.*field, help);
    given.emplace_back(opt, [this, field](ServeConfig& c) { c.*field = flags.*field; });
  }

  ServeConfig resolve() const {
    ServeConfig config;
    if (!config_file.empty()) serve::http::apply_config_file(config, config_file);
    if (const char* key = std::getenv("STENO_API_KEY"); key && *key) config.api_key = key;
    for (const auto& [opt, copy] : given)
      if (opt->count() > 0) copy(config);
    serve::http::validate(config);
    return config;
  }
};

// Blocks SIGINT and SIGTERM in this thread and in every thread started after it, so that sigwait() below is the
// only place they are delivered (no async-signal-safety concerns in a handler).
sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

std::string served_name(const ServeConfig& config, const std::string& model_dir) {
  if (!config.model_name.empty()) return config.model_name;
  std::filesystem::path p(model_dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

serve::rpc::GrpcServerOptions grpc_options(const ServeConfig& config, const serve::http::ServerOptions& http) {
  serve::rpc::GrpcServerOptions o;
  o.host = config.host;
  o.port = static_cast<uint16_t>(config.grpc_port);
  o.worker_threads = config.worker_threads;
  o.max_message_bytes = http.max_body_bytes;  // one size limit for both protocols
  o.max_audio_seconds = config.max_audio_seconds;
  o.api_key = config.api_key;
  o.drain_timeout = http.drain_timeout;
  o.stats = http.stats;
  return o;
}

// Each connection holds a file descriptor; the usual soft limit (1,024) is far below what a server with
// thousands of clients needs, while the hard limit is usually generous. Raise the soft limit to the hard one.
void raise_descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= lim.rlim_max) return;
  const rlim_t before = lim.rlim_cur;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
    spdlog::info("file descriptor limit raised from {} to {}", before, lim.rlim_cur);
}

// The modes of design.md §4 that `steno serve` does not run yet: refused before anything is loaded, saying why.
// mps and green need a CUDA device; say so before anything starts.
void require_cuda_for_share(const ServeConfig& config) {
  if (!parse_device(config.device).is_cpu()) return;
  if (config.share == "mps")
    fail(ErrorCode::kUnavailable,
         "--share mps runs worker processes under CUDA MPS: it needs a CUDA device (--device cuda[:N]) and "
         "nvidia-cuda-mps-control, and --device is cpu; --share processes runs worker processes without MPS");
  if (config.share == "green")
    fail(ErrorCode::kUnavailable,
         "--share green binds lanes to CUDA green contexts: it needs a CUDA device (--device cuda[:N]) whose driver "
         "supports green contexts (CUDA 12.4 or newer), and --device is cpu; --share lanes runs lanes without them");
}

// The MPS daemon of --share mps: joined (--mps-pipe-dir) or started with private directories (stopped at exit).
std::shared_ptr<serve::fleet::MpsDaemon> open_mps(const ServeConfig& config, const Device& device) {
  serve::fleet::MpsOptions o;
  o.join_existing = !config.mps_pipe_dir.empty();
  o.pipe_dir = config.mps_pipe_dir;
  o.active_thread_percentage = config.mps_thread_percentage;
  o.pinned_device_mem_limit = config.mps_pinned_mem_limit;
  o.device = device.index;
  std::shared_ptr<serve::fleet::MpsDaemon> daemon = serve::fleet::MpsDaemon::open(o);
  spdlog::info("MPS: {}", daemon->status().text);
  return daemon;
}

// The worker processes of --share processes: this binary as `steno worker`, loading the model itself.
serve::fleet::ProcessExecutorConfig worker_fleet(const ServeConfig& config, const std::string& model_dir,
                                                 const asr::ModelOverrides& overrides) {
  serve::fleet::ProcessExecutorConfig f;
  f.workers = config.lanes;
  f.command.model_dir = model_dir;
  f.command.device = overrides.device;
  f.command.dtype = overrides.dtype;
  f.command.threads = serve::LaneConfig{config.lanes, config.threads_per_lane}.resolved_threads_per_lane();
  f.command.gemm = ops::parse_gemm_backend(config.gemm);
  f.heartbeat_interval = std::chrono::milliseconds(config.heartbeat_ms);
  f.batch_timeout_floor = std::chrono::milliseconds(static_cast<int64_t>(config.batch_timeout_s * 1000.0));
  f.share_weights = config.share_weights;
  return f;
}

int run_serve(const ServeCommand& command) {
  const ServeConfig config = command.resolve();
  require_cuda_for_share(config);
  if (config.grpc_port != 0 && !serve::rpc::GrpcServer::available())
    fail(ErrorCode::kUnimplemented,
         "--grpc-port {}: this steno was built without gRPC (CMake STENO_WITH_GRPC=OFF, or gRPC was not found "
         "when it was configured); rebuild with Debian's libgrpc++-dev, protobuf-compiler-grpc and "
         "protobuf-compiler installed, or leave --grpc-port at 0",
         config.grpc_port);
  const sigset_t stop_signals = block_stop_signals();
  raise_descriptor_limit();

  const std::string model_dir = config.model.empty() ? default_model_dir() : config.model;
  serve::ModelSpec spec;
  spec.name = served_name(config, model_dir);
  asr::ModelOverrides overrides;
  overrides.device = parse_device(config.device);
  overrides.dtype = serve::http::compute_dtype(config);
  // Declared before the core, so that the daemon steno started outlives the workers it serves.
  std::shared_ptr<serve::fleet::MpsDaemon> mps;
  if (config.share == "processes" || config.share == "mps") {
    spec.processes = worker_fleet(config, model_dir, overrides);  // the workers load the model, not the server
    if (config.share == "mps") {
      mps = open_mps(config, overrides.device);
      const int workers = config.lanes;
      spec.processes->worker_env = [mps, workers](int worker) { return mps->worker_env(worker, workers); };
      // Under MPS a fatal fault in one client faults every client of the GPU's server: restart them together.
      spec.processes->restart_group_on_fault = true;
    }
  } else {
    spec.model = asr::AsrModel::load(model_dir, overrides);
    if (config.share == "green") spec.runners = serve::green_transcriber_runners(spec.model, config.green_sms);
  }
  serve::CoreConfig core_config;
  core_config.batcher.max_batch_size = config.max_batch;
  core_config.batcher.max_queue_delay =
      std::chrono::microseconds(static_cast<int64_t>(config.max_queue_delay_ms * 1000.0));
  core_config.batcher.max_queue_size = static_cast<size_t>(config.max_queue_size);
  core_config.batcher.spread_over_idle_executors = config.spread_batches;
  core_config.lanes.lanes = config.lanes;
  core_config.lanes.threads_per_lane = config.threads_per_lane;
  core_config.lanes.gemm = ops::parse_gemm_backend(config.gemm);
  std::vector<serve::ModelSpec> models;
  models.push_back(std::move(spec));
  serve::InferenceCore core(std::move(models), core_config);
  std::unique_ptr<serve::fleet::MpsMonitor> mps_monitor;  // after the core: it publishes into the core's registry
  if (mps)
    mps_monitor = std::make_unique<serve::fleet::MpsMonitor>([mps] { return mps->status(); },
                                                             *core.metrics().registry());

  serve::http::ServerOptions http_options = serve::http::to_server_options(config);
  http_options.stats = std::make_shared<serve::ModelStats>();  // one table for HTTP and gRPC
  serve::http::HttpServer server(http_options, core);
  server.start();
  std::unique_ptr<serve::rpc::GrpcServer> grpc;
  std::string grpc_note;
  if (config.grpc_port != 0) {
    grpc = std::make_unique<serve::rpc::GrpcServer>(grpc_options(config, http_options), core);
    grpc->start();
    grpc_note = " and grpc://" + config.host + ":" + std::to_string(grpc->port());
  }
  const char* executors = config.share == "processes" ? "worker process(es)"
                          : config.share == "mps"     ? "worker process(es) under MPS"
                          : config.share == "green"   ? "green-context lane(s)"
                                                      : "lane(s)";
  std::fprintf(stderr, "steno: serving model '%s' (%s) on http://%s:%u%s%s; %d %s on %s (%s), max batch %d%s\n",
               core.models().front().c_str(), model_dir.c_str(), config.host.c_str(), server.port(),
               grpc_note.c_str(), config.api_key.empty() ? "" : " (API key required)", config.lanes,
               executors, overrides.device.str().c_str(),
               dtype_name(overrides.dtype), config.max_batch,
               config.enable_fault_injection ? "; FAULT INJECTION ENABLED (tests only)" : "");

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "steno: %s received; finishing the requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  // Both front ends stop taking requests and answer those in flight (up to drain_timeout_s), side by side.
  auto grpc_stopped = std::async(std::launch::async, [&grpc] {
    if (grpc) grpc->stop();
  });
  server.stop();
  grpc_stopped.get();
  core.drain();  // anything still queued or running (normally nothing by now)
  std::fprintf(stderr, "steno: stopped\n");
  return 0;
}

}  // namespace

Run add_serve_command(CLI::App& app) {
  auto command = std::make_shared<ServeCommand>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve the OpenAI transcription API and KServe v2 over HTTP (and gRPC)");
  ServeCommand& c = *command;
  cmd->add_option("-c,--config", c.config_file, "JSON file of settings (keys: the long flag names, '_' for '-')");
  c.add(cmd, "--host", &ServeConfig::host, "Address to listen on (default 127.0.0.1; any other needs --api-key)");
  c.add(cmd, "-p,--port", &ServeConfig::port, "Port (default 8000; 0 picks a free one)");
  c.add(cmd, "--grpc-port", &ServeConfig::grpc_port,
        "Also serve KServe v2 over gRPC on this port (default 0: off; Triton's is 8001)");
  c.add(cmd, "-m,--model", &ServeConfig::model, "Model directory (default: $STENO_MODEL or the bundled model)");
  c.add(cmd, "--model-name", &ServeConfig::model_name, "Name clients use for the model (default: directory name)");
  c.add(cmd, "--api-key", &ServeConfig::api_key,
        "Require 'Authorization: Bearer KEY' (also $STENO_API_KEY, which keeps it out of `ps`)");
  c.add(cmd, "--max-body-mb", &ServeConfig::max_body_mb, "Largest request body in MiB (default 64)");
  c.add(cmd, "--max-audio-seconds", &ServeConfig::max_audio_seconds, "Longest audio accepted (default 1200)");
  c.add(cmd, "--share", &ServeConfig::share,
        "How executors share the device: lanes (threads, default), processes (worker processes), mps, green");
  c.add(cmd, "--lanes,--executors", &ServeConfig::lanes, "Executors: lanes or worker processes (default 1)");
  c.add(cmd, "--threads-per-lane", &ServeConfig::threads_per_lane,
        "CPU threads per executor (default: the machine's shared out)");
  c.add(cmd, "--heartbeat-ms", &ServeConfig::heartbeat_ms,
        "Worker processes: heartbeat interval; 5 missed = hung, killed and restarted (default 1000)");
  c.add(cmd, "--mps-pipe-dir", &ServeConfig::mps_pipe_dir,
        "--share mps: join the MPS daemon on this pipe directory (default: start a private one, stopped at exit)");
  c.add(cmd, "--mps-thread-percentage", &ServeConfig::mps_thread_percentage,
        "--share mps: each worker's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (default 100 / executors)");
  c.add(cmd, "--mps-pinned-mem-limit", &ServeConfig::mps_pinned_mem_limit,
        "--share mps: each worker's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, e.g. 8G or 0=8G (default none)");
  c.add_flag(cmd, "--share-weights", &ServeConfig::share_weights,
             "--share processes|mps on CUDA: the workers map one device copy of the weights (CUDA IPC) instead of "
             "loading one each; where the driver refuses, they load their own and the log says why");
  c.add(cmd, "--green-sms", &ServeConfig::green_sms,
        "--share green: SMs of each lane's green context (a multiple of 8 on Hopper)");
  c.add(cmd, "--batch-timeout-s", &ServeConfig::batch_timeout_s,
        "Worker processes: a batch running longer than max(this, its audio seconds) is hung (default 30)");
  c.add_flag(cmd, "--enable-fault-injection", &ServeConfig::enable_fault_injection,
             "TESTS ONLY: honour the X-Steno-Fault: crash|hang|device-fault|oom request header (worker processes)");
  c.add(cmd, "--max-batch", &ServeConfig::max_batch, "Largest batch (default 16)");
  c.add(cmd, "--max-queue-delay-ms", &ServeConfig::max_queue_delay_ms,
        "How long a request may wait for a fuller batch (default 10)");
  c.add(cmd, "--max-queue-size", &ServeConfig::max_queue_size, "Queued requests before 429 (default 1024)");
  c.add_flag(cmd, "--spread-batches", &ServeConfig::spread_batches,
             "Split a due batch evenly over the executors idle at that moment (each runs a piece side by side) "
             "instead of giving it all to one");
  c.add(cmd, "--gemm", &ServeConfig::gemm, "CPU GEMM library: onednn or openblas");
  c.add(cmd, "--device", &ServeConfig::device, "cpu or cuda[:N]: where the lanes run the model (default cpu)");
  c.add(cmd, "--dtype", &ServeConfig::dtype, "Compute dtype: f32 (CPU); f32, f16 or bf16 (CUDA; default bf16)");
  c.add(cmd, "--io-threads", &ServeConfig::io_threads, "HTTP I/O threads (default 2)");
  c.add(cmd, "--worker-threads", &ServeConfig::worker_threads, "Threads decoding uploads (default 2)");
  c.add(cmd, "--read-timeout-s", &ServeConfig::read_timeout_s, "A request must arrive within this (default 30)");
  return [command] { return run_serve(*command); };
}

}  // namespace steno::cli
