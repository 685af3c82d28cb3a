// A model's 16-bit weights widened into one block: the same values as Tensor::to, f32 tensors passed through
// unchanged, every result aligned as the allocators align, alive after its sources are gone.
#include "steno/core/host_weights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace steno {
namespace {

TEST(WidenToF32InOneBlock, SameValuesAsToAndF32PassesThrough) {
  std::vector<Tensor> in;
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (int64_t n : {1, 3, 1000}) {  // odd sizes: the next tensor's start must still be aligned
      Tensor t = Tensor::empty({n}, dt);
      auto* bits = static_cast<uint16_t*>(t.raw());
      for (int64_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(0x3c00 + 37 * i);  // 1.0 and onwards
      in.push_back(t);
    }
  }
  const Tensor f32 = Tensor::from_vector({1.5f, -2.0f}, {2});
  in.push_back(f32);

  std::vector<Tensor> expected;
  for (const Tensor& t : in) expected.push_back(t.to(DType::kF32));
  std::vector<Tensor> out = widen_to_f32_in_one_block(in);
  in.clear();  // the results own their block

  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].dtype(), DType::kF32);
    ASSERT_EQ(out[i].shape(), expected[i].shape());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out[i].raw()) % 64, 0u) << i;
    // Bit for bit (the patterns run into infinities and NaNs, which must widen as Tensor::to widens them).
    EXPECT_EQ(std::memcmp(out[i].raw(), expected[i].raw(), out[i].nbytes()), 0) << i;
  }
  EXPECT_EQ(out.back().raw(), f32.raw());  // shared, not copied
}

TEST(WidenToF32InOneBlock, RefusesWhatIsNotAFloat) {
  EXPECT_THROW(widen_to_f32_in_one_block({Tensor::empty({4}, DType::kI32)}), Error);
  EXPECT_TRUE(widen_to_f32_in_one_block({}).empty());
}

}  // namespace
}  // namespace steno
