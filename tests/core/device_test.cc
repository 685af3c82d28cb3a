// Device names and lists as --device takes them (one model's device groups: serve/device_groups.h).
#include <gtest/gtest.h>

#include "../error_util.h"
#include "steno/core/device.h"

namespace steno {
namespace {

using testing::error_of;

std::vector<std::string> names(const std::vector<Device>& devices) {
  std::vector<std::string> out;
  for (const Device& d : devices) out.push_back(d.str());
  return out;
}

TEST(DeviceList, OneDeviceIsAListOfOne) {
  EXPECT_EQ(names(parse_devices("cpu")), std::vector<std::string>{"cpu"});
  EXPECT_EQ(names(parse_devices("cuda")), std::vector<std::string>{"cuda:0"});
  EXPECT_EQ(names(parse_devices("cuda:3")), std::vector<std::string>{"cuda:3"});
}

TEST(DeviceList, EntriesAreGroupsInOrderAndMayRepeat) {
  EXPECT_EQ(names(parse_devices("cuda:0,cuda:2")), (std::vector<std::string>{"cuda:0", "cuda:2"}));
  EXPECT_EQ(names(parse_devices("cuda:1,0,3")), (std::vector<std::string>{"cuda:1", "cuda:0", "cuda:3"}));
  EXPECT_EQ(names(parse_devices("cuda:0,0")), (std::vector<std::string>{"cuda:0", "cuda:0"}));
  EXPECT_EQ(names(parse_devices("cpu,cpu")), (std::vector<std::string>{"cpu", "cpu"}));
}

TEST(DeviceList, AllIsEveryDeviceTheRuntimeCounts) {
  EXPECT_EQ(names(parse_devices("cuda:all", 3)), (std::vector<std::string>{"cuda:0", "cuda:1", "cuda:2"}));
  EXPECT_NE(error_of([] { parse_devices("cuda:all", 0); }, ErrorCode::kUnavailable).find("no CUDA device"),
            std::string::npos);
}

TEST(DeviceList, BadListsAreRefusedNamingTheList) {
  EXPECT_NE(error_of([] { parse_devices("cuda:0,"); }, ErrorCode::kInvalidArgument).find("empty entry"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_devices(""); }, ErrorCode::kInvalidArgument).find("empty entry"), std::string::npos);
  EXPECT_NE(error_of([] { parse_devices("cpu,cuda:0"); }, ErrorCode::kInvalidArgument).find("mixes"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_devices("cpu,1"); }, ErrorCode::kInvalidArgument).find("unknown device '1'"),
            std::string::npos);  // a bare index continues a CUDA list only
  EXPECT_NE(error_of([] { parse_devices("cuda:0,gpu1"); }, ErrorCode::kInvalidArgument).find("gpu1"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_devices("cuda:-1"); }, ErrorCode::kInvalidArgument).find("cuda:-1"),
            std::string::npos);
  std::string many = "cpu";
  for (int i = 0; i < kMaxDeviceGroups; ++i) many += ",cpu";
  EXPECT_NE(error_of([&] { parse_devices(many); }, ErrorCode::kInvalidArgument).find("more than 64"),
            std::string::npos);
}

}  // namespace
}  // namespace steno
