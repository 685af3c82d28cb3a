#include "steno/ops/lstm.h"

#include <gtest/gtest.h>

#include "ops_test_util.h"

namespace steno::ops {
namespace {

using testing::all_close;
using testing::nan_tensor;
using testing::pat_tensor;

// Expected values: tests/ops/reference_values.py: torch.nn.LSTMCell(3, 2) / torch.nn.LSTM(3, 2) with
// weight_ih = pat(24,50,1/16), weight_hh = pat(16,51,1/16), bias_ih = pat(8,52,1/8), bias_hh = pat(8,53,1/8);
// x = pat(6,54,1/8) [2,3], h0 = pat(4,55,1/16), c0 = pat(4,56,1/16); sequence xs = pat(24,57,1/8) [4,2,3].
// kLstmCellH: [2, 2]
const std::vector<float> kLstmCellH = {
    0.344241053f, 0.335799009f, 0.246909752f, -0.106150307f};
// kLstmCellC: [2, 2]
const std::vector<float> kLstmCellC = {
    0.811036944f, 1.18242812f, 0.990344524f, -0.113693953f};
// kLstmLayerY: [4, 2, 2]
const std::vector<float> kLstmLayerY = {
    0.279334515f, 0.348963499f, 0.0819858015f, 0.0564888902f, 0.519679368f, 0.0605878718f, 0.345012039f, 0.485775471f,
    0.144295484f, -0.0983101428f, 0.408294886f, 0.0267397501f, 0.432848871f, -0.0843481421f, 0.269686043f,
    0.147397563f};
// kLstmLayerH: [2, 2]
const std::vector<float> kLstmLayerH = {
    0.432848871f, -0.0843481421f, 0.269686043f, 0.147397563f};
// kLstmLayerC: [2, 2]
const std::vector<float> kLstmLayerC = {
    1.01054811f, -0.18946901f, 0.985989869f, 0.166413784f};
// kLstmLayerNoBiasY: [4, 2, 2]
const std::vector<float> kLstmLayerNoBiasY = {
    0.246814728f, -0.126825422f, 0.0615525916f, 0.0451080799f, 0.243645102f, 0.027734844f, 0.300302297f,
    -0.205404133f, 0.0766394287f, -0.367883742f, 0.375436962f, -0.00153852452f, 0.285501182f, -0.476127863f,
    0.245319083f, -0.564122796f};

struct LstmWeights {
  Tensor w_ih = pat_tensor({8, 3}, 50), w_hh = pat_tensor({8, 2}, 51);
  Tensor b_ih = pat_tensor({8}, 52, 0.125f), b_hh = pat_tensor({8}, 53, 0.125f);
};

class LstmTest : public ::testing::TestWithParam<GemmBackend> {
 protected:
  Context ctx_ = Context::cpu(2, GetParam());
  LstmWeights w_;
};

TEST_P(LstmTest, CellMatchesTorch) {
  const Tensor x = pat_tensor({2, 3}, 54, 0.125f), h = pat_tensor({2, 2}, 55), c = pat_tensor({2, 2}, 56);
  Tensor h1 = nan_tensor({2, 2}), c1 = nan_tensor({2, 2});
  lstm_cell(ctx_, x, h, c, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh, h1, c1);
  EXPECT_TRUE(all_close(h1, kLstmCellH, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(c1, kLstmCellC, 1e-6f, 1e-5f));
  // In place: h_out = h, c_out = c.
  Tensor hh = h.clone(), cc = c.clone();
  lstm_cell(ctx_, x, hh, cc, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh, hh, cc);
  EXPECT_TRUE(all_close(hh, kLstmCellH, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(cc, kLstmCellC, 1e-6f, 1e-5f));
}

// The input products given (x·w_ihᵀ + b_ih + b_hh, summed here by hand), the step must give torch's cell.
Tensor input_products(const Tensor& x, const LstmWeights& w) {
  const int64_t batch = x.dim(0), in = x.dim(1), n4 = w.w_ih.dim(0);
  Tensor z = Tensor::zeros({batch, n4});
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < n4; ++j) {
      double sum = static_cast<double>(w.b_ih.data<float>()[j]) + w.b_hh.data<float>()[j];
      for (int64_t k = 0; k < in; ++k)
        sum += static_cast<double>(x.data<float>()[b * in + k]) * w.w_ih.data<float>()[j * in + k];
      z.data<float>()[b * n4 + j] = static_cast<float>(sum);
    }
  return z;
}

TEST_P(LstmTest, CellFromInputProductsMatchesTorch) {
  const Tensor x = pat_tensor({2, 3}, 54, 0.125f), h = pat_tensor({2, 2}, 55), c = pat_tensor({2, 2}, 56);
  Tensor z = input_products(x, w_), h1 = nan_tensor({2, 2}), c1 = nan_tensor({2, 2});
  lstm_cell_projected(ctx_, z, h, c, w_.w_hh, h1, c1);
  EXPECT_TRUE(all_close(h1, kLstmCellH, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(c1, kLstmCellC, 1e-6f, 1e-5f));
  // In place, as the decoders step.
  Tensor hh = h.clone(), cc = c.clone();
  z = input_products(x, w_);
  lstm_cell_projected(ctx_, z, hh, cc, w_.w_hh, hh, cc);
  EXPECT_TRUE(all_close(hh, kLstmCellH, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(cc, kLstmCellC, 1e-6f, 1e-5f));
}

TEST_P(LstmTest, LayerMatchesTorch) {
  const Tensor xs = pat_tensor({4, 2, 3}, 57, 0.125f);
  Tensor h = pat_tensor({2, 2}, 55), c = pat_tensor({2, 2}, 56), y = nan_tensor({4, 2, 2});
  lstm_layer(ctx_, xs, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh, h, c, y);
  EXPECT_TRUE(all_close(y, kLstmLayerY, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(h, kLstmLayerH, 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(c, kLstmLayerC, 1e-6f, 1e-5f));

  // Without biases (both undefined).
  h = pat_tensor({2, 2}, 55), c = pat_tensor({2, 2}, 56);
  lstm_layer(ctx_, xs, w_.w_ih, w_.w_hh, Tensor(), Tensor(), h, c, y);
  EXPECT_TRUE(all_close(y, kLstmLayerNoBiasY, 1e-6f, 1e-5f));
}

TEST_P(LstmTest, LayerEqualsRepeatedCells) {
  // A wider layer (H = 40, In = 24, B = 3) stepped with lstm_cell must equal lstm_layer.
  const int64_t T = 5, B = 3, In = 24, H = 40;
  const Tensor xs = testing::random_tensor({T, B, In}, 1), w_ih = testing::random_tensor({4 * H, In}, 2, -0.3f, 0.3f);
  const Tensor w_hh = testing::random_tensor({4 * H, H}, 3, -0.3f, 0.3f), b_ih = testing::random_tensor({4 * H}, 4);
  Tensor h = testing::random_tensor({B, H}, 5), c = testing::random_tensor({B, H}, 6);
  Tensor hc = h.clone(), cc = c.clone(), y = nan_tensor({T, B, H});
  lstm_layer(ctx_, xs, w_ih, w_hh, b_ih, Tensor(), h, c, y);
  for (int64_t t = 0; t < T; ++t) {
    lstm_cell(ctx_, xs.narrow0(t, t + 1).reshape({B, In}), hc, cc, w_ih, w_hh, b_ih, Tensor(), hc, cc);
    EXPECT_TRUE(all_close(y.narrow0(t, t + 1).reshape({B, H}), hc.to_vector(), 1e-6f, 1e-5f)) << "step " << t;
  }
  EXPECT_TRUE(all_close(h, hc.to_vector(), 1e-6f, 1e-5f));
  EXPECT_TRUE(all_close(c, cc.to_vector(), 1e-6f, 1e-5f));
}

INSTANTIATE_TEST_SUITE_P(Backends, LstmTest, ::testing::Values(GemmBackend::kOneDnn, GemmBackend::kOpenBlas),
                         testing::backend_param_name);

TEST(Lstm, Errors) {
  Context ctx = Context::cpu(1);
  LstmWeights w;
  const Tensor x = pat_tensor({2, 3}, 1);
  Tensor h = Tensor::zeros({2, 2}), c = Tensor::zeros({2, 2});
  EXPECT_THROW(lstm_cell(ctx, x, h, c, pat_tensor({8, 4}, 1), w.w_hh, w.b_ih, w.b_hh, h, c), Error);  // w_ih In
  EXPECT_THROW(lstm_cell(ctx, x, h, c, w.w_ih, pat_tensor({8, 3}, 1), w.b_ih, w.b_hh, h, c), Error);  // w_hh H
  EXPECT_THROW(lstm_cell(ctx, x, h, c, w.w_ih, w.w_hh, pat_tensor({6}, 1), w.b_hh, h, c), Error);     // bias 4H
  Tensor c3 = Tensor::zeros({3, 2});
  EXPECT_THROW(lstm_cell(ctx, x, h, c3, w.w_ih, w.w_hh, w.b_ih, w.b_hh, h, c3), Error);               // c batch
  EXPECT_THROW(lstm_cell(ctx, x, h, c, w.w_ih, w.w_hh, w.b_ih, w.b_hh, c, h), Error);                 // crossed
  Tensor z = Tensor::zeros({2, 8}), z_bad = Tensor::zeros({2, 6});
  EXPECT_THROW(lstm_cell_projected(ctx, z_bad, h, c, w.w_hh, h, c), Error);                           // z 4H
  EXPECT_THROW(lstm_cell_projected(ctx, z, h, c, pat_tensor({8, 3}, 1), h, c), Error);                // w_hh H
  EXPECT_THROW(lstm_cell_projected(ctx, z, h, c3, w.w_hh, h, c3), Error);                             // c batch
  EXPECT_THROW(lstm_cell_projected(ctx, z, h, c, w.w_hh, c, h), Error);                               // crossed
  Tensor y = Tensor::zeros({4, 2, 2});
  EXPECT_THROW(lstm_layer(ctx, x, w.w_ih, w.w_hh, w.b_ih, w.b_hh, h, c, y), Error);                   // x rank
  Tensor y_bad = Tensor::zeros({4, 2, 3});
  EXPECT_THROW(lstm_layer(ctx, pat_tensor({4, 2, 3}, 1), w.w_ih, w.w_hh, w.b_ih, w.b_hh, h, c, y_bad), Error);
}

}  // namespace
}  // namespace steno::ops
