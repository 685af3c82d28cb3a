// Which NVML devices a process's CUDA sees: CUDA_VISIBLE_DEVICES names them by CUDA ordinal or by UUID, NVML by its
// own index, and NVML ignores the variable. A load run on one GPU of a several-GPU host (two arms side by side, one
// per GPU) must sample the GPU it runs on, not every GPU.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace steno::bench {

// The NVML indices that `cuda_visible_devices` (the variable's value; nullopt when unset) selects among devices
// whose UUIDs ("GPU-…", in NVML order) are `nvml_uuids`, in CUDA's order. Unset: every device. An entry is a
// decimal ordinal (taken as the NVML index: CUDA numbers devices fastest first, which on a host of one GPU model is
// PCI order, as NVML's) or a UUID or a unique prefix of one ("GPU-8f2a"); as in CUDA, the list ends at the first
// entry that names no device, and a device named twice counts once. MIG instances ("MIG-…") are not resolved: they
// end the list too.
std::vector<unsigned> visible_nvml_devices(std::optional<std::string_view> cuda_visible_devices,
                                           const std::vector<std::string>& nvml_uuids);

}  // namespace steno::bench
