// The op profiler: on a CUDA context it times every op entry point by name (nested ops each on their own), and
// the breakdown agrees with the ops that ran; on a CPU context it records nothing.
#include "cuda_test_util.h"
#include "steno/ops/activation.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/gemm.h"
#include "steno/ops/profiler.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

TEST(OpProfiler, CountsAndTimesEachOpOnTheGpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  OpProfiler profiler;
  const Tensor a = upload(gpu, random_host({512, 512}, 1, DType::kF32), DType::kF32);
  const Tensor b = upload(gpu, random_host({512, 512}, 2, DType::kF32), DType::kF32);
  Tensor c = nan_device(gpu, {512, 512}, DType::kF32);
  gemm(gpu, a, false, b, false, c);  // before attaching: not recorded
  gpu.set_profiler(&profiler);
  for (int i = 0; i < 3; ++i) gemm(gpu, a, false, b, false, c);
  relu(gpu, c, c);
  add(gpu, c, a, 1.0f, c);
  add(gpu, c, a, 1.0f, c);
  gpu.set_profiler(nullptr);
  relu(gpu, c, c);  // after detaching: not recorded
  const auto entries = profiler.summary();
  ASSERT_EQ(entries.size(), 3u);
  int64_t gemm_calls = 0, relu_calls = 0, add_calls = 0;
  for (const auto& e : entries) {
    EXPECT_GT(e.ms, 0.0) << e.op;
    if (e.op == "gemm") gemm_calls = e.calls;
    if (e.op == "relu") relu_calls = e.calls;
    if (e.op == "add") add_calls = e.calls;
  }
  EXPECT_EQ(gemm_calls, 3);
  EXPECT_EQ(relu_calls, 1);
  EXPECT_EQ(add_calls, 2);
  EXPECT_GE(entries[0].ms, entries[1].ms);  // most time first
  profiler.clear();
  EXPECT_TRUE(profiler.summary().empty());
}

TEST(OpProfiler, CpuContextsRecordNothing) {
  Context cpu = Context::cpu(1);
  OpProfiler profiler;
  cpu.set_profiler(&profiler);
  Tensor x = Tensor::zeros({4, 4});
  relu(cpu, x, x);
  EXPECT_TRUE(profiler.summary().empty());
}

}  // namespace
}  // namespace steno::ops
