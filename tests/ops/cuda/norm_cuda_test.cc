// Layer norm and batch norm on CUDA against the CPU kernels.
#include "cuda_test_util.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

class NormCuda : public ::testing::TestWithParam<DType> {};

// Rows on both sides of the one-warp-per-row limit (1024), a one-element row (y = beta) and an empty batch. The
// inputs sit on an offset of 1, which a one-pass variance would lose precision on. f32 bound: the mean's
// summation order differs (the CPU sums 2000 values with few partial sums), ~5e-6 of the output's scale.
TEST_P(NormCuda, LayerNorm) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{4, 13, 176}, {3, 1024}, {2, 1025}, {5, 2000}, {2, 1}, {0, 64}};
  uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t d = shape.back();
    const Tensor x = random_host(shape, seed++, dt, 0.0f, 2.0f);
    const Tensor gamma = random_host({d}, seed++, dt, 0.5f, 1.5f), beta = random_host({d}, seed++, dt, -0.5f, 0.5f);
    Tensor want = host_filled(shape, NAN);
    layer_norm(cpu, x, gamma, beta, 1e-5f, want);
    const Tensor g_dev = upload(gpu, gamma, dt), b_dev = upload(gpu, beta, dt);
    Tensor y = nan_device(gpu, shape, dt);
    layer_norm(gpu, upload(gpu, x, dt), g_dev, b_dev, 1e-5f, y);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, 2e-5f)));
    Tensor inplace = upload(gpu, x, dt);
    layer_norm(gpu, inplace, g_dev, b_dev, 1e-5f, inplace);
    EXPECT_TRUE(close_to(download(gpu, inplace), want, tolerance(dt, 2e-5f)));
  }
}

TEST_P(NormCuda, BatchNorm) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{2, 9, 176}, {3, 1}, {7}, {0, 5}};
  uint32_t seed = 30;
  for (const Shape& shape : shapes) {
    SCOPED_TRACE(shape_str(shape));
    const int64_t c = shape.back();
    const Tensor x = random_host(shape, seed++, dt, -2.0f, 2.0f);
    const Tensor mean = random_host({c}, seed++, dt, -0.5f, 0.5f), var = random_host({c}, seed++, dt, 0.1f, 2.0f);
    const Tensor gamma = random_host({c}, seed++, dt, 0.5f, 1.5f), beta = random_host({c}, seed++, dt, -0.5f, 0.5f);
    Tensor want = host_filled(shape, NAN);
    batch_norm(cpu, x, mean, var, gamma, beta, 1e-5f, want);
    const Tensor m_dev = upload(gpu, mean, dt), v_dev = upload(gpu, var, dt);
    const Tensor g_dev = upload(gpu, gamma, dt), b_dev = upload(gpu, beta, dt);
    Tensor y = nan_device(gpu, shape, dt);
    batch_norm(gpu, upload(gpu, x, dt), m_dev, v_dev, g_dev, b_dev, 1e-5f, y);
    EXPECT_TRUE(close_to(download(gpu, y), want, tolerance(dt, 1e-5f)));
    Tensor inplace = upload(gpu, x, dt);
    batch_norm(gpu, inplace, m_dev, v_dev, g_dev, b_dev, 1e-5f, inplace);
    EXPECT_TRUE(close_to(download(gpu, inplace), want, tolerance(dt, 1e-5f)));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NormCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
