#include "steno/core/dtype.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "steno/core/error.h"

namespace steno {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kI64: return 8;
    case DType::kU8: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kU8: return "u8";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "f32" || s == "fp32" || s == "float32") return DType::kF32;
  if (s == "f16" || s == "fp16" || s == "float16") return DType::kF16;
  if (s == "bf16" || s == "bfloat16") return DType::kBF16;
  if (s == "i32" || s == "int32") return DType::kI32;
  if (s == "i64" || s == "int64") return DType::kI64;
  if (s == "u8" || s == "uint8") return DType::kU8;
  fail(ErrorCode::kInvalidArgument, "unknown dtype '{}' (expected f32, f16, bf16, i32, i64 or u8)", name);
}

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: normalise the mantissa.
    int shift = 0;
    while ((mant & 0x400) == 0) { mant <<= 1; ++shift; }
    mant &= 0x3ff;
    bits = sign | (uint32_t(113 - shift) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);  // inf / NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds past 65504: infinity
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: shift the full mantissa into place with round-to-nearest-even.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - exp;  // 14 + (112 - exp)
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return sign | uint16_t(r);
  }
  uint32_t r = abs - 0x38000000u;  // rebias exponent 127 -> 15
  const uint32_t rem = r & 0x1fff;
  r >>= 13;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;  // carries into the exponent correctly
  return sign | uint16_t(r);
}

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fff + ((x >> 16) & 1);
  return uint16_t(x >> 16);
}

namespace {

#if defined(__x86_64__)
// CPUID leaf 1's F16C and AVX bits (and the OS saving AVX state: OSXSAVE), read directly: clang 14's
// __builtin_cpu_supports knows no "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_F16C) != 0 && (ecx & bit_AVX) != 0 && (ecx & bit_OSXSAVE) != 0;
}

// VCVTPH2PS widens exactly, subnormals, infinities and NaNs included (a signalling NaN comes out quiet).
__attribute__((target("avx,f16c"))) void f16_to_f32_f16c(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
#endif

}  // namespace

void widen_to_f32(const uint16_t* src, DType from, float* dst, int64_t n) {
  if (from == DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(uint32_t{src[i]} << 16);  // vectorises
    return;
  }
  STENO_CHECK(from == DType::kF16, "widen_to_f32: {} is not a 16-bit float type", dtype_name(from));
#if defined(__x86_64__)
  static const bool f16c = cpu_has_f16c();
  if (f16c) return f16_to_f32_f16c(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

}  // namespace steno
