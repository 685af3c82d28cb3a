#include "steno/ops/gemm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::pat;
using testing::pat_tensor;
using testing::random_values;

// Naive C = alpha * op(A) op(B) + beta * C in double.
std::vector<float> naive_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const std::vector<float>& a, int64_t lda, const std::vector<float>& b, int64_t ldb,
                              float beta, std::vector<float> c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += double(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = static_cast<float>(alpha * s + (beta == 0.0f ? 0.0 : beta * double(c[i * ldc + j])));
    }
  return c;
}

class GemmBackendTest : public ::testing::TestWithParam<GemmBackend> {
 protected:
  Context ctx_ = Context::cpu(2, GetParam());
};

TEST_P(GemmBackendTest, HandComputed) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {7, 8, 9, 10, 11, 12};
  std::vector<float> c(4, NAN);  // beta = 0: C is not read
  gemm_raw(ctx_, false, false, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
  // Aᵀ·Bᵀ with A stored as [3, 2] and B as [2, 3]: the same numbers read the other way.
  const std::vector<float> at = {1, 4, 2, 5, 3, 6}, bt = {7, 9, 11, 8, 10, 12};
  gemm_raw(ctx_, true, true, 2, 2, 3, 1.0f, at.data(), 2, bt.data(), 3, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{58, 64, 139, 154}));
  // alpha and beta: C = 0.5 * A·B + 2 * C
  gemm_raw(ctx_, false, false, 2, 2, 3, 0.5f, a.data(), 3, b.data(), 2, 2.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{145, 160, 347.5f, 385}));
}

TEST_P(GemmBackendTest, TransposesAndLeadingDimensions) {
  const int64_t m = 37, n = 29, k = 53, pad = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
      const auto a = random_values((ta ? k : m) * lda, 1), b = random_values((tb ? n : k) * ldb, 2);
      auto c = random_values(m * ldc, 3);
      const auto want = naive_gemm(ta, tb, m, n, k, 0.5f, a, lda, b, ldb, 2.0f, c, ldc);
      gemm_raw(ctx_, ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
      EXPECT_TRUE(all_close(c, want, 1e-4f, 1e-4f)) << "trans_a " << ta << " trans_b " << tb;
    }
}

TEST_P(GemmBackendTest, SingleRowProducts) {
  // m = 1 (an LSTM step at batch 1) takes a GEMV path with OpenBLAS; every transpose and stride combination.
  const int64_t n = 45, k = 67, pad = 2;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t lda = (ta ? 1 : k) + pad, ldb = (tb ? k : n) + pad;
      const auto a = random_values((ta ? k : 1) * lda, 4), b = random_values((tb ? n : k) * ldb, 5);
      auto c = random_values(n, 6);
      const auto want = naive_gemm(ta, tb, 1, n, k, 1.5f, a, lda, b, ldb, -1.0f, c, n);
      gemm_raw(ctx_, ta, tb, 1, n, k, 1.5f, a.data(), lda, b.data(), ldb, -1.0f, c.data(), n);
      EXPECT_TRUE(all_close(c, want, 1e-4f, 1e-4f)) << "trans_a " << ta << " trans_b " << tb;
    }
}

TEST_P(GemmBackendTest, DegenerateSizes) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> c = {5, 6, 7, 8};
  gemm_raw(ctx_, false, false, 0, 2, 2, 1.0f, a.data(), 2, b.data(), 2, 0.0f, c.data(), 2);  // m = 0: no-op
  gemm_raw(ctx_, false, false, 2, 0, 2, 1.0f, a.data(), 2, b.data(), 1, 0.0f, c.data(), 1);  // n = 0: no-op
  EXPECT_EQ(c, (std::vector<float>{5, 6, 7, 8}));
  gemm_raw(ctx_, false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 2.0f, c.data(), 2);  // k = 0: C = beta*C
  EXPECT_EQ(c, (std::vector<float>{10, 12, 14, 16}));
  c = {NAN, NAN, NAN, NAN};
  gemm_raw(ctx_, false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, c.data(), 2);  // beta = 0: zeros
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

TEST_P(GemmBackendTest, LinearMatchesTorch) {
  // reference_values.py: F.linear(pat(15,1).reshape(3,5), pat(20,2).reshape(4,5), pat(4,3))
  const std::vector<float> kLinear = {-0.4140625f, 0.53125f, -0.92578125f, 0.01953125f, 0.96875f,    0.4375f,
                                      0.546875f,   0.015625f, 1.0703125f,  -1.09765625f, 0.41796875f, -1.75f};
  const Tensor x = pat_tensor({3, 5}, 1), w = pat_tensor({4, 5}, 2), bias = pat_tensor({4}, 3);
  Tensor y = testing::nan_tensor({3, 4});
  linear(ctx_, x, w, bias, y);
  EXPECT_TRUE(all_close(y, kLinear));
  // Leading dimensions are kept; without bias the result drops it.
  Tensor y3 = testing::nan_tensor({1, 3, 4});
  linear(ctx_, x.reshape({1, 3, 5}), w, Tensor(), y3);
  std::vector<float> no_bias = kLinear;
  const auto bv = pat(4, 3);
  for (size_t i = 0; i < no_bias.size(); ++i) no_bias[i] -= bv[i % 4];
  EXPECT_TRUE(all_close(y3, no_bias));
}

