// A model served on several devices: each entry of --device ("cuda:0,1", "cuda:all", "cpu,cpu") is a device group,
// executors of their own on that device with their own copy of the weights, all pulling from the model's one
// queue, so the next batch goes to whichever executor is idle on any device. A group keeps its name in the
// executors' names ("cuda:1 lane 0"), the logs and the per-device series of /metrics (statistics.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "steno/core/device.h"
#include "serve/executor.h"

namespace steno::serve {

struct DeviceGroup {
  Device device;
  // "cuda:1"; with a device listed more than once, each entry numbered: "cuda:0#0", "cuda:0#1".
  std::string name;
  // The GPU's UUID ("GPU-…": Triton's gpu_uuid label); "" on the CPU or where the device cannot be queried.
  std::string gpu_uuid;
};

// The groups of a parsed device list, in its order.
std::vector<DeviceGroup> device_groups(const std::vector<Device>& devices);

// The executors of group `group` (named `group_name`): each keeps its behaviour, answers device_group() with
// `group`, and is named "<group_name> <its own name>" where `group_name` is not empty.
std::vector<std::unique_ptr<Executor>> in_device_group(int group, const std::string& group_name,
                                                       std::vector<std::unique_ptr<Executor>> executors);

}  // namespace steno::serve
