#include "model_executors.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>

#include "steno/asr/model.h"
#include "steno/diar/sortformer_model.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/device_groups.h"
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
  f.command.fp8_linears = m.fp8_linears();
  f.command.threads = threads_per_executor(m.executors, m.threads_per_executor);
  f.command.gemm = ops::parse_gemm_backend(m.gemm);
  f.heartbeat_interval = std::chrono::milliseconds(m.heartbeat_ms);
  f.batch_timeout_floor = std::chrono::milliseconds(static_cast<int64_t>(m.batch_timeout_s * 1000.0));
  f.share_weights = m.share_weights;
  f.command.long_audio_seconds = m.long_audio_seconds;
  f.command.long_attention = m.long_attention;
  f.command.decoding = m.decoding_request();
  return f;
}

// Makes one device group's executors when the core starts the model.
using ExecutorMaker = std::function<std::vector<std::unique_ptr<Executor>>(prometheus::Registry&)>;

// Every group's executors, in the groups' order, each knowing its group; named after it when there are several.
ExecutorMaker grouped(const std::vector<DeviceGroup>& groups, std::vector<ExecutorMaker> makers) {
  std::vector<std::string> names;
  for (const DeviceGroup& g : groups) names.push_back(groups.size() > 1 ? g.name : "");
  return [names, makers = std::move(makers)](prometheus::Registry& registry) {
    std::vector<std::unique_ptr<Executor>> all;
    for (size_t g = 0; g < makers.size(); ++g)
      for (auto& e : in_device_group(static_cast<int>(g), names[g], makers[g](registry))) all.push_back(std::move(e));
    return all;
  };
}

// The workers that fault together under MPS, by device group: every client of one GPU (a device listed twice is
// one GPU). With one GPU the daemon is restarted once they are all gone, as measured on the H200; with several, a
// fault is contained to the GPU's clients and the daemon takes clients there again once they have all exited
// (NVIDIA's MPS guide, Volta and later), so the other GPUs' workers keep running.
std::vector<std::shared_ptr<fleet::FaultGroup>> mps_fault_groups(const std::vector<DeviceGroup>& groups,
                                                                 const std::shared_ptr<fleet::MpsDaemon>& mps) {
  std::map<int, std::shared_ptr<fleet::FaultGroup>> by_gpu;
  for (const DeviceGroup& g : groups) by_gpu[g.device.index] = nullptr;
  const bool one_gpu = by_gpu.size() == 1;
  for (auto& [index, group] : by_gpu)
    group = std::make_shared<fleet::FaultGroup>(one_gpu ? std::function<void()>([mps] { mps->restart(); })
                                                        : std::function<void()>());
  std::vector<std::shared_ptr<fleet::FaultGroup>> out;
  for (const DeviceGroup& g : groups) out.push_back(by_gpu.at(g.device.index));
  return out;
}

// The green partition of each group's GPU: one per GPU, so that two groups on one GPU never share SMs.
std::vector<std::shared_ptr<steno::cuda::GreenPartition>> green_partitions(const std::vector<DeviceGroup>& groups) {
  std::map<int, std::shared_ptr<steno::cuda::GreenPartition>> by_gpu;
  std::vector<std::shared_ptr<steno::cuda::GreenPartition>> out;
  for (const DeviceGroup& g : groups) {
    auto& p = by_gpu[g.device.index];
    if (!p) p = std::make_shared<steno::cuda::GreenPartition>(g.device.index);
    out.push_back(p);
  }
  return out;
}

// A lane whose device faults is taken out where the model has other devices to run its batch on.
OnDeviceFault on_device_fault(const std::vector<DeviceGroup>& groups) {
  return groups.size() > 1 ? OnDeviceFault::kTakeOut : OnDeviceFault::kFailBatches;
}

