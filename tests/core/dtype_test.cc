#include "steno/core/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "steno/core/error.h"

namespace steno {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kF32), 4u);
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kI64), 8u);
  EXPECT_EQ(parse_dtype("F16"), DType::kF16);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("fp32"), DType::kF32);
  EXPECT_THROW(parse_dtype("f8"), Error);
}

TEST(DType, HalfKnownValues) {
  // Values from the IEEE 754 binary16 tables.
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65536.0f), 0x7c00);          // overflow -> inf
  EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001);     // smallest subnormal
  EXPECT_EQ(f32_to_f16(0.333333343f), 0x3555);
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // halfway, rounds to even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);  // halfway, rounds to even (up)
  EXPECT_FLOAT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_FLOAT_EQ(f16_to_f32(0x0001), 5.9604645e-8f);
  EXPECT_FLOAT_EQ(f16_to_f32(0x03ff), 6.097555e-5f);  // largest subnormal
  EXPECT_TRUE(std::isinf(f16_to_f32(0xfc00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DType, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf / NaN
    ASSERT_EQ(f32_to_f16(f16_to_f32(uint16_t(h))), h) << std::hex << h;
  }
}

TEST(DType, BFloat16) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(3.14159265f), 0x4049);
  EXPECT_FLOAT_EQ(bf16_to_f32(0x4049), 3.140625f);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (down).
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

// The bulk widening (F16C on this machine's CPUs) gives what the one-value functions give, for all 65,536 bit
// patterns of each format and at lengths that are not a multiple of its 8-value steps.
TEST(DType, WideningInBulkEqualsOneValueAtATime) {
  std::vector<uint16_t> all(0x10000 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);  // a permutation, and 5 more
  for (DType from : {DType::kF16, DType::kBF16}) {
    for (size_t n : {all.size(), size_t{7}, size_t{0}}) {
      std::vector<float> got(n + 1, 42.0f);
      widen_to_f32(all.data(), from, got.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float want = from == DType::kF16 ? f16_to_f32(all[i]) : bf16_to_f32(all[i]);
        if (std::isnan(want))
          ASSERT_TRUE(std::isnan(got[i])) << dtype_name(from) << " " << std::hex << all[i];
        else
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want)) << dtype_name(from) << " "
                                                                                   << std::hex << all[i];
      }
      EXPECT_EQ(got[n], 42.0f) << "wrote past the end";
    }
  }
  EXPECT_THROW(widen_to_f32(all.data(), DType::kF32, nullptr, 0), Error);
}

}  // namespace
}  // namespace steno
