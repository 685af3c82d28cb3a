// Where a tensor's bytes live.
#pragma once

#include <string>

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

}  // namespace steno
