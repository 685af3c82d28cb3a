#include "steno/core/device.h"

#include <charconv>

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

}  // namespace steno
