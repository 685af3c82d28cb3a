// GPU samples for load runs through NVML, loaded at run time (dlopen of libnvidia-ml.so.1; no nvml.h or stub
// library at build time: the development machine's CUDA toolkit has neither), so the same binary runs on machines
// without a GPU and says why it has no samples. A thread samples every GPU this process's CUDA sees
// (CUDA_VISIBLE_DEVICES, visible_gpus.h) every period: utilization (GPU and memory controller), SM clock, memory
// used (device, and per process), power. Under MPS, NVML's utilization only says that some kernel was running:
// report it, judge by throughput.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace steno::bench {

struct GpuSample {
  double unix_s = 0;  // wall-clock time of the sample
  int gpu = 0;
  unsigned util_gpu_pct = 0, util_mem_pct = 0;
  unsigned sm_clock_mhz = 0;
  uint64_t mem_used_bytes = 0, mem_total_bytes = 0;
  double power_w = 0;
  uint64_t process_mem_bytes = 0;  // summed over the compute processes NVML lists on this GPU
  int processes = 0;
};

class GpuSampler {
 public:
  // Loads NVML and starts sampling; without NVML (no driver, no GPU) nothing starts and available() is false.
  explicit GpuSampler(std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~GpuSampler();  // stops the thread, shuts NVML down
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  bool available() const;
  const std::string& why_unavailable() const;  // "" when available
  // GPU names, driver version and the sampling period, or {"available": false, "why": ...}.
  nlohmann::json describe() const;
  // The samples taken in [from_unix_s, to_unix_s).
  std::vector<GpuSample> samples(double from_unix_s, double to_unix_s) const;
  // Per GPU over [from, to): sample count, mean and max utilization, mean SM clock, max memory used (device and
  // processes), mean power; {"available": false, ...} without NVML.
  nlohmann::json summary(double from_unix_s, double to_unix_s) const;
  // The samples since from_unix_s as a time series per GPU, for plots: {"t0_unix_s", "gpus": [{"gpu", "t_s",
  // "util_pct", "mem_gib"}]}, every k-th sample so that no GPU has more than max_points; null without NVML.
  nlohmann::json timeline(double from_unix_s, size_t max_points = 4000) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace steno::bench
