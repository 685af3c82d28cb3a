// GEMM on CUDA (cuBLASLt) against the CPU GEMM, and a CUDA-graph capture of linear + silu + layer_norm.
#include <cuda_runtime.h>

#include <exception>

#include "cuda_test_util.h"
#include "steno/ops/activation.h"
#include "steno/ops/gemm.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// f32 bound: the two sides differ only in summation order (~1e-6 of the output's scale at these k). TF32, whose
// 10-bit mantissa gives ~1e-4, would fail it.
constexpr float kF32Tol = 1e-5f;

class GemmCuda : public ::testing::TestWithParam<DType> {};

TEST_P(GemmCuda, TransposesAlphaBeta) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const int64_t m = 37, n = 70, k = 129;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const Tensor a = random_host(ta ? Shape{k, m} : Shape{m, k}, 1, dt);
      const Tensor b = random_host(tb ? Shape{n, k} : Shape{k, n}, 2, dt);
      const Tensor c0 = random_host({m, n}, 3, dt);
      Tensor want = c0.clone();
      gemm(cpu, a, ta, b, tb, want, 0.5f, -1.0f);
      Tensor c = upload(gpu, c0, dt);
      gemm(gpu, upload(gpu, a, dt), ta, upload(gpu, b, dt), tb, c, 0.5f, -1.0f);
      EXPECT_TRUE(close_to(download(gpu, c), want, tolerance(dt, kF32Tol)));
    }
}

TEST_P(GemmCuda, BetaZeroDoesNotReadC) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Tensor a = random_host({1, 300}, 4, dt), b = random_host({17, 300}, 5, dt);  // m = 1: an LSTM step
  Tensor want = host_filled({1, 17}, 0.0f);
  gemm(cpu, a, false, b, true, want);
  Tensor c = nan_device(gpu, {1, 17}, dt);
  gemm(gpu, upload(gpu, a, dt), false, upload(gpu, b, dt), true, c);
  EXPECT_TRUE(close_to(download(gpu, c), want, tolerance(dt, kF32Tol)));
}

TEST_P(GemmCuda, LinearShapes) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  struct Case {
    Shape x;
    int64_t n;
    bool bias;
  };
  const Case cases[] = {
      {{2, 7, 45}, 61, true},  // 3-D input, odd sizes
      {{5, 64}, 96, false},    // no bias
      {{1, 1, 3}, 1, true},    // one-element dimensions
      {{0, 45}, 61, true},     // empty batch
      {{3, 0}, 5, true},       // K = 0: y is the bias on every row
      {{4, 0}, 6, false},      // K = 0 without bias: zeros
  };
  uint32_t seed = 10;
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << "x " << shape_str(cs.x) << " n " << cs.n << " bias " << cs.bias);
    const int64_t k = cs.x.back();
    Shape y_shape = cs.x;
    y_shape.back() = cs.n;
    const Tensor x = random_host(cs.x, seed++, dt), w = random_host({cs.n, k}, seed++, dt);
    const Tensor bias = cs.bias ? random_host({cs.n}, seed++, dt) : Tensor();
    Tensor want = host_filled(y_shape, NAN);
    linear(cpu, x, w, bias, want);
    Tensor y = nan_device(gpu, y_shape, dt);
    const Tensor bias_dev = cs.bias ? upload(gpu, bias, dt) : Tensor();
    linear(gpu, upload(gpu, x, dt), upload(gpu, w, dt), bias_dev, y);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GemmCuda, kAllDtypes, dtype_param_name);

