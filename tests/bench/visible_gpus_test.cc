// CUDA_VISIBLE_DEVICES → NVML indices: the load client must sample the GPU its server runs on when another run is
// busy on the host's other GPU.
#include "bench/visible_gpus.h"

#include <gtest/gtest.h>

namespace steno::bench {
namespace {

const std::vector<std::string> kUuids = {"GPU-8f2a0c11-aaaa", "GPU-8f3b7d22-bbbb", "GPU-1c44e933-cccc"};
using Indices = std::vector<unsigned>;

TEST(VisibleNvmlDevices, UnsetMeansEveryGpu) {
  EXPECT_EQ(visible_nvml_devices(std::nullopt, kUuids), (Indices{0, 1, 2}));
  EXPECT_EQ(visible_nvml_devices(std::nullopt, {}), Indices{});
}

TEST(VisibleNvmlDevices, OrdinalsInTheGivenOrder) {
  EXPECT_EQ(visible_nvml_devices("1", kUuids), Indices{1});
  EXPECT_EQ(visible_nvml_devices("2,0", kUuids), (Indices{2, 0}));
  EXPECT_EQ(visible_nvml_devices(" 0 , 1 ", kUuids), (Indices{0, 1}));
  EXPECT_EQ(visible_nvml_devices("1,1", kUuids), Indices{1});
}

TEST(VisibleNvmlDevices, UuidsAndUniquePrefixes) {
  EXPECT_EQ(visible_nvml_devices("GPU-1c44e933-cccc", kUuids), Indices{2});
  EXPECT_EQ(visible_nvml_devices("GPU-8f3b,GPU-1c", kUuids), (Indices{1, 2}));
  EXPECT_EQ(visible_nvml_devices("GPU-8f", kUuids), Indices{});  // two devices begin so: names neither
}

TEST(VisibleNvmlDevices, TheListEndsAtTheFirstEntryThatNamesNoDevice) {
  EXPECT_EQ(visible_nvml_devices("", kUuids), Indices{});  // CUDA sees no device
  EXPECT_EQ(visible_nvml_devices("-1", kUuids), Indices{});
  EXPECT_EQ(visible_nvml_devices("0,7,1", kUuids), Indices{0});
  EXPECT_EQ(visible_nvml_devices("1,GPU-ffff,0", kUuids), Indices{1});
  EXPECT_EQ(visible_nvml_devices("MIG-4a1d,0", kUuids), Indices{});
  EXPECT_EQ(visible_nvml_devices("99999999999999999999", kUuids), Indices{});
  EXPECT_EQ(visible_nvml_devices("0,", kUuids), Indices{0});
}

}  // namespace
}  // namespace steno::bench
