// steno::nvml::process_device_memory: on a machine with the NVIDIA driver, this test process (no CUDA context)
// holds no device memory; without the driver the answer is "unknown", with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "core/nvml.h"

namespace steno::nvml {
namespace {

TEST(Nvml, ProcessDeviceMemoryIsZeroWithoutAContextOrUnknownWithAReason) {
  std::string why;
  const auto bytes = process_device_memory(static_cast<int>(::getpid()), &why);
  if (bytes) {
    EXPECT_EQ(*bytes, 0u) << "this test creates no CUDA context";
    EXPECT_TRUE(why.empty());
  } else {
    EXPECT_FALSE(why.empty());
    std::printf("[ measured ] NVML unavailable here: %s\n", why.c_str());
  }
  // A pid no process has: zero (or unknown, as above).
  const auto none = process_device_memory(-5);
  EXPECT_TRUE(!none || *none == 0u);
}

}  // namespace
}  // namespace steno::nvml
