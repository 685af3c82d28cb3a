// NVML (the NVIDIA driver's management library), loaded at run time: dlopen of libnvidia-ml.so.1, no nvml.h or
// stub at build time (the development machine's CUDA toolkit has neither), so the same binary runs where there is
// no driver and says why.
// Used by the benchmark's GPU sampler, by worker processes reporting their device memory and by the server's
// GPU metrics (serve/gpu_metrics.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace steno::nvml {

// The few NVML declarations used, as nvml.h has them (the ABI is stable; these are the versioned entry points the
// header maps the plain names to).
using Return = int;
using DeviceHandle = void*;
inline constexpr Return kSuccess = 0;
inline constexpr int kClockSm = 1;  // NVML_CLOCK_SM
struct Utilization {
  unsigned gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
struct ProcessInfo {  // nvmlProcessInfo_t of nvmlDeviceGetComputeRunningProcesses_v3
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};

// The entry points; load() opens the library, resolves them all and initialises NVML (each load() is matched by
// the destructor's nvmlShutdown: NVML counts its initialisations).
struct Library {
  Library() = default;
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // "" on success, else why NVML cannot be used here.
  std::string load();

  void* lib = nullptr;
  bool initialised = false;
  Return (*init)() = nullptr;
  Return (*shutdown)() = nullptr;
  const char* (*error_string)(Return) = nullptr;
  Return (*device_count)(unsigned*) = nullptr;
  Return (*handle_by_index)(unsigned, DeviceHandle*) = nullptr;
  Return (*handle_by_uuid)(const char*, DeviceHandle*) = nullptr;
  Return (*name)(DeviceHandle, char*, unsigned) = nullptr;
  Return (*uuid)(DeviceHandle, char*, unsigned) = nullptr;  // "GPU-…", as CUDA_VISIBLE_DEVICES may name it
  Return (*driver_version)(char*, unsigned) = nullptr;
  Return (*utilization)(DeviceHandle, Utilization*) = nullptr;
  Return (*memory)(DeviceHandle, Memory*) = nullptr;
  Return (*clock)(DeviceHandle, int, unsigned*) = nullptr;
  Return (*power)(DeviceHandle, unsigned*) = nullptr;  // milliwatts
  Return (*power_limit)(DeviceHandle, unsigned*) = nullptr;  // the enforced limit, milliwatts
  Return (*energy)(DeviceHandle, unsigned long long*) = nullptr;  // millijoules since the driver loaded
  Return (*processes)(DeviceHandle, unsigned*, ProcessInfo*) = nullptr;
};

// The device memory NVML attributes to process `pid`, summed over every GPU (0 when it lists the process nowhere:
// no CUDA context yet); nullopt, with `why` set when given, where NVML cannot be used. Loads NVML once per process.
std::optional<uint64_t> process_device_memory(int pid, std::string* why = nullptr);

}  // namespace steno::nvml
