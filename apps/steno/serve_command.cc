// `steno serve`: the HTTP server (OpenAI /v1 and KServe v2) over the inference core (dynamic batcher + lanes).
// Settings come from --config FILE.json, then $STENO_API_KEY, then flags (each layer overrides the one before).
// SIGTERM or SIGINT: stop accepting, answer the requests in flight, drain the core, exit 0.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include "commands.h"
#include "steno/asr/model.h"
#include "steno/core/error.h"
#include "steno/ops/context.h"
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

int run_serve(const ServeCommand& command) {
  const ServeConfig config = command.resolve();
  const sigset_t stop_signals = block_stop_signals();

  const std::string model_dir = config.model.empty() ? default_model_dir() : config.model;
  serve::ModelSpec spec;
  spec.name = served_name(config, model_dir);
  spec.model = asr::AsrModel::load(model_dir);
  serve::CoreConfig core_config;
  core_config.batcher.max_batch_size = config.max_batch;
  core_config.batcher.max_queue_delay =
      std::chrono::microseconds(static_cast<int64_t>(config.max_queue_delay_ms * 1000.0));
  core_config.batcher.max_queue_size = static_cast<size_t>(config.max_queue_size);
  core_config.lanes.lanes = config.lanes;
  core_config.lanes.threads_per_lane = config.threads_per_lane;
  core_config.lanes.gemm = ops::parse_gemm_backend(config.gemm);
  std::vector<serve::ModelSpec> models;
  models.push_back(std::move(spec));
  serve::InferenceCore core(std::move(models), core_config);

  serve::http::HttpServer server(serve::http::to_server_options(config), core);
  server.start();
  std::fprintf(stderr, "steno: serving model '%s' (%s) on http://%s:%u%s; %d lane(s), max batch %d\n",
               core.models().front().c_str(), model_dir.c_str(), config.host.c_str(), server.port(),
               config.api_key.empty() ? "" : " (API key required)", config.lanes, config.max_batch);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "steno: %s received; finishing the requests in flight\n",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  server.stop();  // no new requests; in-flight ones answered (up to drain_timeout_s)
  core.drain();   // anything still queued or running (normally nothing by now)
  std::fprintf(stderr, "steno: stopped\n");
  return 0;
}

}  // namespace

Run add_serve_command(CLI::App& app) {
  auto command = std::make_shared<ServeCommand>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the OpenAI transcription API and KServe v2 over HTTP");
  ServeCommand& c = *command;
  cmd->add_option("-c,--config", c.config_file, "JSON file of settings (keys: the long flag names, '_' for '-')");
  c.add(cmd, "--host", &ServeConfig::host, "Address to listen on (default 127.0.0.1; any other needs --api-key)");
  c.add(cmd, "-p,--port", &ServeConfig::port, "Port (default 8000; 0 picks a free one)");
  c.add(cmd, "-m,--model", &ServeConfig::model, "Model directory (default: $STENO_MODEL or the bundled model)");
  c.add(cmd, "--model-name", &ServeConfig::model_name, "Name clients use for the model (default: directory name)");
  c.add(cmd, "--api-key", &ServeConfig::api_key,
        "Require 'Authorization: Bearer KEY' (also $STENO_API_KEY, which keeps it out of `ps`)");
  c.add(cmd, "--max-body-mb", &ServeConfig::max_body_mb, "Largest request body in MiB (default 64)");
  c.add(cmd, "--max-audio-seconds", &ServeConfig::max_audio_seconds, "Longest audio accepted (default 1200)");
  c.add(cmd, "--lanes", &ServeConfig::lanes, "Executor lanes (default 1)");
  c.add(cmd, "--threads-per-lane", &ServeConfig::threads_per_lane, "CPU threads per lane (default: shared out)");
  c.add(cmd, "--max-batch", &ServeConfig::max_batch, "Largest batch (default 16)");
  c.add(cmd, "--max-queue-delay-ms", &ServeConfig::max_queue_delay_ms,
        "How long a request may wait for a fuller batch (default 10)");
  c.add(cmd, "--max-queue-size", &ServeConfig::max_queue_size, "Queued requests before 429 (default 1024)");
  c.add(cmd, "--gemm", &ServeConfig::gemm, "CPU GEMM library: onednn or openblas");
  c.add(cmd, "--io-threads", &ServeConfig::io_threads, "HTTP I/O threads (default 2)");
  c.add(cmd, "--worker-threads", &ServeConfig::worker_threads, "Threads decoding uploads (default 2)");
  c.add(cmd, "--read-timeout-s", &ServeConfig::read_timeout_s, "A request must arrive within this (default 30)");
  return [command] { return run_serve(*command); };
}

}  // namespace steno::cli
