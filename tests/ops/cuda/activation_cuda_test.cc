// Activations and softmax on CUDA against the CPU kernels.
#include "cuda_test_util.h"
#include "steno/ops/activation.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// f32 bound: both sides use exp within ~2 ulp, so they agree to ~1e-7 of the output's scale.
constexpr float kF32Tol = 1e-5f;

// Odd sizes (vector loads plus a scalar tail), a single element, an empty batch, and a multiple of the vector
// width.
const Shape kShapes[] = {{3, 5, 77}, {1}, {0, 8}, {2, 1029}, {4099}, {4, 64}};

class ActivationCuda : public ::testing::TestWithParam<DType> {};

TEST_P(ActivationCuda, Relu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  uint32_t seed = 1;
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor x = random_host(shape, seed++, dt, -4.0f, 4.0f);
    Tensor want = host_filled(shape, NAN);
    relu(cpu, x, want);
    Tensor y = nan_device(gpu, shape, dt);
    relu(gpu, upload(gpu, x, dt), y);
    EXPECT_TRUE(same_values(download(gpu, y), want));  // a selection: exact in every dtype
  }
}

// A smooth activation on the GPU against the CPU, out of place and in place, on random inputs in [lo, hi].
template <typename Op>
void check_smooth_activation(Op op, DType dt, uint32_t seed, float lo, float hi) {
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor x = random_host(shape, seed++, dt, lo, hi);
    Tensor want = host_filled(shape, NAN);
    op(cpu, x, want);
    Tensor y = nan_device(gpu, shape, dt);
    op(gpu, upload(gpu, x, dt), y);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
    Tensor inplace = upload(gpu, x, dt);
    op(gpu, inplace, inplace);
    EXPECT_TRUE(close_to(download(gpu, inplace), want, tolerance(dt, kF32Tol)));
  }
}

TEST_P(ActivationCuda, SiluOutOfPlaceAndInPlace) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  check_smooth_activation([](Context& c, const Tensor& x, Tensor& y) { silu(c, x, y); }, GetParam(), 20, -6.0f, 6.0f);
}

TEST_P(ActivationCuda, SigmoidOutOfPlaceAndInPlace) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  check_smooth_activation([](Context& c, const Tensor& x, Tensor& y) { sigmoid(c, x, y); }, GetParam(), 120, -12.0f,
                          12.0f);
}

TEST_P(ActivationCuda, Glu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{3, 5, 2 * 37}, {1, 2}, {0, 6}, {2, 2 * 700}};
  uint32_t seed = 40;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape_str(shape));
    Shape half = shape;
    half.back() /= 2;
    const Tensor x = random_host(shape, seed++, dt, -4.0f, 4.0f);
    Tensor want = host_filled(half, NAN);
    glu(cpu, x, want);
    Tensor y = nan_device(gpu, half, dt);
    glu(gpu, upload(gpu, x, dt), y);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
  }
}

// Row lengths on both sides of the one-warp-per-row limit (1024), including a full warp, a warp plus one and a
// joint's vocabulary (8192); inputs near 80 would overflow exp without the max subtraction.
TEST_P(ActivationCuda, Softmax) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{3, 1},    {3, 7},    {5, 32},   {2, 33},    {2, 3, 40}, {4, 1000},
                          {3, 1024}, {3, 1025}, {2, 3001}, {2, 8192},  {0, 16}};
  uint32_t seed = 60;
  for (const Shape& shape : shapes)
    for (float offset : {0.0f, 80.0f}) {
      SCOPED_TRACE(::testing::Message() << shape_str(shape) << " offset " << offset);
      const Tensor x = random_host(shape, seed++, dt, offset - 8.0f, offset + 8.0f);
      Tensor want = host_filled(shape, NAN);
      softmax(cpu, x, want);
      Tensor y = nan_device(gpu, shape, dt);
      softmax(gpu, upload(gpu, x, dt), y);
      EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
      Tensor inplace = upload(gpu, x, dt);
      softmax(gpu, inplace, inplace);
      EXPECT_TRUE(close_to(download(gpu, inplace), want, tolerance(dt, kF32Tol)));
    }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ActivationCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
