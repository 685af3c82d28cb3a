#include "steno/core/tensor.h"

#include <gtest/gtest.h>

namespace steno {
namespace {

TEST(Tensor, ShapeAndAccess) {
  Tensor t = Tensor::zeros({2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_EQ(t.str(), "f32[2, 3, 4] on cpu");
  EXPECT_THROW(t.dim(3), Error);
  EXPECT_THROW(t.data<int64_t>(), Error);
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, ReshapeAndNarrowShareStorage) {
  Tensor t = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor r = t.reshape({-1});
  EXPECT_EQ(r.shape(), Shape({6}));
  Tensor rows = t.narrow0(1, 3);
  EXPECT_EQ(rows.shape(), Shape({2, 2}));
  EXPECT_EQ(rows.data<float>()[0], 2.0f);
  rows.data<float>()[0] = 42.0f;
  EXPECT_EQ(t.data<float>()[2], 42.0f);
  EXPECT_THROW(t.reshape({4, -1}), Error);
  EXPECT_THROW(t.narrow0(2, 4), Error);
}

TEST(Tensor, CloneIsDeep) {
  Tensor t = Tensor::from_vector({1, 2}, {2});
  Tensor c = t.clone();
  c.data<float>()[0] = 5;
  EXPECT_EQ(t.data<float>()[0], 1.0f);
}

TEST(Tensor, ConvertsBetweenFloatTypes) {
  Tensor t = Tensor::from_vector({1.0f, -0.5f, 3.14159265f}, {3});
  Tensor h = t.to(DType::kF16);
  EXPECT_EQ(h.dtype(), DType::kF16);
  EXPECT_THROW(h.data<float>(), Error);
  std::vector<float> back = h.to(DType::kF32).to_vector();
  EXPECT_FLOAT_EQ(back[0], 1.0f);
  EXPECT_FLOAT_EQ(back[1], -0.5f);
  EXPECT_NEAR(back[2], 3.14159265f, 2e-3f);
  std::vector<float> b = t.to(DType::kBF16).to_vector();
  EXPECT_FLOAT_EQ(b[2], 3.140625f);
}

TEST(Tensor, WrapKeepsOwnerAlive) {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{7, 8});
  Tensor t = Tensor::wrap(owner->data(), {2}, DType::kF32, Device::cpu(), owner);
  std::weak_ptr<std::vector<float>> weak = owner;
  owner.reset();
  EXPECT_FALSE(weak.expired());
  EXPECT_EQ(t.data<float>()[1], 8.0f);
  t = Tensor();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace steno
