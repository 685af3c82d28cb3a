#include "core/nvml.h"

#include <dlfcn.h>

#include <type_traits>
#include <vector>

namespace steno::nvml {

Library::~Library() {
  if (initialised) shutdown();
  // The library stays mapped: NVML's own threads may outlive the shutdown call.
}

std::string Library::load() {
  lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::string("libnvidia-ml.so.1 not loadable (no NVIDIA driver?): ") + dlerror();
  std::string missing;
  auto sym = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + symbol;
  };
  sym(init, "nvmlInit_v2");
  sym(shutdown, "nvmlShutdown");
  sym(error_string, "nvmlErrorString");
  sym(device_count, "nvmlDeviceGetCount_v2");
  sym(handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  sym(name, "nvmlDeviceGetName");
  sym(uuid, "nvmlDeviceGetUUID");
  sym(driver_version, "nvmlSystemGetDriverVersion");
  sym(utilization, "nvmlDeviceGetUtilizationRates");
  sym(memory, "nvmlDeviceGetMemoryInfo");
  sym(clock, "nvmlDeviceGetClockInfo");
  sym(power, "nvmlDeviceGetPowerUsage");
  sym(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  sym(energy, "nvmlDeviceGetTotalEnergyConsumption");
  sym(processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!missing.empty()) return "libnvidia-ml.so.1 lacks " + missing;
  if (const Return r = init(); r != kSuccess) return std::string("nvmlInit failed: ") + error_string(r);
  initialised = true;
  return "";
}

std::optional<uint64_t> process_device_memory(int pid, std::string* why) {
  struct Loaded {
    Library nvml;
    std::string why;
    std::vector<DeviceHandle> devices;
  };
  static Loaded* loaded = [] {  // leaked on purpose: heartbeat threads may query it during static destruction
    auto* l = new Loaded();
    l->why = l->nvml.load();
    unsigned count = 0;
    if (l->why.empty() && l->nvml.device_count(&count) == kSuccess)
      for (unsigned i = 0; i < count; ++i) {
        DeviceHandle d = nullptr;
        if (l->nvml.handle_by_index(i, &d) == kSuccess) l->devices.push_back(d);
      }
    if (l->why.empty() && l->devices.empty()) l->why = "NVML reports no GPU";
    return l;
  }();
  if (!loaded->why.empty()) {
    if (why) *why = loaded->why;
    return std::nullopt;
  }
  uint64_t total = 0;
  for (DeviceHandle d : loaded->devices) {
    ProcessInfo procs[256];
    unsigned n = 256;
    if (loaded->nvml.processes(d, &n, procs) != kSuccess) continue;
    for (unsigned p = 0; p < n; ++p)
      if (static_cast<int>(procs[p].pid) == pid) total += procs[p].used_gpu_memory;
  }
  return total;
}

}  // namespace steno::nvml
