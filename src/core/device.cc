#include "steno/core/device.h"

#include <algorithm>
#include <charconv>

#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno {

std::string Device::str() const {
  return type == DeviceType::kCPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0) {
    int index = -1;
    const char* begin = text.data() + 5;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, index);
    if (ec == std::errc() && ptr == end && begin != end && index >= 0) return Device::cuda(index);
  }
  fail(ErrorCode::kInvalidArgument, "unknown device '{}' (expected cpu, cuda or cuda:N)", text);
}

std::vector<Device> parse_devices(const std::string& text, int cuda_devices) {
  if (text == "cuda:all") {
    const int n = cuda_devices >= 0 ? cuda_devices : cuda::device_count();
    if (n == 0)
      fail(ErrorCode::kUnavailable, "device cuda:all: this machine has no CUDA device{}",
           cuda::built() ? " this process can use" : " (this steno was built without CUDA)");
    std::vector<Device> all;
    for (int i = 0; i < std::min(n, kMaxDeviceGroups); ++i) all.push_back(Device::cuda(i));
    return all;
  }
  std::vector<Device> devices;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    const std::string entry = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    STENO_CHECK(!entry.empty(), "device list '{}': an empty entry (expected cpu, cuda:N, or N after a cuda entry)",
                text);
    // "cuda:0,1": a bare index continues a list of CUDA devices.
    const bool bare_index = !devices.empty() && !devices.back().is_cpu() &&
                            entry.find_first_not_of("0123456789") == std::string::npos;
    devices.push_back(parse_device(bare_index ? "cuda:" + entry : entry));
    STENO_CHECK(devices.back().is_cpu() == devices.front().is_cpu(),
                "device list '{}' mixes the CPU and CUDA: one model's executors run on one kind of device", text);
    STENO_CHECK(static_cast<int>(devices.size()) <= kMaxDeviceGroups, "device list '{}': more than {} entries",
                text, kMaxDeviceGroups);
    if (comma == std::string::npos) return devices;
    begin = comma + 1;
  }
}

}  // namespace steno
