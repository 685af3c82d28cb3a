// Where a tensor's bytes live.
#pragma once

#include <string>
#include <vector>

namespace steno {

enum class DeviceType : uint8_t { kCPU, kCUDA };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {DeviceType::kCUDA, index}; }
  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

// Parses "cpu", "cuda", "cuda:N". Throws kInvalidArgument otherwise.
Device parse_device(const std::string& text);

// Parses a list of devices, each entry one group of a server's executors with its own copy of the weights:
// "cpu", "cpu,cpu" (two CPU groups), "cuda" / "cuda:N", "cuda:0,1" or "cuda:0,cuda:1" (an entry after a cuda one
// may be its bare index), "cuda:all" (every device of `cuda_devices`; -1: ask the CUDA runtime). A device may be
// listed more than once (two groups on one GPU: how tests serve two "devices" on a one-GPU machine). Throws
// kInvalidArgument for an empty or unknown entry, a list mixing the CPU and CUDA, or more than kMaxDeviceGroups
// entries; kUnavailable for "cuda:all" where there is no CUDA device.
inline constexpr int kMaxDeviceGroups = 64;
std::vector<Device> parse_devices(const std::string& text, int cuda_devices = -1);

}  // namespace steno
