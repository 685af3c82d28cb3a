// build_server: a ServeConfig turned into the model's executors, the core, and the front ends over it.
#include "steno/serve/server.h"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "model_executors.h"
#include "steno/core/error.h"
#include "steno/vad/vad.h"
#include "serve/fleet/mps_monitor.h"
#include "serve/gpu_metrics.h"
#include "serve/grpc/module.h"
#include "serve/http/server.h"
#include "serve/inference_core.h"

namespace steno::serve {
namespace {

std::chrono::milliseconds seconds_to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// A front end's threads parsing requests and decoding audio: what a GPU server's throughput of short requests
// is bounded by (a 1-minute WAV takes ~3 ms), so on a machine of many cores more than the two that suffice on a
// small one. Idle, they cost nothing.
int worker_threads_for(const ServeConfig& c) {
  if (c.worker_threads > 0) return c.worker_threads;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

http::ServerOptions http_options(const ServeConfig& c) {
  http::ServerOptions o;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.io_threads = c.io_threads;
  o.worker_threads = worker_threads_for(c);
  o.max_body_bytes = static_cast<size_t>(c.max_body_mb * 1024 * 1024);
  o.max_upload_bytes = static_cast<size_t>(c.max_upload_mb * 1024 * 1024);
  o.upload_buffer_bytes = static_cast<size_t>(c.upload_buffer_mb * 1024 * 1024);
  o.upload_dir = c.upload_dir;
  o.read_timeout = seconds_to_ms(c.read_timeout_s);
  o.idle_timeout = seconds_to_ms(c.idle_timeout_s);
  o.drain_timeout = seconds_to_ms(c.drain_timeout_s);
  o.api_key = c.api_key;
  return o;
}

rpc::GrpcServerOptions grpc_options(const ServeConfig& c) {
  rpc::GrpcServerOptions o;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.grpc_port);
  o.worker_threads = worker_threads_for(c);
  o.max_message_bytes = static_cast<size_t>(c.max_body_mb * 1024 * 1024);  // gRPC holds a message whole
  o.api_key = c.api_key;
  o.drain_timeout = seconds_to_ms(c.drain_timeout_s);
  return o;
}

const char* executor_noun(ShareMode mode) {
  switch (mode) {
    case ShareMode::kLanes: return "lane(s)";
    case ShareMode::kProcesses: return "worker process(es)";
    case ShareMode::kMps: return "worker process(es) under MPS";
    case ShareMode::kGreen: return "green-context lane(s)";
  }
  return "executor(s)";
}

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(const ServeConfig& config) : config_(config) {
    validate(config_);
    if (config_.grpc_port != 0) {  // before the model loads: a server that cannot serve gRPC fails at once
      try {
        rpc::require_grpc_module();
      } catch (const Error& e) {
        fail(e.code(), "--grpc-port {}: {}", config_.grpc_port, e.what());
      }
    }
    spdlog::info("settings:\n{}", describe(config_));
    BuiltModel model = build_model(config_);
    mps_ = model.mps;
    std::vector<std::string> gpus;  // the diarizer runs on the model's devices
    for (const DeviceGroup& g : model.devices) gpus.push_back(g.gpu_uuid);
    CoreConfig core;
    core.enable_fault_injection = config_.enable_fault_injection;
    core.vad_mode = vad::parse_vad_mode(config_.model.vad);
    if (core.vad_mode != vad::VadMode::kOff)  // loaded now: a missing model fails the start, not a request
      core.vad = std::make_shared<const vad::SpeechDetector>(vad::default_vad_dir());
    std::vector<ModelSpec> specs;
    specs.push_back(std::move(model.spec));
    if (!config_.diarizer.dir.empty()) specs.push_back(build_diarizer(config_, model));
    core_ = std::make_unique<InferenceCore>(std::move(specs), core);
    if (mps_)  // after the core: it publishes into the core's registry
      monitor_ = std::make_unique<fleet::MpsMonitor>([mps = mps_] { return mps->status(); }, *core_->registry());
    gpu_metrics_ = GpuMetrics::start(gpus, *core_->registry());
    http_ = std::make_unique<http::HttpServer>(http_options(config_), *core_);
    if (config_.grpc_port != 0) grpc_ = rpc::open_grpc_front_end(grpc_options(config_), *core_);
  }

  ~ServerImpl() override { stop(); }

  void start() override {
    http_->start();
    if (grpc_) grpc_->start();
  }

  void stop() override {
    if (stopped_.exchange(true)) return;
    // Both front ends stop taking requests and answer those in flight, side by side.
    auto grpc_stopped = std::async(std::launch::async, [this] {
      if (grpc_) grpc_->stop();
    });
    http_->stop();
    grpc_stopped.get();
    core_->drain();  // anything still queued or running (normally nothing by now)
  }

  uint16_t http_port() const override { return http_->port(); }
  uint16_t grpc_port() const override { return grpc_ ? grpc_->port() : 0; }
  TranscriptionService& service() override { return *core_; }

  std::string banner() const override {
    const ModelConfig& m = config_.model;
    const ModelInfo info = core_->models().front();
    return fmt::format("serving model '{}' ({}) on http://{}:{}{}{}; {} {} on {} ({}), max batch {}{}", info.name,
                       m.dir, config_.host, http_port(),
                       grpc_ ? fmt::format(" and grpc://{}:{}", config_.host, grpc_port()) : "",
                       config_.api_key.empty() ? "" : " (API key required)", info.executors,
                       executor_noun(m.share), info.device, m.fp8_linears() ? "fp8" : dtype_name(m.compute_dtype()),
                       info.max_batch_size,
                       config_.enable_fault_injection ? "; FAULT INJECTION ENABLED (tests only)" : "");
  }

 private:
  ServeConfig config_;
  // Declaration order is destruction order in reverse: the front ends go first, the MPS daemon last.
  std::shared_ptr<fleet::MpsDaemon> mps_;
  std::unique_ptr<InferenceCore> core_;
  std::unique_ptr<fleet::MpsMonitor> monitor_;
  std::unique_ptr<GpuMetrics> gpu_metrics_;
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<rpc::GrpcFrontEnd> grpc_;
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::unique_ptr<Server> build_server(const ServeConfig& config) { return std::make_unique<ServerImpl>(config); }

}  // namespace steno::serve
