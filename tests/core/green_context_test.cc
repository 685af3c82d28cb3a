// Green contexts where none can be made (no CUDA build or no GPU): clear kUnavailable errors. On a GPU,
// ops_cuda_test (green_context_cuda_test.cc) runs them for real.
#include <gtest/gtest.h>

#include <string>

#include "../error_util.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"

namespace steno::cuda {
namespace {

template <typename Fn>
std::string unavailable(Fn fn) {
  return steno::testing::error_of(fn, ErrorCode::kUnavailable);
}

TEST(GreenContextUnavailable, FailsClearlyWithoutAGpu) {
  if (device_count() > 0) GTEST_SKIP() << "a GPU is present: ops_cuda_test covers green contexts";
  // Without CUDA the stub says so; with CUDA but no device, the device check does.
  const std::string why = built() ? "cuda:0 is not available: this machine has 0 CUDA device(s)"
                                  : "built without CUDA";
  for (const std::string& msg : {unavailable([] { GreenContext::create(0, 16); }),
                                 unavailable([] { sm_partitioning(0); }), unavailable([] { sm_count(0); })})
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  EXPECT_NE(unavailable([] { GreenContext::create(0, 16); }).find(built() ? "cuda:0" : "green contexts"),
            std::string::npos);
}

}  // namespace
}  // namespace steno::cuda
