// Green contexts (steno::cuda::GreenContext) and ops::Context::cuda(Stream) on a GPU: kernels queued on a green
// context's stream stay on its SMs, and ops on such a context compute what they compute on a plain one.
#include <cuda_runtime.h>

#include <optional>
#include <set>
#include <vector>

#include "cuda_test_util.h"
#include "steno/ops/gemm.h"

namespace steno::ops {
namespace cuda_testing {
cudaError_t launch_record_smid(void* stream, int blocks, int* out_device);  // green_smid_probe.cu
}  // namespace cuda_testing
namespace {

using namespace cuda_testing;

// The distinct SMs that a grid of `blocks` blocks ran on, queued on `ctx`'s stream.
std::set<int> sms_used(const Context& ctx, int blocks) {
  int* out = nullptr;
  EXPECT_EQ(cudaMalloc(&out, sizeof(int) * blocks), cudaSuccess);
  EXPECT_EQ(launch_record_smid(ctx.stream().handle(), blocks, out), cudaSuccess);
  ctx.synchronize();
  std::vector<int> host(static_cast<size_t>(blocks));
  EXPECT_EQ(cudaMemcpy(host.data(), out, sizeof(int) * blocks, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(out);
  return {host.begin(), host.end()};
}

TEST(GreenContextCuda, ProvisionsWholePartitionsOfTheAskedSize) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const steno::cuda::SmPartitioning p = steno::cuda::sm_partitioning(0);
  EXPECT_EQ(p.sms, steno::cuda::sm_count(0));
  ASSERT_GT(p.alignment, 0);
  const auto green = steno::cuda::GreenContext::create(0, 16);
  EXPECT_EQ(green.device(), 0);
  EXPECT_GE(green.sm_count(), 16);
  EXPECT_EQ(green.sm_count() % p.alignment, 0);
  // The driver rounds up (9 -> 16 on an H200), so asking for one more SM than the alignment gives two units.
  EXPECT_EQ(steno::cuda::GreenContext::create(0, p.alignment + 1).sm_count(), 2 * p.alignment);
  EXPECT_THROW(steno::cuda::GreenContext::create(0, p.sms + 1), Error);
}

TEST(GreenContextCuda, KernelsStayOnTheGreenContextsSms) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto green = steno::cuda::GreenContext::create(0, 16);
  Context on_green = Context::cuda(green.make_stream());
  Context plain = Context::cuda(0);
  const int blocks = 4 * steno::cuda::sm_count(0);
  const std::set<int> g = sms_used(on_green, blocks);
  const std::set<int> all = sms_used(plain, blocks);
  EXPECT_LE(static_cast<int>(g.size()), green.sm_count());
  // The probe can see a spread: the same grid on a plain stream uses more SMs than the partition has.
  EXPECT_GT(static_cast<int>(all.size()), green.sm_count());
}

// partition() splits the device: each context's kernels run on SMs no other context of the split uses (lanes made
// from it cannot slow each other down), and asking for more groups than fit fails instead of overlapping.
TEST(GreenContextCuda, PartitionGivesDisjointSms) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const int sms = steno::cuda::sm_count(0);
  const int count = sms / 16;
  ASSERT_GE(count, 2) << "the test needs room for two groups of 16 SMs";
  const auto groups = steno::cuda::GreenContext::partition(0, 16, count);
  ASSERT_EQ(static_cast<int>(groups.size()), count);
  std::set<int> seen;
  for (const auto& green : groups) {
    EXPECT_EQ(green.sm_count(), 16);
    const std::set<int> used = sms_used(Context::cuda(green.make_stream()), 4 * sms);
    EXPECT_LE(static_cast<int>(used.size()), green.sm_count());
    for (int sm : used) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " is in two groups";
  }
  EXPECT_THROW(steno::cuda::GreenContext::partition(0, 16, count + 1), Error);
}

// One GreenPartition carved twice (a transcriber's green lanes, then a diarizer's): the second carve takes SMs the
// first did not, so no SM runs kernels of both, and a carve beyond what is left fails instead of overlapping.
TEST(GreenContextCuda, TwoCarvesOfOnePartitionGiveDisjointSms) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const int sms = steno::cuda::sm_count(0);
  ASSERT_GE(sms, 80) << "the test carves 2 x 24 + 2 x 16 SMs";
  steno::cuda::GreenPartition partition(0);
  std::vector<steno::cuda::GreenContext> groups = partition.carve(24, 2);
  for (auto& g : partition.carve(16, 2)) groups.push_back(std::move(g));
  EXPECT_EQ(partition.sms_left(), sms - 80);
  std::set<int> seen;
  for (const auto& green : groups) {
    const std::set<int> used = sms_used(Context::cuda(green.make_stream()), 4 * sms);
    EXPECT_LE(static_cast<int>(used.size()), green.sm_count());
    for (int sm : used) EXPECT_TRUE(seen.insert(sm).second) << "SM " << sm << " is in two groups";
  }
  EXPECT_THROW(partition.carve(16, partition.sms_left() / 16 + 1), Error);
}

TEST(GreenContextCuda, GemmOnAGreenContextMatchesAPlainOne) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const auto green = steno::cuda::GreenContext::create(0, 16);
  Context on_green = Context::cuda(green.make_stream());
  EXPECT_EQ(on_green.device(), Device::cuda(0));
  Context plain = Context::cuda(0);
  Context cpu = Context::cpu(2);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor a = random_host({256, 384}, 11, dt), b = random_host({512, 384}, 12, dt);
    Tensor want = host_filled({256, 512}, 0.0f);
    gemm(cpu, a, false, b, true, want);
    Tensor c_plain = nan_device(plain, {256, 512}, dt);
    gemm(plain, upload(plain, a, dt), false, upload(plain, b, dt), true, c_plain);
    Tensor c_green = nan_device(on_green, {256, 512}, dt);
    gemm(on_green, upload(on_green, a, dt), false, upload(on_green, b, dt), true, c_green);
    const Tensor from_green = download(on_green, c_green);
    EXPECT_TRUE(close_to(from_green, want, tolerance(dt, 1e-5f)));
    EXPECT_TRUE(close_to(from_green, download(plain, c_plain), tolerance(dt, 1e-5f)));
  }
}

// The green context outlives a context made on its stream even when the GreenContext object goes first.
TEST(GreenContextCuda, AStreamKeepsItsGreenContextAlive) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::optional<Context> ctx;
  {
    const auto green = steno::cuda::GreenContext::create(0, 16);
    ctx.emplace(Context::cuda(green.make_stream()));
  }
  Context cpu = Context::cpu(2);
  const Tensor a = random_host({8, 16}, 3, DType::kF32), b = random_host({16, 4}, 4, DType::kF32);
  Tensor want = host_filled({8, 4}, 0.0f);
  gemm(cpu, a, false, b, false, want);
  Tensor c = nan_device(*ctx, {8, 4}, DType::kF32);
  gemm(*ctx, upload(*ctx, a, DType::kF32), false, upload(*ctx, b, DType::kF32), false, c);
  EXPECT_TRUE(close_to(download(*ctx, c), want, 1e-5f));
}

}  // namespace
}  // namespace steno::ops
