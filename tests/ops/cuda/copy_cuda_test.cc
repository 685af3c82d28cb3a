// Device-side cast, merge_channels and copy_frames against the host conversions and the CPU ops.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cuda_test_util.h"

namespace steno::ops {
namespace {

using namespace cuda_testing;

// Values that exercise rounding: ties, the f16 overflow threshold (65520 rounds to infinity), subnormals of each
// format, infinities, signed zeros; then random magnitudes over many binades. No NaN: its payload bits are not
// part of the contract.
std::vector<float> cast_inputs() {
  std::vector<float> v = {0.0f,     -0.0f,     1.0f,    -1.0f,   1.0f / 3.0f, 0.1f,     65504.0f, 65519.0f,
                          65520.0f, -65520.0f, 1e5f,    3.0e38f, 1e-8f,       6e-8f,    3e-8f,    1e-40f,
                          -1e-40f,  1.00048828125f, 1.0009765625f, 2049.0f,    2051.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  const auto mant = random_values(2000, 7, 1.0f, 2.0f), expo = random_values(2000, 8, -30.0f, 20.0f);
  for (size_t i = 0; i < mant.size(); ++i)
    v.push_back((i % 2 ? -1.0f : 1.0f) * mant[i] * std::exp2(std::floor(expo[i])));
  return v;
}

// The raw bytes of a device tensor, without conversion.
Tensor download_raw(Context& gpu, const Tensor& dev) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype());
  copy(gpu, dev, host);
  gpu.synchronize();
  return host;
}

TEST(CopyCuda, CastMatchesHostConversionBitForBit) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  Context gpu = Context::cuda(0);
  const std::vector<float> values = cast_inputs();
  const Tensor f32 = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
  for (DType from : {DType::kF32, DType::kF16, DType::kBF16})
    for (DType to : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(from) << " -> " << dtype_name(to));
      const Tensor src = f32.to(from);  // the source values, in `from` on the host
      const Tensor want = src.to(to);   // the host's conversion (round to nearest even)
      Tensor dst = gpu.scratch(src.shape(), to);
      cast(gpu, upload(gpu, src, from), dst);
      const Tensor got = download_raw(gpu, dst);
      ASSERT_EQ(got.nbytes(), want.nbytes());
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0);
      // On a mismatch, name the first differing value.
      const auto g = got.to_vector(), w = want.to_vector();
      for (size_t i = 0; i < g.size(); ++i)
        if (std::memcmp(&g[i], &w[i], sizeof(float)) != 0) {
          ADD_FAILURE() << "[" << i << "] input " << values[i] << ": got " << g[i] << ", want " << w[i];
          break;
        }
    }
}

class CopyCuda : public ::testing::TestWithParam<DType> {};

TEST_P(CopyCuda, MergeChannels) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(2);
  Context gpu = Context::cuda(0);
  const Shape shapes[] = {{2, 3, 5, 7}, {1, 1, 1, 1}, {3, 4, 1, 9}, {2, 4, 0, 3}, {0, 2, 3, 4}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(shape_str(s));
    const Shape out = {s[0], s[2], s[1] * s[3]};
    const Tensor x = random_host(s, seed++, dt);
    Tensor want = host_filled(out, NAN);
    merge_channels(cpu, x, want);
    Tensor y = nan_device(gpu, out, dt);
    merge_channels(gpu, upload(gpu, x, dt), y);
    EXPECT_TRUE(same_values(download(gpu, y), want));  // a permutation: exact
  }
}

TEST_P(CopyCuda, CopyFramesPadsAndTrims) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const DType dt = GetParam();
  Context cpu = Context::cpu(1);
  Context gpu = Context::cuda(0);
  const Tensor x = random_host({3, 5, 7}, 11, dt);
  for (const int64_t frames : {int64_t{8}, int64_t{5}, int64_t{2}, int64_t{0}}) {
    SCOPED_TRACE(frames);
    Tensor want = host_filled({3, frames, 7}, NAN);
    copy_frames(cpu, x, want);
    Tensor y = nan_device(gpu, {3, frames, 7}, dt);
    copy_frames(gpu, upload(gpu, x, dt), y);
    EXPECT_TRUE(same_values(download(gpu, y), want));  // copies and zeros: exact
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CopyCuda, kAllDtypes, dtype_param_name);

}  // namespace
}  // namespace steno::ops
