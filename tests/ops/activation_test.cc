#include "steno/ops/activation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cpu/kernels.h"
#include "ops_test_util.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;

// Expected values: tests/ops/reference_values.py: F.silu(pat(37,35,0.25)), F.glu(pat(24,36,0.25).reshape(2,12)),
// F.softmax(pat(74,37,0.25).reshape(2,37), -1), softmax([1000,1001,1002]), silu of the extremes below.
// kSilu: [37]
const std::vector<float> kSilu = {
    -0.268941432f, -0.238405839f, -0.142277613f, -0.0719448403f, -0.0334642529f, 4.19022942f, 3.12868738f,
    2.03546357f, 0.971624851f, 0.140544131f, -0.240615964f, -0.259082615f, -0.165238291f, -0.0861651376f,
    -0.0407430567f, 4.45055866f, 3.39740729f, 2.31035447f, 1.22636163f, 0.311229676f, -0.188770339f, -0.273638278f,
    -0.189645454f, -0.102592811f, -0.0494412445f, 4.70925665f, 3.66383481f, 2.58476162f, 1.49091733f, 0.509384036f,
    -0.109455876f, -0.278375179f, -0.214536294f, -0.12131238f, -0.0597704127f, 4.96653557f, 3.92805505f};
// kGlu: [2, 6]
const std::vector<float> kGlu = {
    0.0246113464f, 0.744980395f, -0.24550344f, -1.1907177f, -1.98179328f, -2.37594032f, 0.0f, -0.962673068f,
    -1.80930102f, -2.33189964f, -2.2487061f, -1.60410643f};
// kSoftmax: [2, 37]
const std::vector<float> kSoftmax = {
    0.134222835f, 0.0493778214f, 0.0181650855f, 0.00668256171f, 0.00245837681f, 0.000904386339f, 0.000332705124f,
    0.000122395388f, 4.50267435e-05f, 1.65644142e-05f, 0.172345534f, 0.0634023771f, 0.02332443f, 0.00858057849f,
    0.00315661845f, 0.00116125506f, 0.000427201856f, 0.000157158778f, 5.78154868e-05f, 2.12691284e-05f, 0.221296042f,
    0.0814102665f, 0.0299491622f, 0.0110176811f, 0.00405317871f, 0.00149108097f, 0.000548538053f, 0.000201795876f,
    7.42365519e-05f, 2.73101014e-05f, 1.00468251e-05f, 0.104532845f, 0.0384554863f, 0.0141469818f, 0.00520438422f,
    0.00191458594f, 0.000704336795f, 0.00026482268f, 9.74228242e-05f, 3.58398538e-05f, 1.31847455e-05f, 0.13718155f,
    0.0504662767f, 0.0185655039f, 0.00682986761f, 0.00251256768f, 0.000924322056f, 0.000340039056f, 0.000125093386f,
    4.60192859e-05f, 1.6929549e-05f, 0.1761446f, 0.0647999793f, 0.0238385797f, 0.00876972359f, 0.00322620082f,
    0.00118685304f, 0.000436618808f, 0.00016062308f, 5.90899326e-05f, 2.17379711e-05f, 0.226174146f, 0.0832048208f,
    0.0306093413f, 0.0112605477f, 0.00414252421f, 0.00152394944f, 0.000560629705f, 0.00020624412f, 7.5872973e-05f,
    2.79121068e-05f, 1.02682907e-05f, 0.106837101f, 0.0393031724f};
// kSoftmaxLarge: [3]
const std::vector<float> kSoftmaxLarge = {
    0.0900305733f, 0.244728476f, 0.665240943f};
// kSiluExtreme: [7]
const std::vector<float> kSiluExtreme = {
    -0.0f, -4.12230747e-08f, -0.000499750022f, 0.0f, 0.000500250026f, 20.0f, 100.0f};

TEST(Activation, ReluHandComputed) {
  Context ctx = Context::cpu(1);
  Tensor x = Tensor::from_vector({-2, -0.5f, 0, 0.5f, 3}, {5});
  relu(ctx, x, x);  // in place
  EXPECT_EQ(x.to_vector(), (std::vector<float>{0, 0, 0, 0.5f, 3}));
}

TEST(Activation, SiluMatchesTorch) {
  Context ctx = Context::cpu(2);
  Tensor y = nan_tensor({37});
  silu(ctx, pat_tensor({37}, 35, 0.25f), y);
  EXPECT_TRUE(all_close(y, kSilu, 1e-6f, 2e-6f));
  Tensor e = Tensor::from_vector({-100, -20, -1e-3f, 0, 1e-3f, 20, 100}, {7});
  silu(ctx, e, e);
  EXPECT_TRUE(all_close(e, kSiluExtreme, 1e-12f, 2e-6f));
}