// The executors of one device group's worker processes: `fleet` (the model's settings) on the group's device, under
// `mps` (null: none) as clients faulting with `fault_group`; the fleet's series labelled with the group.
ExecutorMaker worker_maker(fleet::WorkerFleetConfig fleet, const ModelInfo& info, const DeviceGroup& group,
                           const std::shared_ptr<fleet::MpsDaemon>& mps,
                           const std::shared_ptr<fleet::FaultGroup>& fault_group) {
  fleet.command.device = group.device;
  if (mps) {
    fleet.worker_env = [mps, workers = fleet.workers, gpu = group.device.index](int worker) {
      return mps->worker_env(worker, workers, gpu);
    };
    // Under MPS a fatal fault in one client faults every client of its GPU, whichever model it serves: restart
    // them together (the other model's workers too), and only once the GPU takes clients again.
    fleet.restart_group_on_fault = true;
    fleet.fault_group = fault_group;
  }
  return [fleet, name = info.name, version = info.version, device = group.name](prometheus::Registry& registry) {
    return fleet::worker_executors(
        fleet, std::make_unique<fleet::FleetMetrics>(registry, name, version, fleet.workers, device));
  };
}

// `n` lanes of one device group over `runners`.
ExecutorMaker lane_maker(RunnerFactory runners, int n, Device device, OnDeviceFault fault) {
  return [runners = std::move(runners), n, device, fault](prometheus::Registry&) {
    return lane_executors(n, runners, device, fault);
  };
}

std::string device_list(const std::vector<DeviceGroup>& groups) {
  std::vector<std::string> names;
  for (const DeviceGroup& g : groups) names.push_back(g.device.str());
  return fmt::format("{}", fmt::join(names, ","));
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
  built.devices = device_groups(m.parsed_devices());
  spec.devices = built.devices;
  spec.info.name = served_name(m);
  spec.info.aliases = m.aliases;
  spec.info.platform = kKServePlatform;
  spec.info.on_gpu = !m.parsed_device().is_cpu();
  spec.info.device = device_list(spec.devices);
  spec.info.share = share_mode_name(m.share);
  spec.info.max_audio_seconds = m.max_audio_seconds;
  spec.info.piece_seconds = m.piece_seconds;
  spec.info.pieces_in_flight = m.pieces_in_flight;
  spec.batcher.max_batch_size = m.max_batch;
  spec.batcher.max_queue_delay = std::chrono::microseconds(static_cast<int64_t>(m.max_queue_delay_ms * 1000.0));
  spec.batcher.max_queue_size = static_cast<size_t>(m.max_queue_size);
  spec.batcher.spread_over_idle_executors = m.spread_batches;

  std::vector<ExecutorMaker> makers;
  if (uses_worker_processes(m.share)) {
    if (m.share == ShareMode::kMps) {
      built.mps = open_mps(m);
      built.fault_groups = mps_fault_groups(spec.devices, built.mps);
      spec.policy.isolate_suspects = true;  // a poison request's fault faults its neighbours too
      spec.resources = built.mps;  // the daemon outlives the workers it serves
    }
    for (size_t g = 0; g < spec.devices.size(); ++g)
      makers.push_back(worker_maker(worker_fleet(config), spec.info, spec.devices[g], built.mps,
                                    built.mps ? built.fault_groups[g] : nullptr));
    spec.executors = grouped(spec.devices, std::move(makers));
    return built;
  }
  if (m.share == ShareMode::kGreen) built.green = green_partitions(spec.devices);
  // Resolved once: every group's lanes share one LM.
  const std::optional<asr::BeamOptions> beam =
      m.decoding_request().resolve(asr::AsrModel::read_config(m.dir), m.dir);
  // The decoding can come from the model's config.json, not the command line: say which it is.
  const std::string& shown = m.name.empty() ? m.dir : m.name;
  if (beam)
    spdlog::info("{}: beam search, {} hypotheses{}{}", shown, beam->beam,
                 beam->lm ? fmt::format(", token LM (alpha {}, beta {})", beam->lm_alpha, beam->lm_beta) : "",
                 beam->lexicon ? fmt::format(", lexicon of {} words (penalty {})", beam->lexicon->size(),
                                             beam->unknown_word_penalty)
                               : "");
  else
    spdlog::info("{}: greedy decoding", shown);
  for (size_t g = 0; g < spec.devices.size(); ++g) {
    const Device device = spec.devices[g].device;
    asr::ModelOverrides overrides;
    overrides.device = device;
    overrides.dtype = m.compute_dtype();
    overrides.fp8_linears = m.fp8_linears();
    std::shared_ptr<const asr::AsrModel> model = asr::AsrModel::load(m.dir, overrides);
    const RunnerFactory runners =
        m.share == ShareMode::kGreen
            ? green_transcriber_runners(model, m.green_sms, {m.executors, built.green[g]}, beam)
            : transcriber_runners(model, threads_per_executor(m.executors, m.threads_per_executor),
                                  ops::parse_gemm_backend(m.gemm), LongForm{m.long_audio_seconds, m.long_attention},
                                  beam);
    makers.push_back(lane_maker(runners, m.executors, device, on_device_fault(spec.devices)));
  }
  spec.executors = grouped(spec.devices, std::move(makers));
  return built;
}

