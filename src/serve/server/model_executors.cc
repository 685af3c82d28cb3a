#include "model_executors.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "steno/asr/model.h"
#include "steno/diar/sortformer_model.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/fleet/fleet_metrics.h"
#include "serve/fleet/worker_executor.h"
#include "serve/frontend/kserve_model.h"
#include "serve/lanes.h"

namespace steno::serve {
namespace {

// mps and green need a CUDA device: say so before anything starts.
void require_cuda_for_share(const ModelConfig& m) {
  if (!m.parsed_device().is_cpu()) return;
  if (m.share == ShareMode::kMps)
    fail(ErrorCode::kUnavailable,
         "--share mps runs worker processes under CUDA MPS: it needs a CUDA device (--device cuda[:N]) and "
         "nvidia-cuda-mps-control, and --device is cpu; --share processes runs worker processes without MPS");
  if (m.share == ShareMode::kGreen)
    fail(ErrorCode::kUnavailable,
         "--share green binds lanes to CUDA green contexts: it needs a CUDA device (--device cuda[:N]) whose driver "
         "supports green contexts (CUDA 12.4 or newer), and --device is cpu; --share lanes runs lanes without them");
}

// The MPS daemon of --share mps: joined (--mps-pipe-dir) or started with private directories (stopped at exit).
std::shared_ptr<fleet::MpsDaemon> open_mps(const ModelConfig& m) {
  fleet::MpsOptions o;
  o.join_existing = !m.mps_pipe_dir.empty();
  o.pipe_dir = m.mps_pipe_dir;
  o.active_thread_percentage = m.mps_thread_percentage;
  o.pinned_device_mem_limit = m.mps_pinned_mem_limit;
  o.device = m.parsed_device().index;
  std::shared_ptr<fleet::MpsDaemon> daemon = fleet::MpsDaemon::open(o);
  spdlog::info("MPS: {}", daemon->status().text);
  return daemon;
}

// The worker processes of --share processes and mps: `steno worker`, loading the model themselves.
fleet::WorkerFleetConfig worker_fleet(const ServeConfig& config) {
  const ModelConfig& m = config.model;
  fleet::WorkerFleetConfig f;
  f.workers = m.executors;
  f.command.executable = config.worker_executable;
  f.command.model_dir = m.dir;
  f.command.device = m.parsed_device();
  f.command.dtype = m.compute_dtype();
  f.command.threads = threads_per_executor(m.executors, m.threads_per_executor);
  f.command.gemm = ops::parse_gemm_backend(m.gemm);
  f.heartbeat_interval = std::chrono::milliseconds(m.heartbeat_ms);
  f.batch_timeout_floor = std::chrono::milliseconds(static_cast<int64_t>(m.batch_timeout_s * 1000.0));
  f.share_weights = m.share_weights;
  f.command.long_audio_seconds = m.long_audio_seconds;
  f.command.long_attention = m.long_attention;
  return f;
}

}  // namespace

std::string served_name(const ModelConfig& m) {
  if (!m.name.empty()) return m.name;
  std::filesystem::path p(m.dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

BuiltModel build_model(const ServeConfig& config) {
  const ModelConfig& m = config.model;
  STENO_CHECK(!m.dir.empty(), "no model directory given");
  require_cuda_for_share(m);
  BuiltModel built;
  ModelSpec& spec = built.spec;
  spec.info.name = served_name(m);
  spec.info.aliases = m.aliases;
  spec.info.platform = kKServePlatform;
  spec.info.on_gpu = !m.parsed_device().is_cpu();
  spec.info.device = m.parsed_device().str();
  spec.info.share = share_mode_name(m.share);
  spec.info.max_audio_seconds = m.max_audio_seconds;
  spec.info.piece_seconds = m.piece_seconds;
  spec.info.pieces_in_flight = m.pieces_in_flight;
  spec.batcher.max_batch_size = m.max_batch;
  spec.batcher.max_queue_delay = std::chrono::microseconds(static_cast<int64_t>(m.max_queue_delay_ms * 1000.0));
  spec.batcher.max_queue_size = static_cast<size_t>(m.max_queue_size);
  spec.batcher.spread_over_idle_executors = m.spread_batches;

  if (uses_worker_processes(m.share)) {
    fleet::WorkerFleetConfig fleet = worker_fleet(config);
    if (m.share == ShareMode::kMps) {
      built.mps = open_mps(m);
      const int workers = m.executors;
      fleet.worker_env = [mps = built.mps, workers](int worker) { return mps->worker_env(worker, workers); };
      // Under MPS a fatal fault in one client faults every client of the GPU's server: restart them together (the
      // diarizer's workers too when they are clients of the same daemon), and only once it takes clients again.
      fleet.restart_group_on_fault = true;
      built.fault_group = std::make_shared<fleet::FaultGroup>([mps = built.mps] { mps->restart(); });
      fleet.fault_group = built.fault_group;
      spec.policy.isolate_suspects = true;  // a poison request's fault faults its neighbours too
      spec.resources = built.mps;  // the daemon outlives the workers it serves
    }
    spec.executors = [fleet, name = spec.info.name, version = spec.info.version](prometheus::Registry& registry) {
      return fleet::worker_executors(fleet,
                                     std::make_unique<fleet::FleetMetrics>(registry, name, version, fleet.workers));
    };
    return built;
  }
  asr::ModelOverrides overrides;
  overrides.device = m.parsed_device();
  overrides.dtype = m.compute_dtype();
  std::shared_ptr<const asr::AsrModel> model = asr::AsrModel::load(m.dir, overrides);
  if (m.share == ShareMode::kGreen) built.green = std::make_shared<steno::cuda::GreenPartition>(model->device().index);
  const RunnerFactory runners =
      m.share == ShareMode::kGreen
          ? green_transcriber_runners(model, m.green_sms, {m.executors, built.green})
          : transcriber_runners(model, threads_per_executor(m.executors, m.threads_per_executor),
                                ops::parse_gemm_backend(m.gemm), LongForm{m.long_audio_seconds, m.long_attention});
  spec.executors = [runners, n = m.executors](prometheus::Registry&) { return lane_executors(n, runners); };
  return built;
}

ModelSpec build_diarizer(const ServeConfig& config, const BuiltModel& asr) {
  const ModelConfig& m = config.model;
  const DiarizerServing& d = config.diarizer;
  STENO_CHECK(!d.dir.empty(), "no diarizer directory given");
  ModelConfig named;
  named.dir = d.dir;
  ModelSpec spec;
  spec.info.name = served_name(named);
  spec.info.aliases = {"diarizer"};
  spec.info.task = "diarization";
  spec.info.platform = "steno_sortformer";
  spec.info.on_gpu = !m.parsed_device().is_cpu();
  spec.info.device = m.parsed_device().str();
  spec.info.share = share_mode_name(d.share);
  spec.info.max_audio_seconds = m.max_audio_seconds;
  spec.batcher.max_batch_size = d.max_batch;
  spec.batcher.max_queue_delay = std::chrono::microseconds(static_cast<int64_t>(m.max_queue_delay_ms * 1000.0));
  spec.batcher.max_queue_size = static_cast<size_t>(m.max_queue_size);
  const LongForm long_form{m.long_audio_seconds, m.long_attention};
  if (uses_worker_processes(d.share)) {  // `steno worker` processes loading the diarizer (worker.cc)
    fleet::WorkerFleetConfig fleet = worker_fleet(config);
    fleet.workers = d.lanes;
    fleet.command.model_dir = d.dir;
    fleet.command.threads = threads_per_executor(d.lanes, m.threads_per_executor);
    fleet.share_weights = false;
    if (d.share == ShareMode::kMps) {  // the case study's recipe: 8 clients at 12 % each
      std::shared_ptr<fleet::MpsDaemon> mps = asr.mps ? asr.mps : open_mps(m);
      fleet.worker_env = [mps, workers = d.lanes](int worker) { return mps->worker_env(worker, workers); };
      fleet.restart_group_on_fault = true;
      fleet.fault_group =
          asr.fault_group ? asr.fault_group : std::make_shared<fleet::FaultGroup>([mps] { mps->restart(); });
      spec.policy.isolate_suspects = true;
      spec.resources = mps;
    }
    spec.executors = [fleet, name = spec.info.name, version = spec.info.version](prometheus::Registry& registry) {
      return fleet::worker_executors(fleet,
                                     std::make_unique<fleet::FleetMetrics>(registry, name, version, fleet.workers));
    };
    return spec;
  }
  auto model = diar::SortformerModel::load(d.dir, {m.parsed_device(), m.compute_dtype()});
  const RunnerFactory runners =
      d.share == ShareMode::kGreen
          ? green_diarizer_runners(std::move(model), d.green_sms, long_form, {d.lanes, asr.green})
          : diarizer_runners(std::move(model), threads_per_executor(d.lanes, m.threads_per_executor),
                             ops::parse_gemm_backend(m.gemm), long_form);
  spec.executors = [runners, n = d.lanes](prometheus::Registry&) { return lane_executors(n, runners); };
  return spec;
}

}  // namespace steno::serve