INSTANTIATE_TEST_SUITE_P(Backends, GemmBackendTest,
                         ::testing::Values(GemmBackend::kOneDnn, GemmBackend::kOpenBlas),
                         testing::backend_param_name);

TEST(Gemm, BackendsAndThreadCountsAgree) {
  const int64_t m = 64, n = 96, k = 160;
  const Tensor a = testing::random_tensor({m, k}, 7), b = testing::random_tensor({n, k}, 8);
  Context ref_ctx = Context::cpu(1, GemmBackend::kOneDnn);
  Tensor ref = Tensor::zeros({m, n});
  gemm(ref_ctx, a, false, b, true, ref);
  for (GemmBackend be : {GemmBackend::kOneDnn, GemmBackend::kOpenBlas})
    for (int threads : {1, 2}) {
      Context ctx = Context::cpu(threads, be);
      Tensor c = testing::nan_tensor({m, n});
      gemm(ctx, a, false, b, true, c);
      EXPECT_TRUE(all_close(c, ref.to_vector(), 1e-5f, 1e-5f)) << gemm_backend_name(be) << " x" << threads;
    }
}

TEST(Gemm, TensorShapesAndTransposes) {
  Context ctx = Context::cpu(2);
  const Tensor a = Tensor::from_vector({1, 4, 2, 5, 3, 6}, {3, 2});  // Aᵀ = [[1,2,3],[4,5,6]]
  const Tensor b = Tensor::from_vector({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor c = Tensor::from_vector({1, 1, 1, 1}, {2, 2});
  gemm(ctx, a, true, b, false, c, 1.0f, 1.0f);
  EXPECT_EQ(c.to_vector(), (std::vector<float>{59, 65, 140, 155}));
  Tensor bad = Tensor::zeros({3, 2});
  EXPECT_THROW(gemm(ctx, a, false, b, false, c), Error);     // [3,2]·[3,2]: inner 2 vs 3
  EXPECT_THROW(gemm(ctx, a, true, b, false, bad), Error);    // c must be [2,2]
  EXPECT_THROW(gemm(ctx, a.reshape({6}), true, b, false, c), Error);  // not 2-D
}

TEST(Gemm, ArgumentErrors) {
  Context ctx = Context::cpu(1);
  const std::vector<float> a(6, 1.0f), b(6, 1.0f);
  std::vector<float> c(4);
  EXPECT_THROW(gemm_raw(ctx, false, false, -1, 2, 3, 1, a.data(), 3, b.data(), 2, 0, c.data(), 2), Error);
  EXPECT_THROW(gemm_raw(ctx, false, false, 2, 2, 3, 1, a.data(), 2, b.data(), 2, 0, c.data(), 2), Error);  // lda < k
  EXPECT_THROW(gemm_raw(ctx, false, true, 2, 2, 3, 1, a.data(), 3, b.data(), 2, 0, c.data(), 2), Error);   // ldb < k
  EXPECT_THROW(gemm_raw(ctx, false, false, 2, 2, 3, 1, a.data(), 3, b.data(), 2, 0, c.data(), 1), Error);  // ldc < n
  EXPECT_THROW(gemm_raw(ctx, false, false, 2, 2, 3, 1, nullptr, 3, b.data(), 2, 0, c.data(), 2), Error);

  const Tensor x = pat_tensor({3, 5}, 1), w = pat_tensor({4, 5}, 2);
  Tensor y = Tensor::zeros({3, 4});
  try {
    Tensor wrong = Tensor::zeros({3, 3});
    linear(ctx, x, w, Tensor(), wrong);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("linear: y must be [3, 4]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(linear(ctx, x, pat_tensor({4, 6}, 2), Tensor(), y), Error);         // K mismatch
  EXPECT_THROW(linear(ctx, x, w, pat_tensor({5}, 3), y), Error);                   // bias [N]
  EXPECT_THROW(linear(ctx, x, w, Tensor(), const_cast<Tensor&>(x)), Error);        // shape (and alias)
  Tensor xi = Tensor::zeros({3, 5}, DType::kI32);
  EXPECT_THROW(linear(ctx, xi, w, Tensor(), y), Error);                            // dtype
  std::vector<float> dev(20);
  Tensor wc = Tensor::wrap(dev.data(), {4, 5}, DType::kF32, Device::cuda());
  EXPECT_THROW(linear(ctx, x, wc, Tensor(), y), Error);                            // device mismatch
}

}  // namespace
}  // namespace steno::ops
