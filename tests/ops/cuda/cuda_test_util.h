// Helpers for the CUDA op tests: every op runs on the GPU and, as the reference, the same op on the CPU, on
// seeded random inputs. For f16 / bf16 the inputs are rounded to that dtype first and the CPU reference runs on
// the rounded values in f32, so the only expected differences are f32 summation order and the GPU's rounding of
// its output (and of intermediates an op stores in its dtype).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/dtype.h"
#include "steno/core/tensor.h"
#include "steno/ops/context.h"
#include "steno/ops/copy.h"

namespace steno::ops::cuda_testing {

// The dtypes a CUDA kernel computes in; tests are parameterised over them.
inline const auto kAllDtypes = ::testing::Values(DType::kF32, DType::kF16, DType::kBF16);

inline std::string dtype_param_name(const ::testing::TestParamInfo<DType>& info) { return dtype_name(info.param); }

// Allowed max |gpu - cpu| as a fraction of max(1, max |cpu|): `f32` for f32 (an op-specific bound), and for the
// 16-bit formats a bound from their precision: half an ulp of the output is 2^-11 (f16) or 2^-8 (bf16) relative,
// so 1e-3 and 1e-2 leave a factor of 2 to 2.5 for f32 noise and intermediate roundings. `factor` widens the
// 16-bit bounds for ops that round intermediates (an LSTM's state, step after step).
inline float tolerance(DType dtype, float f32, float factor = 1.0f) {
  switch (dtype) {
    case DType::kF16: return 1e-3f * factor;
    case DType::kBF16: return 1e-2f * factor;
    default: return f32;
  }
}

inline std::vector<float> random_values(int64_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// A CPU f32 tensor of uniform values in [lo, hi), already rounded through `dtype`: the CPU reference's input,
// holding exactly what the GPU gets.
inline Tensor random_host(const Shape& shape, uint32_t seed, DType dtype, float lo = -1.0f, float hi = 1.0f) {
  Tensor t = Tensor::empty(shape);
  const auto v = random_values(t.numel(), seed, lo, hi);
  std::copy(v.begin(), v.end(), t.data<float>());
  return dtype == DType::kF32 ? t : t.to(dtype).to(DType::kF32);
}

inline Tensor host_filled(const Shape& shape, float value) {
  Tensor t = Tensor::empty(shape);
  std::fill_n(t.data<float>(), t.numel(), value);
  return t;
}

// A device copy of a host f32 tensor in `dtype` (exact when the host values were rounded through it).
inline Tensor upload(Context& gpu, const Tensor& host, DType dtype) { return to_context(gpu, host, dtype); }

// A device tensor full of NaN: a kernel that leaves an output element unwritten shows up as NaN.
inline Tensor nan_device(Context& gpu, const Shape& shape, DType dtype) {
  return upload(gpu, host_filled(shape, NAN), dtype);
}

// The device tensor's values as a CPU f32 tensor (waits for the context's queued work).
inline Tensor download(Context& gpu, const Tensor& dev) {
  Tensor host = Tensor::empty(dev.shape(), dev.dtype());
  copy(gpu, dev, host);
  gpu.synchronize();
  return host.to(DType::kF32);
}

// max |actual - expected| <= tol * max(1, max |expected|), NaN in `actual` failing; reports the worst element.
inline ::testing::AssertionResult close_to(const Tensor& actual, const Tensor& expected, float tol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " != expected "
                                         << shape_str(expected.shape());
  const std::vector<float> a = actual.to_vector(), e = expected.to_vector();
  float scale = 1.0f;
  for (float v : e) scale = std::max(scale, std::fabs(v));
  const float allowed = tol * scale;
  size_t worst = 0;
  float worst_err = 0.0f;
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float err = std::fabs(a[i] - e[i]);
    if (!(err <= allowed)) {  // NaN fails too
      ++bad;
      if (!(err <= worst_err)) {
        worst = i;
        worst_err = err;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << a.size() << " values differ by more than " << allowed
                                       << " (tol " << tol << " x scale " << scale << "); worst [" << worst << "] "
                                       << a[worst] << " vs expected " << e[worst];
}

// Exact equality of the values (copies, masks, graph replays); NaN never equals.
inline ::testing::AssertionResult same_values(const Tensor& actual, const Tensor& expected) {
  return close_to(actual, expected, 0.0f);
}

}  // namespace steno::ops::cuda_testing
