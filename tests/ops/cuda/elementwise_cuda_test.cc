// Elementwise glue on CUDA against the CPU kernels.
#include <vector>

#include "cuda_test_util.h"
#include "steno/ops/elementwise.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// f32 bound: one multiply-add per element; the GPU may fuse it (one rounding instead of two), ~1e-7.
constexpr float kF32Tol = 1e-5f;

const Shape kShapes[] = {{3, 5, 77}, {1}, {0, 4}, {2, 1029}, {4, 64}, {100003}};

class ElementwiseCuda : public ::testing::TestWithParam<DType> {};

TEST_P(ElementwiseCuda, AddWithAlphaAndAliasing) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  uint32_t seed = 1;
  for (const Shape& shape : kShapes)
    for (float alpha : {1.0f, 0.5f, -2.0f}) {
      SCOPED_TRACE(::testing::Message() << shape_str(shape) << " alpha " << alpha);
      const Tensor a = random_host(shape, seed++, dt), b = random_host(shape, seed++, dt);
      Tensor want = host_filled(shape, NAN);
      add(cpu, a, b, alpha, want);
      const Tensor a_dev = upload(gpu, a, dt), b_dev = upload(gpu, b, dt);
      Tensor y = nan_device(gpu, shape, dt);
      add(gpu, a_dev, b_dev, alpha, y);
      EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
      Tensor into_a = upload(gpu, a, dt);  // y aliases a: the residual update x += alpha * f(x)
      add(gpu, into_a, b_dev, alpha, into_a);
      EXPECT_TRUE(close_to(download(gpu, into_a), want, tolerance(dt, kF32Tol)));
      Tensor into_b = upload(gpu, b, dt);
      add(gpu, a_dev, into_b, alpha, into_b);
      EXPECT_TRUE(close_to(download(gpu, into_b), want, tolerance(dt, kF32Tol)));
    }
}

// Views that start one row into a buffer are not 16-byte aligned: the kernels must take their scalar path.
TEST_P(ElementwiseCuda, UnalignedViews) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Tensor a = random_host({9, 3}, 5, dt), b = random_host({9, 3}, 6, dt);
  Tensor want = host_filled({8, 3}, NAN);
  add(cpu, a.narrow0(1, 9), b.narrow0(1, 9), 0.5f, want);
  Tensor y = nan_device(gpu, {9, 3}, dt);
  Tensor y_view = y.narrow0(1, 9);
  add(gpu, upload(gpu, a, dt).narrow0(1, 9), upload(gpu, b, dt).narrow0(1, 9), 0.5f, y_view);
  EXPECT_TRUE(close_to(download(gpu, y).narrow0(1, 9), want, tolerance(dt, kF32Tol)));

  Tensor scaled = a.narrow0(1, 9).clone();
  scale(cpu, scaled, 3.0f);
  Tensor x = upload(gpu, a, dt);
  Tensor x_view = x.narrow0(1, 9);
  scale(gpu, x_view, 3.0f);
  const Tensor got = download(gpu, x);
  EXPECT_TRUE(close_to(got.narrow0(1, 9), scaled, tolerance(dt, kF32Tol)));
  EXPECT_TRUE(same_values(got.narrow0(0, 1), a.narrow0(0, 1)));  // the row before the view is untouched
}

TEST_P(ElementwiseCuda, Scale) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  uint32_t seed = 30;
  for (const Shape& shape : kShapes) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor x = random_host(shape, seed++, dt, -3.0f, 3.0f);
    Tensor want = x.clone();
    scale(cpu, want, 0.37f);
    Tensor y = upload(gpu, x, dt);
    scale(gpu, y, 0.37f);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, kF32Tol)));
  }
}

TEST_P(ElementwiseCuda, ZeroPaddedFrames) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  struct Case {
    Shape shape;
    int time_axis;
    std::vector<int64_t> lengths;
  };
  const Case cases[] = {
      {{3, 10, 7}, 1, {10, 0, 4}},   // [B, T, C]: a full, an empty and a partial sequence
      {{2, 3, 9, 5}, 2, {9, 2}},     // [B, C, T, F]: outer and inner dimensions
      {{2, 4, 6}, -1, {6, 3}},       // [B, C, T], time last (negative axis)
      {{3, 10, 7}, 1, {10, 10, 10}}, // nothing padded
      {{1, 1, 1}, 1, {0}},           // one element
      {{0, 5, 3}, 1, {}},            // empty batch
  };
  uint32_t seed = 50;
  for (const Case& cs : cases) {
    SCOPED_TRACE(::testing::Message() << shape_str(cs.shape) << " axis " << cs.time_axis);
    const Tensor x = random_host(cs.shape, seed++, dt);
    Tensor want = x.clone();
    zero_padded_frames(cpu, want, cs.time_axis, cs.lengths);
    Tensor y = upload(gpu, x, dt);
    zero_padded_frames(gpu, y, cs.time_axis, cs.lengths);
    EXPECT_TRUE(same_values(download(gpu, y), want));  // zeros and untouched values: exact
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ElementwiseCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