ModelSpec build_diarizer(const ServeConfig& config, const BuiltModel& asr) {
  const ModelConfig& m = config.model;
  const DiarizerServing& d = config.diarizer;
  STENO_CHECK(!d.dir.empty(), "no diarizer directory given");
  ModelConfig named;
  named.dir = d.dir;
  ModelSpec spec;
  spec.devices = asr.devices;
  spec.info.name = served_name(named);
  spec.info.aliases = {"diarizer"};
  spec.info.task = "diarization";
  spec.info.platform = "steno_sortformer";
  spec.info.on_gpu = !m.parsed_device().is_cpu();
  spec.info.device = device_list(spec.devices);
  spec.info.share = share_mode_name(d.share);
  spec.info.max_audio_seconds = m.max_audio_seconds;
  spec.batcher.max_batch_size = d.max_batch;
  spec.batcher.max_queue_delay = std::chrono::microseconds(static_cast<int64_t>(m.max_queue_delay_ms * 1000.0));
  spec.batcher.max_queue_size = static_cast<size_t>(m.max_queue_size);
  const LongForm long_form{m.long_audio_seconds, m.long_attention};
  std::vector<ExecutorMaker> makers;
  if (uses_worker_processes(d.share)) {  // `steno worker` processes loading the diarizer (worker.cc)
    std::shared_ptr<fleet::MpsDaemon> mps;
    std::vector<std::shared_ptr<fleet::FaultGroup>> fault_groups;
    if (d.share == ShareMode::kMps) {  // the case study's recipe: 8 clients at 12 % each
      mps = asr.mps ? asr.mps : open_mps(m);
      fault_groups = asr.mps ? asr.fault_groups : mps_fault_groups(spec.devices, mps);
      spec.policy.isolate_suspects = true;
      spec.resources = mps;
    }
    fleet::WorkerFleetConfig fleet = worker_fleet(config);
    fleet.workers = d.lanes;
    fleet.command.model_dir = d.dir;
    fleet.command.threads = threads_per_executor(d.lanes, m.threads_per_executor);
    fleet.share_weights = false;
    for (size_t g = 0; g < spec.devices.size(); ++g)
      makers.push_back(worker_maker(fleet, spec.info, spec.devices[g], mps, mps ? fault_groups[g] : nullptr));
    spec.executors = grouped(spec.devices, std::move(makers));
    return spec;
  }
  std::vector<std::shared_ptr<steno::cuda::GreenPartition>> green = asr.green;
  if (d.share == ShareMode::kGreen && green.empty()) green = green_partitions(spec.devices);
  for (size_t g = 0; g < spec.devices.size(); ++g) {
    const Device device = spec.devices[g].device;
    auto model = diar::SortformerModel::load(d.dir, {device, m.compute_dtype()});
    const RunnerFactory runners =
        d.share == ShareMode::kGreen
            ? green_diarizer_runners(std::move(model), d.green_sms, long_form, {d.lanes, green[g]})
            : diarizer_runners(std::move(model), threads_per_executor(d.lanes, m.threads_per_executor),
                               ops::parse_gemm_backend(m.gemm), long_form);
    makers.push_back(lane_maker(runners, d.lanes, device, on_device_fault(spec.devices)));
  }
  spec.executors = grouped(spec.devices, std::move(makers));
  return spec;
}

}  // namespace steno::serve