// Pointers one float past an aligned address and padded leading dimensions: the cached algorithm must be one that
// runs on 4-byte aligned operands, and the padding columns of C must stay untouched.
TEST(GemmRawCuda, UnalignedPointersAndLeadingDimensions) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const int64_t m = 33, n = 20, k = 45, pad = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "trans_a " << ta << " trans_b " << tb);
      const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
      const Tensor a = random_host({(ta ? k : m) * lda + 1}, 20, DType::kF32);
      const Tensor b = random_host({(tb ? n : k) * ldb + 1}, 21, DType::kF32);
      Tensor c = random_host({m * ldc + 1}, 22, DType::kF32);
      const Tensor a_dev = upload(gpu, a, DType::kF32), b_dev = upload(gpu, b, DType::kF32);
      Tensor c_dev = upload(gpu, c, DType::kF32);
      gemm_raw(cpu, ta, tb, m, n, k, 1.5f, a.data<float>() + 1, lda, b.data<float>() + 1, ldb, 0.5f,
               c.data<float>() + 1, ldc);
      gemm_raw(gpu, ta, tb, m, n, k, 1.5f, a_dev.data<float>() + 1, lda, b_dev.data<float>() + 1, ldb, 0.5f,
               c_dev.data<float>() + 1, ldc);
      EXPECT_TRUE(close_to(download(gpu, c_dev), c, kF32Tol));
    }
}

TEST(GemmRawCuda, EmptyInnerDimensionScalesC) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  const Tensor c0 = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor c = upload(gpu, c0, DType::kF32);
  gemm_raw(gpu, false, false, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 2.0f, c.data<float>(), 3);  // C = 2C
  EXPECT_TRUE(same_values(download(gpu, c), Tensor::from_vector({2, 4, 6, 8, 10, 12}, {2, 3})));
  Tensor nan = nan_device(gpu, {2, 3}, DType::kF32);
  gemm_raw(gpu, false, false, 2, 3, 0, 1.0f, nullptr, 1, nullptr, 3, 0.0f, nan.data<float>(), 3);  // beta 0: zeros
  EXPECT_TRUE(same_values(download(gpu, nan), host_filled({2, 3}, 0.0f)));
}

// A feed-forward block's ops captured into a CUDA graph and replayed: the path allocates nothing and syncs nothing
// (the capture would fail otherwise), and the replay reads the live buffers. Eager and replay run the same kernels
// with the same cached GEMM algorithm (deterministic reductions only), so the results are identical bit for bit.
TEST(CudaGraph, LinearSiluLayerNormReplayEqualsEager) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  for (DType dt : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(dtype_name(dt));
    Context gpu = Context::cuda(0);
    const int64_t rows = 24, in = 80, out = 176;
    // Every tensor exists before the capture begins.
    Tensor x = upload(gpu, random_host({rows, in}, 30, dt), dt);
    const Tensor w = upload(gpu, random_host({out, in}, 31, dt, -0.2f, 0.2f), dt);
    const Tensor bias = upload(gpu, random_host({out}, 32, dt), dt);
    const Tensor gamma = upload(gpu, random_host({out}, 33, dt, 0.5f, 1.5f), dt);
    const Tensor beta = upload(gpu, random_host({out}, 34, dt), dt);
    Tensor y = nan_device(gpu, {rows, out}, dt), z = nan_device(gpu, {rows, out}, dt);
    auto forward = [&] {
      linear(gpu, x, w, bias, y);
      silu(gpu, y, y);
      layer_norm(gpu, y, gamma, beta, 1e-5f, z);
    };
    forward();  // eager; also fills the GEMM algorithm cache, so the capture makes no heuristic query
    const Tensor eager = download(gpu, z);

    const auto stream = static_cast<cudaStream_t>(gpu.stream().handle());
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    try {
      forward();
    } catch (const std::exception& e) {
      cudaStreamEndCapture(stream, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      FAIL() << "an op failed while capturing: " << e.what();
    }
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

    // Poisoned outputs, then a replay: it must rewrite them with the eager values.
    Tensor poison = host_filled({rows, out}, NAN).to(dt);
    copy(gpu, poison, y);
    copy(gpu, poison, z);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    EXPECT_TRUE(same_values(download(gpu, z), eager));

    // New values in the same input buffer: the replay computes with them, as an eager run does.
    const Tensor x2 = random_host({rows, in}, 35, dt).to(dt);
    copy(gpu, x2, x);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    const Tensor replayed = download(gpu, z);
    forward();
    EXPECT_TRUE(same_values(replayed, download(gpu, z)));
    EXPECT_FALSE(same_values(replayed, eager));  // the new input did change the output

    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
    EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  }
}

}  // namespace
}  // namespace steno::ops
