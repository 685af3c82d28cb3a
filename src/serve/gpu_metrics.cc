#include "serve/gpu_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "core/nvml.h"

namespace steno::serve {

// One GPU's handle and series, and the energy reading the counter last advanced from.
struct GpuSeries {
  nvml::DeviceHandle device = nullptr;
  prometheus::Gauge *utilization = nullptr, *memory_total = nullptr, *memory_used = nullptr;
  prometheus::Gauge *power = nullptr, *power_limit = nullptr;
  prometheus::Counter* energy = nullptr;
  std::optional<unsigned long long> last_energy_mj;
};

struct GpuMetrics::Impl {
  nvml::Library nvml;
  std::chrono::milliseconds period{};
  std::vector<GpuSeries> gpus;

  // A reading NVML refuses (a GPU that fell off the bus, a field the board does not report) leaves the series
  // at its last value: a scrape shows what was last known rather than a made-up zero.
  void sample() {
    for (GpuSeries& g : gpus) {
      nvml::Utilization u{};
      if (nvml.utilization(g.device, &u) == nvml::kSuccess) g.utilization->Set(u.gpu / 100.0);
      nvml::Memory m{};
      if (nvml.memory(g.device, &m) == nvml::kSuccess) {
        g.memory_total->Set(static_cast<double>(m.total));
        g.memory_used->Set(static_cast<double>(m.used));
      }
      unsigned mw = 0;
      if (nvml.power(g.device, &mw) == nvml::kSuccess) g.power->Set(mw / 1000.0);
      if (nvml.power_limit(g.device, &mw) == nvml::kSuccess) g.power_limit->Set(mw / 1000.0);
      unsigned long long mj = 0;
      if (nvml.energy(g.device, &mj) == nvml::kSuccess) {
        if (g.last_energy_mj && mj >= *g.last_energy_mj) g.energy->Increment((mj - *g.last_energy_mj) / 1000.0);
        g.last_energy_mj = mj;
      }
    }
  }
};

std::unique_ptr<GpuMetrics> GpuMetrics::start(const std::vector<std::string>& uuids, prometheus::Registry& registry,
                                              std::chrono::milliseconds period) {
  std::vector<std::string> wanted;
  for (const std::string& u : uuids)
    if (!u.empty() && std::find(wanted.begin(), wanted.end(), u) == wanted.end()) wanted.push_back(u);
  if (wanted.empty()) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->period = period;
  if (const std::string why = impl->nvml.load(); !why.empty()) {
    spdlog::info("no GPU metrics (nv_gpu_*): {}", why);
    return nullptr;
  }
  auto gauge = [&](const char* name, const char* help) -> auto& {
    return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  };
  auto& utilization = gauge("nv_gpu_utilization", "GPU utilization rate [0.0 - 1.0)");
  auto& memory_total = gauge("nv_gpu_memory_total_bytes", "GPU total memory, in bytes");
  auto& memory_used = gauge("nv_gpu_memory_used_bytes", "GPU used memory, in bytes");
  auto& power = gauge("nv_gpu_power_usage", "GPU power usage in watts");
  auto& power_limit = gauge("nv_gpu_power_limit", "GPU power management limit in watts");
  auto& energy = prometheus::BuildCounter()
                     .Name("nv_energy_consumption")
                     .Help("GPU energy consumption in joules since the server started")
                     .Register(registry);
  for (const std::string& uuid : wanted) {
    GpuSeries g;
    if (impl->nvml.handle_by_uuid(uuid.c_str(), &g.device) != nvml::kSuccess) {
      spdlog::warn("no GPU metrics for {}: NVML does not know it", uuid);
      continue;
    }
    const prometheus::Labels labels{{"gpu_uuid", uuid}};
    g.utilization = &utilization.Add(labels);
    g.memory_total = &memory_total.Add(labels);
    g.memory_used = &memory_used.Add(labels);
    g.power = &power.Add(labels);
    g.power_limit = &power_limit.Add(labels);
    g.energy = &energy.Add(labels);
    impl->gpus.push_back(g);
  }
  if (impl->gpus.empty()) return nullptr;
  impl->sample();
  return std::unique_ptr<GpuMetrics>(new GpuMetrics(std::move(impl)));
}

GpuMetrics::GpuMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), thread_([this] { run(); }) {}

GpuMetrics::~GpuMetrics() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GpuMetrics::run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, impl_->period, [this] { return stop_; })) {
    lock.unlock();
    impl_->sample();
    lock.lock();
  }
}

}  // namespace steno::serve
