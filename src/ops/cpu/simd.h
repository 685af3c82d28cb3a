// SIMD helpers for the CPU kernels. Private to steno_ops.
//
// No -march=native: the binaries run on another CPU. Hot loops are compiled three times through
// STENO_SIMD_CLONES (AVX-512, AVX2+FMA, baseline x86-64) and the loader picks one at run time. Inside them,
// plain loops are left to GCC's auto-vectoriser; loops with transcendental math or register blocking use the
// 8-float GCC vector type below (one AVX register, two SSE registers in the baseline clone), which vectorises the
// same way in every clone and is immune to the jump threading that can stop the auto-vectoriser.
#pragma once

#include <bit>
#include <cstdint>

// A build can define STENO_SIMD_CLONES empty (-DSTENO_SIMD_CLONES=) to test the baseline code alone.
#ifndef STENO_SIMD_CLONES
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define STENO_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STENO_SIMD_CLONES
#endif
#endif

namespace steno::ops::cpu {

// Unaligned, may alias float.
typedef float vf8 __attribute__((vector_size(32), aligned(4), __may_alias__));
typedef int32_t vi8 __attribute__((vector_size(32)));

// Only ever inlined into the kernels (steno_ops builds with -Wno-psabi: the baseline ABI for 32-byte vector
// arguments never applies).
[[gnu::always_inline]] inline vf8 load8(const float* p) { return *reinterpret_cast<const vf8*>(p); }
[[gnu::always_inline]] inline void store8(float* p, vf8 v) { *reinterpret_cast<vf8*>(p) = v; }
[[gnu::always_inline]] inline vf8 splat8(float x) { return vf8{} + x; }
[[gnu::always_inline]] inline vf8 max8(vf8 a, vf8 b) { return a > b ? a : b; }
[[gnu::always_inline]] inline float hsum8(vf8 v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}
[[gnu::always_inline]] inline float hmax8(vf8 v) {
  float m = v[0];
  for (int i = 1; i < 8; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// e^x within 2 ulp of expf for x in [-87.3, 88.7] (Cephes' polynomial); clamped outside, so e^-inf ~ 1e-38
// rather than 0 (callers that need an exact 0 mask explicitly). Scalar and vector versions compute the same.
constexpr float kExpLo = -87.33654f, kExpHi = 88.72283f;

[[gnu::always_inline]] inline float fast_exp(float x) {
  x = x < kExpLo ? kExpLo : x;
  x = x > kExpHi ? kExpHi : x;
  // n = round(x / ln 2) via the 1.5 * 2^23 trick; its integer value sits in the low mantissa bits of t.
  const float t = x * 1.44269504088896341f + 12582912.0f;
  const float n = t - 12582912.0f;
  const int32_t ni = std::bit_cast<int32_t>(t) - 0x4B400000;
  float r = x - n * 0.693359375f;  // ln 2 split in two for an exact reduction
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // n in [-126, 128]: 2^n built in two halves so that n = 128 does not overflow the exponent field.
  const int32_t n1 = ni >> 1;
  return p * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((ni - n1 + 127) << 23);
}

[[gnu::always_inline]] inline vf8 exp8(vf8 x) {
  x = x < kExpLo ? splat8(kExpLo) : x;
  x = x > kExpHi ? splat8(kExpHi) : x;
  const vf8 t = x * 1.44269504088896341f + 12582912.0f;
  const vf8 n = t - 12582912.0f;
  const vi8 ni = reinterpret_cast<vi8>(t) - 0x4B400000;
  vf8 r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  vf8 p = splat8(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const vi8 n1 = ni >> 1;
  return p * reinterpret_cast<vf8>((n1 + 127) << 23) * reinterpret_cast<vf8>((ni - n1 + 127) << 23);
}

[[gnu::always_inline]] inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }
[[gnu::always_inline]] inline vf8 sigmoid8(vf8 x) { return 1.0f / (1.0f + exp8(-x)); }

// tanh(x) = 1 - 2 / (e^2x + 1): absolute error ~1e-7 everywhere, exact limits +-1.
[[gnu::always_inline]] inline float fast_tanh(float x) { return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f); }
[[gnu::always_inline]] inline vf8 tanh8(vf8 x) { return 1.0f - 2.0f / (exp8(2.0f * x) + 1.0f); }

// Row reductions with independent vector accumulators (GCC does not reassociate float sums by itself, no
// -ffast-math); they differ from a sequential sum only by rounding.
[[gnu::always_inline]] inline float row_max(const float* x, int64_t n) {
  int64_t i = 0;
  float m = -3.4e38f;
  if (n >= 16) {
    vf8 a = load8(x), b = load8(x + 8);
    for (i = 16; i + 16 <= n; i += 16) {
      a = max8(a, load8(x + i));
      b = max8(b, load8(x + i + 8));
    }
    m = hmax8(max8(a, b));
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

[[gnu::always_inline]] inline float row_sum(const float* x, int64_t n) {
  vf8 a = {}, b = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a += load8(x + i);
    b += load8(x + i + 8);
  }
  float s = hsum8(a + b);
  for (; i < n; ++i) s += x[i];
  return s;
}

// sum of (x - c)^2
[[gnu::always_inline]] inline float row_sum_sq_dev(const float* x, int64_t n, float c) {
  vf8 a = {}, b = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const vf8 d0 = load8(x + i) - c, d1 = load8(x + i + 8) - c;
    a += d0 * d0;
    b += d1 * d1;
  }
  float s = hsum8(a + b);
  for (; i < n; ++i) s += (x[i] - c) * (x[i] - c);
  return s;
}

// y = e^(x - m); returns the sum of y. y may alias x.
[[gnu::always_inline]] inline float row_exp_sum(const float* x, float* y, int64_t n, float m) {
  vf8 a = {}, b = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const vf8 e0 = exp8(load8(x + i) - m), e1 = exp8(load8(x + i + 8) - m);
    store8(y + i, e0);
    store8(y + i + 8, e1);
    a += e0;
    b += e1;
  }
  float s = hsum8(a + b);
  for (; i < n; ++i) {
    const float e = fast_exp(x[i] - m);
    y[i] = e;
    s += e;
  }
  return s;
}

}  // namespace steno::ops::cpu