TEST(Activation, SigmoidMatchesLibmOverASweepAndSaturates) {
  Context ctx = Context::cpu(2);
  const int64_t n = 50001;  // large enough to split across the pool, with a ragged tail for the vector loop
  std::vector<float> xv(n);
  for (int64_t i = 0; i < n; ++i) xv[i] = -60.0f + 120.0f * static_cast<float>(i) / (n - 1);
  Tensor y = nan_tensor({n});
  sigmoid(ctx, Tensor::from_vector(xv, {n}), y);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double(xv[i]))));
  EXPECT_TRUE(all_close(y, want, 1e-30f, 3e-6f));
  Tensor e = Tensor::from_vector({-1000, -100, 0, 100, 1000}, {5});
  sigmoid(ctx, e, e);  // in place
  const std::vector<float> got = e.to_vector();
  EXPECT_LT(got[0], 1e-30f);
  EXPECT_EQ(got[2], 0.5f);
  EXPECT_EQ(got[3], 1.0f);
  EXPECT_EQ(got[4], 1.0f);
}

TEST(Activation, ExpBasedKernelsAreAccurateEverywhere) {
  // silu and softmax rely on a polynomial exp: compare with libm over a dense sweep (large enough to split
  // across the pool).
  Context ctx = Context::cpu(2);
  const int64_t n = 100001;
  std::vector<float> xv(n);
  for (int64_t i = 0; i < n; ++i) xv[i] = -90.0f + 180.0f * static_cast<float>(i) / (n - 1);
  Tensor y = nan_tensor({n});
  silu(ctx, Tensor::from_vector(xv, {n}), y);
  std::vector<float> want(n);
  for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(xv[i] / (1.0 + std::exp(-double(xv[i]))));
  EXPECT_TRUE(all_close(y, want, 1e-30f, 3e-6f));
}

TEST(Activation, SigmoidAndTanhRowsAreAccurate) {
  // The LSTM's gate kernels (vector body and scalar tail): against libm in double.
  const int64_t n = 20003;
  std::vector<float> x(n), y(n), want(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -30.0f + 60.0f * static_cast<float>(i) / (n - 1);
  cpu::sigmoid_row(x.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double(x[i]))));
  EXPECT_TRUE(all_close(y, want, 1e-30f, 3e-6f));
  cpu::tanh_row(x.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) want[i] = static_cast<float>(std::tanh(double(x[i])));
  EXPECT_TRUE(all_close(y, want, 2e-7f, 2e-6f));
}

TEST(Activation, GluMatchesTorch) {
  Context ctx = Context::cpu(2);
  Tensor y = nan_tensor({2, 6});
  glu(ctx, pat_tensor({2, 12}, 36, 0.25f), y);
  EXPECT_TRUE(all_close(y, kGlu, 1e-6f, 2e-6f));
  // Rows long enough for the vector body: a * sigmoid(b) in double.
  const int64_t rows = 3, c = 37;
  const Tensor x = testing::random_tensor({rows, 2 * c}, 9, -8.0f, 8.0f);
  Tensor wide = nan_tensor({rows, c});
  glu(ctx, x, wide);
  const auto xv = x.to_vector();
  std::vector<float> want(rows * c);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < c; ++i)
      want[r * c + i] = static_cast<float>(xv[r * 2 * c + i] / (1.0 + std::exp(-double(xv[r * 2 * c + c + i]))));
  EXPECT_TRUE(all_close(wide, want, 1e-7f, 3e-6f));
}

TEST(Activation, SoftmaxMatchesTorch) {
  Context ctx = Context::cpu(2);
  Tensor x = pat_tensor({2, 37}, 37, 0.25f);
  softmax(ctx, x, x);  // in place
  EXPECT_TRUE(all_close(x, kSoftmax, 1e-9f, 2e-6f));
  Tensor big = Tensor::from_vector({1000, 1001, 1002}, {1, 3});  // stable: no overflow
  softmax(ctx, big, big);
  EXPECT_TRUE(all_close(big, kSoftmaxLarge, 1e-7f, 1e-6f));
  // Rows sum to one, a row of equal values is uniform, a single entry is 1.
  Tensor flat = Tensor::from_vector({-5, -5, -5, -5}, {4});
  softmax(ctx, flat, flat);
  EXPECT_EQ(flat.to_vector(), (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f}));
  Tensor one = Tensor::from_vector({-7}, {1, 1});
  softmax(ctx, one, one);
  EXPECT_EQ(one.to_vector(), (std::vector<float>{1}));
}

TEST(Activation, Errors) {
  Context ctx = Context::cpu(1);
  Tensor x = pat_tensor({2, 5}, 1);
  Tensor y = Tensor::zeros({2, 2});
  EXPECT_THROW(glu(ctx, x, y), Error);  // odd last dimension
  Tensor x4 = pat_tensor({2, 4}, 1);
  Tensor y3 = Tensor::zeros({2, 3});
  EXPECT_THROW(glu(ctx, x4, y3), Error);  // y must be [2, 2]
  EXPECT_THROW(glu(ctx, x4, x4), Error);  // shape and no aliasing
  EXPECT_THROW(relu(ctx, x, y), Error);
  EXPECT_THROW(silu(ctx, x, y), Error);
  EXPECT_THROW(softmax(ctx, x, y), Error);
  Tensor xi = Tensor::zeros({2, 5}, DType::kI32);
  EXPECT_THROW(relu(ctx, xi, xi), Error);
}

}  // namespace
}  // namespace steno::ops
