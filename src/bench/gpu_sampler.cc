#include "steno/bench/gpu_sampler.h"

#include "bench/visible_gpus.h"
#include "core/nvml.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>
#include <type_traits>

namespace steno::bench {
namespace {

using nvml::kSuccess;
using nvmlDevice_t = nvml::DeviceHandle;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct GpuSampler::Impl {
  nvml::Library nvml;
  std::string why;
  std::chrono::milliseconds period{100};
  std::vector<nvmlDevice_t> devices;
  std::vector<unsigned> nvml_indices;  // devices[i] is NVML's device nvml_indices[i]
  std::vector<std::string> names;
  std::optional<std::string> cuda_visible_devices;
  std::string driver;
  mutable std::mutex mu;
  std::vector<GpuSample> samples;
  std::condition_variable stop_cv;
  bool stop = false;
  std::thread thread;

  void sample_all() {
    const double t = unix_now();
    std::vector<GpuSample> batch;
    for (size_t i = 0; i < devices.size(); ++i) {
      GpuSample s;
      s.unix_s = t;
      s.gpu = static_cast<int>(i);
      nvml::Utilization u{};
      if (nvml.utilization(devices[i], &u) == kSuccess) {
        s.util_gpu_pct = u.gpu;
        s.util_mem_pct = u.memory;
      }
      nvml.clock(devices[i], nvml::kClockSm, &s.sm_clock_mhz);
      nvml::Memory m{};
      if (nvml.memory(devices[i], &m) == kSuccess) {
        s.mem_used_bytes = m.used;
        s.mem_total_bytes = m.total;
      }
      unsigned mw = 0;
      if (nvml.power(devices[i], &mw) == kSuccess) s.power_w = mw / 1000.0;
      nvml::ProcessInfo procs[64];
      unsigned n = 64;
      if (nvml.processes(devices[i], &n, procs) == kSuccess) {
        s.processes = static_cast<int>(n);
        for (unsigned p = 0; p < n; ++p) s.process_mem_bytes += procs[p].used_gpu_memory;
      }
      batch.push_back(s);
    }
    std::lock_guard<std::mutex> lock(mu);
    samples.insert(samples.end(), batch.begin(), batch.end());
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      lock.unlock();
      sample_all();
      lock.lock();
      stop_cv.wait_for(lock, period, [&] { return stop; });
    }
  }
};

GpuSampler::GpuSampler(std::chrono::milliseconds period) : impl_(std::make_unique<Impl>()) {
  impl_->period = period;
  impl_->why = impl_->nvml.load();
  if (!impl_->why.empty()) return;
  unsigned count = 0;
  if (impl_->nvml.device_count(&count) != kSuccess || count == 0) {
    impl_->why = "NVML reports no GPU";
    return;
  }
  char buf[256];
  if (impl_->nvml.driver_version(buf, sizeof buf) == kSuccess) impl_->driver = buf;
  // Only the GPUs this process's CUDA sees: on a host of several GPUs, another run may be busy on the others.
  std::vector<nvmlDevice_t> all(count, nullptr);
  std::vector<std::string> uuids(count);
  for (unsigned i = 0; i < count; ++i)
    if (impl_->nvml.handle_by_index(i, &all[i]) == kSuccess && impl_->nvml.uuid(all[i], buf, sizeof buf) == kSuccess)
      uuids[i] = buf;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) impl_->cuda_visible_devices = v;
  for (unsigned i : visible_nvml_devices(impl_->cuda_visible_devices, uuids)) {
    if (!all[i]) continue;
    impl_->devices.push_back(all[i]);
    impl_->nvml_indices.push_back(i);
    impl_->names.push_back(impl_->nvml.name(all[i], buf, sizeof buf) == kSuccess ? buf : "?");
  }
  if (impl_->devices.empty()) {
    impl_->why = impl_->cuda_visible_devices
                     ? "CUDA_VISIBLE_DEVICES=" + *impl_->cuda_visible_devices + " names none of NVML's " +
                           std::to_string(count) + " GPUs"
                     : "NVML gave no device handle";
    return;
  }
  impl_->thread = std::thread([this] { impl_->run(); });
}

