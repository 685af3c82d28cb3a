// copy_frames on the CPU: the time-axis pad and trim the CUDA encoder uses, against values written out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "steno/core/error.h"
#include "steno/ops/copy.h"

namespace steno::ops {
namespace {

TEST(CopyFrames, PadsWithZerosAndTrims) {
  Context ctx = Context::cpu(1);
  // [2, 2, 3]: item b, frame t, channel c = 100b + 10t + c + 1.
  const Tensor x = Tensor::from_vector({1, 2, 3, 11, 12, 13, 101, 102, 103, 111, 112, 113}, {2, 2, 3});
  Tensor padded = Tensor::from_vector(std::vector<float>(18, -7.0f), {2, 3, 3});
  copy_frames(ctx, x, padded);
  EXPECT_EQ(padded.to_vector(),
            (std::vector<float>{1, 2, 3, 11, 12, 13, 0, 0, 0, 101, 102, 103, 111, 112, 113, 0, 0, 0}));
  Tensor trimmed = Tensor::from_vector(std::vector<float>(6, -7.0f), {2, 1, 3});
  copy_frames(ctx, x, trimmed);
  EXPECT_EQ(trimmed.to_vector(), (std::vector<float>{1, 2, 3, 101, 102, 103}));
}

TEST(CopyFrames, RejectsMismatchedShapes) {
  Context ctx = Context::cpu(1);
  const Tensor x = Tensor::empty({2, 2, 3});
  Tensor wrong_channels = Tensor::empty({2, 2, 4});
  Tensor wrong_batch = Tensor::empty({1, 2, 3});
  EXPECT_THROW(copy_frames(ctx, x, wrong_channels), Error);
  EXPECT_THROW(copy_frames(ctx, x, wrong_batch), Error);
}

}  // namespace
}  // namespace steno::ops
