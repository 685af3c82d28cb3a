// Ops captured into a CUDA graph whose clip lengths are parameters (src/ops/cuda/lengths_graph.h): a replay masks
// with the lengths it is given, not the capture's; a capture with every clip full still masks on replay; lengths
// that are not parameters fail the capture and leave the stream usable.
#include <vector>

#include "cuda/lengths_graph.h"
#include "cuda_test_util.h"
#include "steno/core/error.h"
#include "steno/ops/copy.h"
#include "steno/ops/elementwise.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// Ones [batch, steps, 3] with frames from `lengths` on zeroed, as the CPU op does it.
Tensor masked_ones(const std::vector<int64_t>& lengths, int64_t steps) {
  Context cpu = Context::cpu(1);
  Tensor t = host_filled({static_cast<int64_t>(lengths.size()), steps, 3}, 1.0f);
  zero_padded_frames(cpu, t, 1, lengths);
  return t;
}

TEST(LengthsGraph, ReplaysMaskWithTheirOwnLengths) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  const int64_t steps = 8;
  const Tensor ones = host_filled({2, steps, 3}, 1.0f);
  Tensor x = upload(gpu, ones, DType::kF32);
  // Captured with both clips full, where the eager op skips its masking: the graph must mask all the same.
  const std::vector<int64_t> full = {steps, steps};
  cuda::LengthsGraph graph = cuda::LengthsGraph::capture(gpu, {full}, [&] { zero_padded_frames(gpu, x, 1, full); });
  EXPECT_EQ(graph.slots(), 1u);
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{3, 6}, {8, 1}, {0, 8}}) {
    SCOPED_TRACE(::testing::Message() << lengths[0] << ", " << lengths[1]);
    copy(gpu, upload(gpu, ones, DType::kF32), x);
    graph.replay(gpu, {lengths});
    EXPECT_TRUE(same_values(download(gpu, x), masked_ones(lengths, steps)));
  }
  EXPECT_THROW(graph.replay(gpu, {{3}}), Error);          // one clip for a graph of two
  EXPECT_THROW(graph.replay(gpu, {{3, 4}, {1, 2}}), Error);  // two parameters for one
}

TEST(LengthsGraph, ConcatenatedParametersFillOneSlot) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  const Tensor ones = host_filled({2, 6, 3}, 1.0f);
  Tensor x = upload(gpu, ones, DType::kF32);
  // A [4, 6, 3] view of two batches of two: lengths a then b, one vector of four (as the subsampling stem's).
  Tensor four = upload(gpu, host_filled({4, 6, 3}, 1.0f), DType::kF32);
  const std::vector<int64_t> a = {6, 5}, b = {4, 3};
  cuda::LengthsGraph graph = cuda::LengthsGraph::capture(gpu, {a, b}, [&] {
    std::vector<int64_t> joined = b;
    joined.insert(joined.end(), a.begin(), a.end());
    zero_padded_frames(gpu, four, 1, joined);
    zero_padded_frames(gpu, x, 1, a);
  });
  EXPECT_EQ(graph.slots(), 3u);  // b and a for the first op, a again for the second (a whole vector is reused)
  const std::vector<int64_t> a2 = {2, 6}, b2 = {1, 0};
  copy(gpu, upload(gpu, host_filled({4, 6, 3}, 1.0f), DType::kF32), four);
  graph.replay(gpu, {a2, b2});
  EXPECT_TRUE(same_values(download(gpu, four), masked_ones({1, 0, 2, 6}, 6)));
  EXPECT_TRUE(same_values(download(gpu, x), masked_ones(a2, 6)));
}

TEST(LengthsGraph, LengthsThatAreNoParameterFailTheCaptureAndTheStreamGoesOn) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  Tensor x = upload(gpu, host_filled({2, 8, 3}, 1.0f), DType::kF32);
  try {
    cuda::LengthsGraph::capture(gpu, {{8, 8}}, [&] { zero_padded_frames(gpu, x, 1, {5, 8}); });
    FAIL() << "lengths that are no parameter were captured";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnimplemented) << e.what();
  }
  EXPECT_THROW(cuda::LengthsGraph::capture(gpu, {{8, 8}, {8, 8}}, [] {}), Error);  // which would an op mean?
  zero_padded_frames(gpu, x, 1, {5, 8});  // eager again
  EXPECT_TRUE(same_values(download(gpu, x), masked_ones({5, 8}, 8)));
}

}  // namespace
}  // namespace steno::ops