GpuSampler::~GpuSampler() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}  // impl_'s nvml::Library shuts NVML down (and leaves the library loaded)

bool GpuSampler::available() const { return impl_->why.empty(); }
const std::string& GpuSampler::why_unavailable() const { return impl_->why; }

nlohmann::json GpuSampler::describe() const {
  if (!available()) return {{"available", false}, {"why", impl_->why}};
  return {{"available", true}, {"source", "NVML (libnvidia-ml.so.1, loaded at run time)"},
          {"driver", impl_->driver}, {"gpus", impl_->names}, {"nvml_indices", impl_->nvml_indices},
          {"cuda_visible_devices",
           impl_->cuda_visible_devices ? nlohmann::json(*impl_->cuda_visible_devices) : nlohmann::json(nullptr)},
          {"period_ms", impl_->period.count()}};
}

std::vector<GpuSample> GpuSampler::samples(double from_unix_s, double to_unix_s) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<GpuSample> out;
  for (const GpuSample& s : impl_->samples)
    if (s.unix_s >= from_unix_s && s.unix_s < to_unix_s) out.push_back(s);
  return out;
}

nlohmann::json GpuSampler::summary(double from_unix_s, double to_unix_s) const {
  if (!available()) return describe();
  struct Acc {
    int n = 0;
    double util = 0, mem_util = 0, clock = 0, power = 0;
    unsigned util_max = 0;
    uint64_t mem_max = 0, proc_mem_max = 0, mem_total = 0;
    int processes_max = 0;
  };
  std::map<int, Acc> per_gpu;
  for (const GpuSample& s : samples(from_unix_s, to_unix_s)) {
    Acc& a = per_gpu[s.gpu];
    ++a.n;
    a.util += s.util_gpu_pct;
    a.mem_util += s.util_mem_pct;
    a.clock += s.sm_clock_mhz;
    a.power += s.power_w;
    a.util_max = std::max(a.util_max, s.util_gpu_pct);
    a.mem_max = std::max(a.mem_max, s.mem_used_bytes);
    a.proc_mem_max = std::max(a.proc_mem_max, s.process_mem_bytes);
    a.mem_total = s.mem_total_bytes;
    a.processes_max = std::max(a.processes_max, s.processes);
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [gpu, a] : per_gpu) {
    const double n = std::max(a.n, 1);
    gpus.push_back({{"gpu", gpu}, {"samples", a.n}, {"util_gpu_pct_mean", a.util / n},
                    {"util_gpu_pct_max", a.util_max}, {"util_mem_pct_mean", a.mem_util / n},
                    {"sm_clock_mhz_mean", a.clock / n}, {"power_w_mean", a.power / n},
                    {"mem_used_gib_max", a.mem_max / 1073741824.0}, {"mem_total_gib", a.mem_total / 1073741824.0},
                    {"process_mem_gib_max", a.proc_mem_max / 1073741824.0}, {"processes_max", a.processes_max}});
  }
  return {{"available", true}, {"window_unix_s", {from_unix_s, to_unix_s}}, {"gpus", gpus}};
}

nlohmann::json GpuSampler::timeline(double from_unix_s, size_t max_points) const {
  if (!available()) return nullptr;
  std::map<int, std::vector<GpuSample>> per_gpu;
  for (const GpuSample& s : samples(from_unix_s, 1e300)) per_gpu[s.gpu].push_back(s);
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& [gpu, list] : per_gpu) {
    const size_t step = std::max<size_t>(1, (list.size() + max_points - 1) / std::max<size_t>(max_points, 1));
    nlohmann::json t = nlohmann::json::array(), util = nlohmann::json::array(), mem = nlohmann::json::array();
    for (size_t i = 0; i < list.size(); i += step) {
      t.push_back(std::round((list[i].unix_s - from_unix_s) * 1000) / 1000);
      util.push_back(list[i].util_gpu_pct);
      mem.push_back(std::round(list[i].mem_used_bytes / 1073741824.0 * 1000) / 1000);
    }
    gpus.push_back({{"gpu", gpu}, {"t_s", t}, {"util_pct", util}, {"mem_gib", mem}});
  }
  return {{"t0_unix_s", from_unix_s}, {"gpus", gpus}};
}

}  // namespace steno::bench
