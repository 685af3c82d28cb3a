// LSTM cell and layer on CUDA against the CPU kernels.
#include <cmath>

#include "cuda_test_util.h"
#include "steno/ops/lstm.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// f32 bound: exp / tanh within a few ulp on both sides and the GEMMs' summation order, over a few steps.
constexpr float kF32Tol = 2e-5f;

struct Weights {
  Tensor w_ih, w_hh, b_ih, b_hh;  // host, rounded through the test's dtype
};

// PyTorch's initialisation range, U(-1/sqrt(H), 1/sqrt(H)), keeps the gates out of saturation.
Weights make_weights(int64_t in, int64_t hid, bool bias, uint32_t seed, DType dt) {
  const float r = 1.0f / std::sqrt(static_cast<float>(hid));
  Weights w;
  w.w_ih = random_host({4 * hid, in}, seed, dt, -r, r);
  w.w_hh = random_host({4 * hid, hid}, seed + 1, dt, -r, r);
  if (bias) {
    w.b_ih = random_host({4 * hid}, seed + 2, dt, -r, r);
    w.b_hh = random_host({4 * hid}, seed + 3, dt, -r, r);
  }
  return w;
}

Tensor upload_optional(Context& gpu, const Tensor& t, DType dt) { return t.defined() ? upload(gpu, t, dt) : Tensor(); }

class LstmCuda : public ::testing::TestWithParam<DType> {};

TEST_P(LstmCuda, CellOutOfPlaceAndAliased) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  struct Case {
    int64_t batch, in, hid;
    bool bias;
  };
  const Case cases[] = {{3, 45, 37, true}, {1, 20, 16, false}, {2, 0, 5, true}, {0, 8, 4, true}};
  uint32_t seed = 1;
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << "B " << cs.batch << " In " << cs.in << " H " << cs.hid << " bias " << cs.bias);
    const Weights w = make_weights(cs.in, cs.hid, cs.bias, seed, dt);
    seed += 4;
    const Tensor x = random_host({cs.batch, cs.in}, seed++, dt);
    const Tensor h = random_host({cs.batch, cs.hid}, seed++, dt), c = random_host({cs.batch, cs.hid}, seed++, dt);
    Tensor h_want = host_filled({cs.batch, cs.hid}, NAN), c_want = host_filled({cs.batch, cs.hid}, NAN);
    lstm_cell(cpu, x, h, c, w.w_ih, w.w_hh, w.b_ih, w.b_hh, h_want, c_want);

    const Tensor x_dev = upload(gpu, x, dt), w_ih = upload(gpu, w.w_ih, dt), w_hh = upload(gpu, w.w_hh, dt);
    const Tensor b_ih = upload_optional(gpu, w.b_ih, dt), b_hh = upload_optional(gpu, w.b_hh, dt);
    const Tensor h_dev = upload(gpu, h, dt), c_dev = upload(gpu, c, dt);
    Tensor h_out = nan_device(gpu, {cs.batch, cs.hid}, dt), c_out = nan_device(gpu, {cs.batch, cs.hid}, dt);
    lstm_cell(gpu, x_dev, h_dev, c_dev, w_ih, w_hh, b_ih, b_hh, h_out, c_out);
    EXPECT_TRUE(close_to(download(gpu, h_out), h_want, tolerance(dt, kF32Tol, 2.0f)));
    EXPECT_TRUE(close_to(download(gpu, c_out), c_want, tolerance(dt, kF32Tol, 2.0f)));

    // The decoder's in-place step: h_out is h, c_out is c.
    Tensor h_state = upload(gpu, h, dt), c_state = upload(gpu, c, dt);
    lstm_cell(gpu, x_dev, h_state, c_state, w_ih, w_hh, b_ih, b_hh, h_state, c_state);
    EXPECT_TRUE(close_to(download(gpu, h_state), h_want, tolerance(dt, kF32Tol, 2.0f)));
    EXPECT_TRUE(close_to(download(gpu, c_state), c_want, tolerance(dt, kF32Tol, 2.0f)));
  }
}

// Over several steps the GPU rounds h and c to the dtype after each one (the CPU keeps f32), hence the wider
// 16-bit bound.
TEST_P(LstmCuda, Layer) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  struct Case {
    int64_t steps, batch, in, hid;
    bool bias;
  };
  const Case cases[] = {{6, 2, 20, 33, true}, {1, 1, 8, 5, false}, {5, 3, 17, 64, false}, {0, 2, 4, 3, true}};
  uint32_t seed = 100;
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << "T " << cs.steps << " B " << cs.batch << " In " << cs.in << " H " << cs.hid
                                      << " bias " << cs.bias);
    const Weights w = make_weights(cs.in, cs.hid, cs.bias, seed, dt);
    seed += 4;
    const Tensor x = random_host({cs.steps, cs.batch, cs.in}, seed++, dt);
    const Tensor h0 = random_host({cs.batch, cs.hid}, seed++, dt), c0 = random_host({cs.batch, cs.hid}, seed++, dt);
    Tensor h_want = h0.clone(), c_want = c0.clone(), y_want = host_filled({cs.steps, cs.batch, cs.hid}, NAN);
    lstm_layer(cpu, x, w.w_ih, w.w_hh, w.b_ih, w.b_hh, h_want, c_want, y_want);

    Tensor h = upload(gpu, h0, dt), c = upload(gpu, c0, dt);
    Tensor y = nan_device(gpu, {cs.steps, cs.batch, cs.hid}, dt);
    lstm_layer(gpu, upload(gpu, x, dt), upload(gpu, w.w_ih, dt), upload(gpu, w.w_hh, dt),
               upload_optional(gpu, w.b_ih, dt), upload_optional(gpu, w.b_hh, dt), h, c, y);
    const float tol = tolerance(dt, kF32Tol, 4.0f);
    EXPECT_TRUE(close_to(download(gpu, y), y_want, tol));
    EXPECT_TRUE(close_to(download(gpu, h), h_want, tol));
    EXPECT_TRUE(close_to(download(gpu, c), c_want, tol));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LstmCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
