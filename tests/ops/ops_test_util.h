// Helpers shared by the op tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "steno/core/tensor.h"
#include "steno/ops/context.h"

namespace steno::ops::testing {

// v[i] = ((i*37 + seed*11) % 41 - 20) * scale: exact in fp32, and the same as pat() in reference_values.py,
// which produced the literal expected values in these tests.
inline std::vector<float> pat(int64_t n, int seed, float scale = 1.0f / 16) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + seed * 11) % 41 - 20) * scale;
  return v;
}

inline Tensor pat_tensor(const Shape& shape, int seed, float scale = 1.0f / 16) {
  return Tensor::from_vector(pat(shape_numel(shape), seed, scale), shape);
}

inline std::vector<float> random_values(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

inline Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor::from_vector(random_values(shape_numel(shape), seed, lo, hi), shape);
}

// Tensor filled with NaN: outputs must be fully written.
inline Tensor nan_tensor(const Shape& shape) {
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(shape_numel(shape)), NAN), shape);
}

// |actual - expected| <= atol + rtol * |expected| elementwise, reporting the first few failures.
inline ::testing::AssertionResult all_close(const std::vector<float>& actual, const std::vector<float>& expected,
                                            float atol = 1e-5f, float rtol = 1e-5f) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != expected " << expected.size();
  int bad = 0;
  std::string msg;
  for (size_t i = 0; i < actual.size(); ++i) {
    const float tol = atol + rtol * std::fabs(expected[i]);
    if (!(std::fabs(actual[i] - expected[i]) <= tol)) {
      if (++bad <= 8)
        msg += "\n  [" + std::to_string(i) + "] " + std::to_string(actual[i]) + " vs expected " +
               std::to_string(expected[i]);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " values differ:" << msg;
}

inline ::testing::AssertionResult all_close(const Tensor& actual, const std::vector<float>& expected,
                                            float atol = 1e-5f, float rtol = 1e-5f) {
  return all_close(actual.to_vector(), expected, atol, rtol);
}

inline std::string backend_param_name(const ::testing::TestParamInfo<GemmBackend>& info) {
  return gemm_backend_name(info.param);
}

}  // namespace steno::ops::testing
