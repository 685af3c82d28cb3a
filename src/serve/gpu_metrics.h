// Triton's GPU metrics for the GPUs steno serves on, read from NVML by a thread of their own every period (Triton's
// --metrics-interval-ms default, 2 s), each series labelled with its GPU's gpu_uuid as Triton labels them:
//   nv_gpu_utilization         gauge    0..1: the share of NVML's last sample period in which a kernel ran
//   nv_gpu_memory_total_bytes  gauge
//   nv_gpu_memory_used_bytes   gauge    every process's, as nvidia-smi shows it
//   nv_gpu_power_usage         gauge    watts
//   nv_gpu_power_limit         gauge    watts, the enforced limit
//   nv_energy_consumption      counter  joules since the server started
// Dashboards and alerts written for Triton read these names; steno's own per-GPU series (steno_device_*) carry
// the same gpu_uuid label, so the two join.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace prometheus {
class Registry;
class Gauge;
class Counter;
}  // namespace prometheus

namespace steno::serve {

class GpuMetrics {
 public:
  // Samples the GPUs named by `uuids` ("GPU-…", duplicates and "" ignored); the first sample is published before
  // this returns. Null, with an info line saying why, where NVML cannot be used or finds none of them (a CPU
  // server, a machine without the NVIDIA driver).
  static std::unique_ptr<GpuMetrics> start(const std::vector<std::string>& uuids, prometheus::Registry& registry,
                                           std::chrono::milliseconds period = std::chrono::seconds(2));
  ~GpuMetrics();
  GpuMetrics(const GpuMetrics&) = delete;
  GpuMetrics& operator=(const GpuMetrics&) = delete;

  struct Impl;

 private:
  explicit GpuMetrics(std::unique_ptr<Impl> impl);
  void run();

  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is set up
};

}  // namespace steno::serve
